// Runs I2C and SPI transfers off the main thread (docs/architecture.md: "work that
// the kernel does synchronously and that can take milliseconds runs off the main
// thread"). One worker thread (transfer-worker.ts) takes jobs in order and answers
// each with a message; the main thread awaits a promise. Jobs are serialized: the
// buses' transfers queue behind each other (docs/decisions/peripheralmanager.md).
// The worker holds the process alive only while a job is in flight.
import { SysError } from "../../../ffi/libc";
import { workerUrl } from "../../../ffi/worker";

type Fd = { id: number; fd: number };
export type Job = Fd &
  (
    | { op: "i2c.read"; address: number; size: number }
    | { op: "i2c.write"; address: number; data: Uint8Array }
    | { op: "i2c.writeRead"; address: number; data: Uint8Array; size: number }
    | { op: "smbus.receiveBytes"; size: number }
    | { op: "smbus.sendByte"; value: number }
    | { op: "smbus.readByteData"; reg: number }
    | { op: "smbus.readWordData"; reg: number }
    | { op: "smbus.writeByteData"; reg: number; value: number }
    | { op: "smbus.writeWordData"; reg: number; value: number }
    | { op: "smbus.readI2cBlock"; reg: number; size: number }
    | { op: "smbus.writeI2cBlock"; reg: number; data: Uint8Array }
    | { op: "spi.transfer"; data: Uint8Array; read: boolean; delayUsecs: number }
  );
/** A job without its id, as callers give it. */
export type JobSpec = Job extends infer J ? (J extends Job ? Omit<J, "id"> : never) : never;

export interface JobResult {
  id: number;
  value?: number | Uint8Array | null;
  error?: { message: string; errno?: number; call?: string };
}


export class Offload {
  private worker?: Worker;
  private nextId = 1;
  private pending = new Map<number, { resolve: (v: any) => void; reject: (e: Error) => void }>();
  /** Jobs run and the longest one's duration, for logs and tests. */
  readonly stats = { jobs: 0, maxMs: 0 };

  run<T = number | Uint8Array | null>(job: JobSpec): Promise<T> {
    const w = this.start();
    const id = this.nextId++;
    const started = performance.now();
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, {
        resolve: (v) => {
          this.finished(started);
          resolve(v);
        },
        reject: (e) => {
          this.finished(started);
          reject(e);
        },
      });
      if (this.pending.size === 1) w.ref();
      w.postMessage({ ...job, id });
    });
  }

  private finished(started: number) {
    this.stats.jobs++;
    this.stats.maxMs = Math.max(this.stats.maxMs, performance.now() - started);
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const w = new Worker(workerUrl("services/peripheralmanager/backend/transfer-worker.ts"));
    w.unref();
    w.onmessage = (ev: MessageEvent<JobResult>) => {
      const r = ev.data;
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (this.pending.size === 0) w.unref();
      if (r.error) p.reject(r.error.errno !== undefined ? new SysError(r.error.call ?? "transfer", r.error.errno) : new Error(r.error.message));
      else p.resolve(r.value instanceof Uint8Array ? Buffer.from(r.value.buffer, r.value.byteOffset, r.value.byteLength) : r.value);
    };
    w.onerror = (ev) => {
      const err = new Error(`transfer thread failed: ${(ev as ErrorEvent).message ?? ev}`);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.worker = undefined;
      w.terminate();
    };
    this.worker = w;
    return w;
  }

  close(): void {
    const err = new Error("peripheral manager stopping");
    for (const p of this.pending.values()) p.reject(err);
    this.pending.clear();
    this.worker?.terminate();
    this.worker = undefined;
  }
}
