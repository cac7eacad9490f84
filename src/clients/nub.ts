// The nub: the test automation agent an application links in. It subscribes to
// commands for its stage, answers getItems and commandsBatch from the item tree the
// application provides, and reports events.
//
//   const nub = await Nub.attach(client, { appInfo: { id: "com.example.app" }, name: "main", scene: "home", type: "qml" },
//                                { items: () => myItemTree() });
//   await nub.notifyEvent("stageActivate");
import type { BusClient, ClientSubscription } from "../bus/client";
import type { Json } from "../core/errors";
import { E } from "../services/testautomation/errors";

const SERVICE = "com.vendor.service.testautomation";

export interface Item {
  objectIdHierarchy: string;
  classHierarchy: string;
  class_name: string;
  mapped_lefttop_x: number;
  mapped_lefttop_y: number;
  window?: Json & { isActive?: boolean };
  object_name: string;
  height: number;
  width: number;
  metaProperties: Json;
  id: string;
  devicePixelRatio: number;
  global_x: number;
  global_y: number;
  hierarchy: string;
  isVisible: boolean;
}

export interface Filter {
  className?: string;
  objectName?: string;
  visible?: boolean;
  onlyActiveWindow?: boolean;
  hierarchy?: string;
}

export interface StageInfo {
  appInfo: { id: string; resolution?: { width: number; height: number } };
  name: string;
  scene: string;
  type: string;
  baseURI?: string;
  width?: number;
  height?: number;
  version?: string;
}

export interface NubHandlers {
  /** The application's current items, in tree order. */
  items(): Item[] | Promise<Item[]>;
  /** Further commands the application understands, by name. */
  commands?: Record<string, (entry: Json) => Json | Promise<Json>>;
  /** Broadcast commands (broadcastCommand). */
  onBroadcast?(command: string): void;
}

/** Spec "Filter": className by leading characters, hierarchy by trailing object names. */
export function matchesFilter(item: Item, f: Filter | undefined): boolean {
  if (!f) return true;
  if (f.className !== undefined && !item.class_name.startsWith(f.className)) return false;
  if (f.objectName !== undefined && item.object_name !== f.objectName) return false;
  if (f.visible !== undefined && item.isVisible !== f.visible) return false;
  if (f.onlyActiveWindow && item.window?.isActive !== true) return false;
  if (f.hierarchy !== undefined) {
    const want = f.hierarchy.trim().split(/\s+/).filter(Boolean);
    const have = item.hierarchy.trim().split(/\s+/);
    if (want.length > have.length) return false;
    const tail = have.slice(have.length - want.length);
    if (!want.every((w, i) => w === tail[i])) return false;
  }
  return true;
}

export class Nub {
  private constructor(
    private client: BusClient,
    readonly stageId: number,
    private sub: ClientSubscription,
  ) {}

  static async attach(client: BusClient, info: StageInfo, handlers: NubHandlers): Promise<Nub> {
    let nub: Nub | undefined;
    const backlog: Json[] = [];
    const sub = await client.subscribe(SERVICE, "subscribeToCommands", { ...info }, (m) => {
      if (nub) void nub.onCommand(m, handlers);
      else backlog.push(m);
    });
    if (sub.first.returnValue !== true) {
      throw new Error(`subscribeToCommands failed: ${sub.first.errorText ?? JSON.stringify(sub.first)}`);
    }
    nub = new Nub(client, sub.first.stageId as number, sub);
    for (const m of backlog) void nub.onCommand(m, handlers);
    return nub;
  }

  get ended(): Promise<void> {
    return this.sub.ended;
  }

  /** Runs one command as the nub protocol defines it; returns its result object. */
  static async execute(command: unknown, entry: Json, handlers: NubHandlers): Promise<Json> {
    if (typeof command !== "string") return { returnValue: false, errorCode: E.noCommandName.code, errorText: E.noCommandName.text };
    if (command === "getItems") {
      const all = await handlers.items();
      return { returnValue: true, result: all.filter((i) => matchesFilter(i, entry.filter as Filter | undefined)) };
    }
    const custom = handlers.commands?.[command];
    if (custom) return custom(entry);
    const row = E.unknownCommand(command);
    return { returnValue: false, errorCode: row.code, errorText: row.text };
  }

  private async onCommand(m: Json, handlers: NubHandlers) {
    if (m.broadcast === true) {
      handlers.onBroadcast?.(String(m.command ?? ""));
      return;
    }
    const teCommandId = m.teCommandId as number;
    let queue: Json[];
    if (m.command === "commandsBatch") {
      queue = [];
      for (const entry of (m.queue as Json[]) ?? []) queue.push(await Nub.execute(entry?.command, entry ?? {}, handlers));
    } else {
      queue = [await Nub.execute(m.command, m, handlers)];
    }
    await this.client.call(SERVICE, "replyToCommand", { stageId: this.stageId, teCommandId, command: String(m.command), queue });
  }

  notifyEvent(type: string): Promise<Json> {
    return this.client.call(SERVICE, "notifyEvent", { stageId: this.stageId, type });
  }

  /** Ends the subscription; the service removes the stage. */
  detach(): Promise<void> {
    return this.sub.cancel();
  }
}
