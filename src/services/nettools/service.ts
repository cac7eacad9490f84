// Network tools service (spec part 1, com.vendor.service.nettools): ping, ping6,
// arping, resolvehostname, checkhttp, gethostname (subscribable), sethostname,
// createVlan and deleteVlan, on the host's own network stack on every board.
// Nothing here blocks the event loop: ICMP, ARP and rtnetlink sockets are read on the
// event source, names are resolved and TCP connected by Node's asynchronous APIs,
// and DHCP clients are started as child processes from an argument array (no shell).
// Decisions: docs/decisions/nettools.md.
import { answer, ok, raise, ServiceError, type ErrorRow, type Json } from "../../core/errors";
import { group } from "../../core/access";
import { defineService, type ResponseOf } from "../../core/service";
import * as nl from "../../ffi/netlink";
import { EEXIST, ENODEV } from "../../ffi/errno";
import { api } from "./schemas";
import { E } from "./errors";
import { loadNettoolsOptions } from "./config";
import { chooseSetter, followHostname, getHostname, setHostnameViaHostnamed, setSystemHostname, validHostname } from "./hostname";
import { arping, connectHttp, followsHostRule, isIPv4, pingHost, resolveHost } from "./net";
import { checkCreate, checkDelete, DhcpClients, findDhcpClient, findVlan } from "./vlan";

type Api = typeof api;
type Res<M extends keyof Api> = ResponseOf<Api[M]>;

const HOSTNAME = "hostname";
const VLAN_METHODS = new Set(["createVlan", "deleteVlan"]);

/** checkhttp's error field is spelled `errorrText` (spec). */
const httpAnswer = (row: ErrorRow): Json => answer(row, { textField: "errorrText" });
/** A row as the method writes it. */
const answerFor = (method: string, row: ErrorRow): Json => (method === "checkhttp" ? httpAnswer(row) : answer(row));

/** A refused caller: the method's own failure row (sethostname's is what EPERM from the kernel gives), with the reason. */
function deniedAnswer(method: string): Json {
  const reason = `Permission denied: ${method} is for root and the service's access group`;
  if (method === "sethostname") return { ...answer(E.sethostnameFailed), reason };
  return { ...answer(E.general), reason };
}

