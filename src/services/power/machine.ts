// The power state machine of a board: the recipe's top-level `power2` section
// (format: docs/power-states.md). Parsed and checked once at start.
import { z } from "zod";
import { parseRecorded } from "../../core/config";

export const EVENTS = ["shutdown", "reboot"] as const;
export type PowerEvent = (typeof EVENTS)[number];
export type PowerAction = "powerOff" | "reboot";

/** The board recipe's power2 section, built when a board's machine is parsed. */
export const machineSchema = () => {
  const stateName = z.string().min(1);
  return z.object({
    initialState: stateName,
    states: z.record(
      stateName,
      z.object({
        /** Reaching the state powers the device off or reboots it. */
        action: z.enum(["powerOff", "reboot"]).optional(),
        description: z.string().optional(),
      }),
    ),
    transitions: z.array(
      z.object({
        from: stateName,
        /** The method that fires it; absent: taken as soon as `from` is entered. */
        event: z.enum(EVENTS).optional(),
        to: stateName,
        /** Clients registered for `from` vote before it is taken. */
        ask: z.boolean().default(false),
      }),
    ),
    /** The garage variant of shutdown (spec, power `shutdown`). */
    garage: z
      .object({
        from: stateName,
        to: stateName,
        ask: z.boolean().default(false),
      })
      .optional(),
  });
};

export type MachineSpec = z.infer<ReturnType<typeof machineSchema>>;
export type Transition = MachineSpec["transitions"][number];

export class PowerMachine {
  private constructor(readonly spec: MachineSpec) {}

  /** Parses and checks a recipe section; throws with every problem found. */
  static parse(data: unknown, origin = "board recipe"): PowerMachine {
    const r = parseRecorded("power2 state machine", machineSchema, data);
    if (!r.success) throw new Error(`${origin}: power2 state machine is invalid: ${z.prettifyError(r.error)}`);
    const m = r.data;
    const problems: string[] = [];
    const known = (s: string, where: string) => {
      if (!(s in m.states)) problems.push(`${where} names unknown state ${s}`);
    };
    known(m.initialState, "initialState");
    const seen = new Set<string>();
    for (const [i, t] of m.transitions.entries()) {
      known(t.from, `transitions[${i}].from`);
      known(t.to, `transitions[${i}].to`);
      const key = `${t.from}/${t.event ?? "(automatic)"}`;
      if (seen.has(key)) problems.push(`transitions[${i}]: a second ${t.event ?? "automatic"} transition from ${t.from}`);
      seen.add(key);
      if (!t.event && m.states[t.from]?.action) problems.push(`transitions[${i}]: ${t.from} has an action and cannot continue automatically`);
      if (t.from === t.to) problems.push(`transitions[${i}]: ${t.from} to itself`);
    }
    if (m.garage) {
      known(m.garage.from, "garage.from");
      known(m.garage.to, "garage.to");
    }
    // Automatic transitions must end somewhere.
    const machine = new PowerMachine(m);
    for (const s of Object.keys(m.states)) {
      const visited = new Set([s]);
      for (let t = machine.automatic(s); t; t = machine.automatic(t.to)) {
        if (visited.has(t.to)) {
          problems.push(`automatic transitions loop through ${s}`);
          break;
        }
        visited.add(t.to);
      }
    }
    if (problems.length) throw new Error(`${origin}: power2 state machine is invalid:\n  ${problems.join("\n  ")}`);
    return machine;
  }

  get initialState(): string {
    return this.spec.initialState;
  }

  has(state: string): boolean {
    return Object.hasOwn(this.spec.states, state);
  }

  action(state: string): PowerAction | undefined {
    return this.spec.states[state]?.action;
  }

  /** The transition an event fires from a state. */
  on(state: string, event: PowerEvent): Transition | undefined {
    return this.spec.transitions.find((t) => t.from === state && t.event === event);
  }

  /** The transition taken as soon as a state is entered. */
  automatic(state: string): Transition | undefined {
    return this.spec.transitions.find((t) => t.from === state && t.event === undefined);
  }

  /** The garage transition, as a transition, when the board has the option and the state is its source. */
  garageFrom(state: string): Transition | undefined {
    const g = this.spec.garage;
    return g && g.from === state ? { from: g.from, to: g.to, ask: g.ask, event: "shutdown" } : undefined;
  }

  states(): string[] {
    return Object.keys(this.spec.states);
  }
}
