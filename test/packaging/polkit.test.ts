// The layer's polkit rule (files/polkit/50-devservices.rules): evaluated as polkit's
// JavaScript engine does (a rule function registered with polkit.addRule, called with
// an action and a subject), it grants the service user the two host-name actions of
// systemd-hostnamed that nettools uses and the logind actions power uses (an inhibitor,
// power off and reboot), and nothing else to anyone.
import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { LAYER_FILES, RECIPE } from "./layer";

const SOURCE = readFileSync(join(LAYER_FILES, "polkit/50-devservices.rules"), "utf8");
const Result = { YES: "yes", NO: "no", AUTH_ADMIN: "auth_admin", NOT_HANDLED: null };

function decide(actionId: string, user: string): unknown {
  const rules: ((a: object, s: object) => unknown)[] = [];
  new Function("polkit", SOURCE)({ Result, addRule: (f: (a: object, s: object) => unknown) => rules.push(f) });
  expect(rules).toHaveLength(1);
  return rules[0]!({ id: actionId }, { user, local: true, active: false, groups: [] });
}

test("the service user may set the transient and the static host name", () => {
  expect(decide("org.freedesktop.hostname1.set-hostname", "devservices")).toBe("yes");
  expect(decide("org.freedesktop.hostname1.set-static-hostname", "devservices")).toBe("yes");
});

test("power's logind actions: the inhibitor it holds for wake locks, power off and reboot", () => {
  for (const what of ["shutdown", "sleep", "idle"]) expect(decide(`org.freedesktop.login1.inhibit-block-${what}`, "devservices")).toBe("yes");
  for (const a of ["power-off", "power-off-multiple-sessions", "reboot", "reboot-multiple-sessions"]) expect(decide(`org.freedesktop.login1.${a}`, "devservices")).toBe("yes");
});

test("nothing else is granted: other actions, other users", () => {
  for (const action of [
    "org.freedesktop.hostname1.set-machine-info",
    "org.freedesktop.login1.power-off-ignore-inhibit",
    "org.freedesktop.login1.reboot-ignore-inhibit",
    "org.freedesktop.login1.inhibit-delay-shutdown",
    "org.freedesktop.login1.suspend",
    "org.freedesktop.timedate1.set-time",
  ]) {
    expect(decide(action, "devservices")).toBeNull();
  }
  for (const user of ["root", "nobody", "devservices-net", "app"]) {
    expect(decide("org.freedesktop.hostname1.set-static-hostname", user)).toBeNull();
    expect(decide("org.freedesktop.login1.power-off", user)).toBeNull();
  }
});

test("the recipe installs it where polkit reads rules and packages it", () => {
  const recipe = readFileSync(RECIPE, "utf8");
  expect(recipe).toContain("file://polkit/50-devservices.rules");
  expect(recipe).toContain("install -m 0644 ${WORKDIR}/polkit/50-devservices.rules ${D}${datadir}/polkit-1/rules.d/");
  expect(recipe).toMatch(/FILES:\$\{PN\} \+= "[^"]*\$\{datadir\}\/polkit-1\/rules\.d/);
});