export default defineService({
  spec: {
    name: "nettools",
    busName: "com.vendor.service.nettools",
    description:
      "Network tools: ARP resolution, HTTP reachability, VLAN create/delete, host name get/set (with change subscriptions), IPv4 and IPv6 ping and DNS resolution, on the host's network stack.",
    api,
    // A field with a row of its own (schemas.ts: VLAN fields, checkhttp's hostUrl,
    // resolvehostname's hostname) gets it when present; anything else is the schema row.
    invalid: { default: E.schema },
    answer: answerFor,
    badRequest: (method) => answerFor(method, E.schema),
    internalError: (method) => {
      if (method === "checkhttp") return httpAnswer(E.httpError);
      if (method === "sethostname") return answer(E.sethostnameFailed);
      if (VLAN_METHODS.has(method)) return answer(E.general);
      return answer(E.unknown);
    },
    denied: (method) => deniedAnswer(method),
  },

  create(ctx) {
    const loaded = loadNettoolsOptions(ctx.config);
    for (const problem of loaded.problems) ctx.log.warn({ file: loaded.file, problem }, "nettools configuration: line ignored");
    const o = loaded.config;
    const dhcp = new DhcpClients(ctx.stateDir, ctx.log);
    const setter = chooseSetter(o.hostnameSetter);
    ctx.log.info({ setter, configured: o.hostnameSetter }, "sethostname: the host name is set through " + (setter === "syscall" ? "sethostname(2) and the hostname file" : "systemd-hostnamed"));
    const failed = (what: string) => (e: unknown) => ctx.log.warn({ err: e }, `${what} failed`);

    // gethostname subscribers: every change of the kernel's name, whoever made it.
    let published: string | undefined;
    try {
      published = getHostname();
    } catch {}
    const publish = (name: string) => {
      if (name === published) return;
      published = name;
      ctx.topics.publish(HOSTNAME, { returnValue: true, hostname: name });
    };
    const unfollow = followHostname(publish, { onError: failed("host name watch") });

    const pingHandler = (family: 4 | 6) => async (req: { hostname: string; ifName?: string }): Promise<Res<"ping">> => {
      const r = await pingHost(family, req.hostname, { ifName: req.ifName, timeoutMs: o.pingTimeoutMs, kind: o.icmpSocket });
      if (r.ok) {
        const out: Res<"ping"> = { returnValue: true, ipaddress: r.ipaddress, time: r.time, hostname: req.hostname, bytes: r.bytes };
        if (r.ttl !== undefined) out.ttl = r.ttl;
        return out;
      }
      raise(r.why === "unknown-host" ? E.pingUnknownHost : r.why === "unreachable" ? E.pingUnreachable : E.pingPoorNetwork);
    };

    return {
      access: {
        sethostname: group(o.accessGroup),
        createVlan: group(o.accessGroup),
        deleteVlan: group(o.accessGroup),
      },

      handlers: {
        async arping(req) {
          // ARP asks for IPv4 addresses only: an IPv6 or unparsable address is not on a network ARP reaches.
          if (!isIPv4(req.ipAddress)) raise(E.arpUnreachable);
          const r = await arping(req.ifName, req.ipAddress, o.arpTimeoutMs);
          if (r.ok) return ok({ foundMacAddress: r.mac });
          raise(r.why === "unreachable" ? E.arpUnreachable : E.arpNotFound);
        },

        async checkhttp(req) {
          if (!followsHostRule(req.hostUrl)) return { returnValue: false, ...httpAnswer(E.invalidHostUrl) };
          const r = await connectHttp(req.hostUrl, o.httpTimeoutMs);
          if (r.ok) return ok();
          ctx.log.info({ hostUrl: req.hostUrl, reason: r.reason }, "checkhttp: no connection");
          return { returnValue: false, ...httpAnswer(E.httpError) };
        },

        async createVlan(req) {
          const c = checkCreate(req);
          if (!c.ok) raise(c.row);
          const v = c.value;
          const client = v.method === "dhcp" ? findDhcpClient(o.dhcpClient, o.searchPath) : undefined;
          if (client === null) {
            ctx.log.error({ dhcpClient: o.dhcpClient }, "createVlan: method dhcp, but no DHCP client is installed (udhcpc or dhclient)");
            raise(E.general, { reason: `no DHCP client installed (${o.dhcpClient === "auto" ? "udhcpc or dhclient" : o.dhcpClient})` });
          }
          const sock = new nl.RtNetlink();
          const name = `${v.ifName}.${v.index}`;
          let created = false;
          try {
            const parent = await nl.getLink(v.ifName, sock);
            // Only Ethernet-like links carry 802.1Q tags (not loopback, tunnels, or a VLAN of a VLAN here).
            if (!parent || parent.type !== 1 /* ARPHRD_ETHER */ || parent.kind === "vlan") raise(E.invalidInterface);
            if ((await findVlan(parent.index, v.index, sock)) || (await nl.linkExists(name, sock))) raise(E.vlanExists);
            try {
              await nl.createVlan(parent.index, name, v.index, {}, sock);
            } catch (e) {
              if ((e as { errno?: number }).errno === EEXIST) raise(E.vlanExists);
              throw e;
            }
            created = true;
            await nl.setLinkUp(name, true, sock);
            if (v.manual) {
              await nl.addAddress(name, { address: v.manual.address, prefixLen: v.manual.prefixLen, broadcast: v.manual.broadcast }, sock);
              if (v.manual.gateway) await nl.addRoute({ gateway: v.manual.gateway, oif: name, priority: o.gatewayMetric }, sock);
            }
            if (client) await dhcp.start(client, name, o.udhcpcScript);
            ctx.log.info({ vlan: name, method: v.method ?? "none", manual: v.manual }, "VLAN created");
            return ok();
          } catch (e) {
            // Nothing is left half made: the link goes, and its address and route with it.
            if (created) await nl.deleteLink(name, sock).catch(failed(`removing ${name} after a failed createVlan`));
            if (e instanceof ServiceError) throw e;
            ctx.log.error({ err: e, vlan: name }, "createVlan failed");
            raise(E.general);
          } finally {
            sock.close();
          }
        },

        async deleteVlan(req) {
          const c = checkDelete(req);
          if (!c.ok) raise(c.row);
          const { index, ifName } = c.value;
          const sock = new nl.RtNetlink();
          try {
            const parent = await nl.getLink(ifName, sock);
            if (!parent) raise(E.invalidInterface);
            const vlan = await findVlan(parent.index, index, sock);
            if (!vlan) raise(E.vlanMissing);
            dhcp.stop(vlan.name);
            try {
              await nl.deleteLink(vlan.index, sock);
            } catch (e) {
              if ((e as { errno?: number }).errno === ENODEV /* gone meanwhile */) raise(E.vlanMissing);
              ctx.log.error({ err: e, vlan: vlan.name }, "deleteVlan failed");
              raise(E.general);
            }
            ctx.log.info({ vlan: vlan.name }, "VLAN deleted");
            return ok();
          } finally {
            sock.close();
          }
        },

        gethostname(_req, call) {
          let hostname: string;
          try {
            hostname = getHostname();
          } catch (e) {
            ctx.log.error({ err: e }, "gethostname failed");
            raise(E.gethostnameFailed);
          }
          if (call.subscription) {
            ctx.topics.add(HOSTNAME, call.subscription, { shared: true }); // the one host name, any caller: shared
            return ok({ hostname, subscribed: true });
          }
          return ok({ hostname });
        },

        ping: pingHandler(4),
        ping6: pingHandler(6),

        async resolvehostname(req) {
          if (!followsHostRule(req.hostname)) raise(E.invalidHostname);
          const r = await resolveHost(req.hostname);
          // Both names: the spec's table says resolvedIpAddress, its sample resolvedIpAddresses.
          if (r.ok) return ok({ resolvedIpAddress: r.addresses, resolvedIpAddresses: [...r.addresses] });
          if (r.why === "unknown") {
            ctx.log.error({ err: r.error, hostname: req.hostname }, "resolvehostname failed");
            raise(E.unknown);
          }
          raise(E.resolveFailed);
        },

        async sethostname(req) {
          if (!validHostname(req.hostname)) raise(E.sethostnameFailed);
          const onError = (what: string, e: unknown) => ctx.log.error({ err: e, hostname: req.hostname }, `sethostname: ${what} failed`);
          const r = setter === "syscall"
            ? await setSystemHostname(req.hostname, o.hostnameFile, onError)
            : await setHostnameViaHostnamed(req.hostname, (m) => ctx.peers.callRaw(m, { timeoutMs: 10000 }), onError);
          if (r === "syscall") raise(E.sethostnameFailed);
          if (r === "file") raise(E.hostnameFile);
          ctx.log.info({ hostname: req.hostname, setter, file: setter === "syscall" ? o.hostnameFile : undefined }, "host name set");
          publish(req.hostname);
          return ok();
        },
      },

      stop() {
        unfollow();
        ctx.topics.end(HOSTNAME);
      },
    };
  },
});
