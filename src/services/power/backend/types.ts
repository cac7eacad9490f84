// What the power service needs from the system: the two actions and a system-wide
// inhibitor held while wake locks exist.
export interface PowerBackend {
  readonly kind: "logind" | "syscall" | "virtual";
  powerOff(): Promise<void>;
  reboot(): Promise<void>;
  /** Takes the system's inhibitor for wake locks; the returned function releases it. */
  inhibit(why: string): Promise<() => void>;
  close(): void;
}
