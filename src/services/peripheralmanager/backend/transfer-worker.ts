// The transfer thread of the peripheral manager (offload.ts): I2C and SPI transfers
// are ioctls that return when the bus transaction is done, so they run here and the
// main thread only waits on a message. fds are the process's: the main thread opens
// them, this thread only calls ioctls on them.
// Built into the binary as an entry point of its own (scripts/build.ts).
import * as i2c from "../../../ffi/i2c";
import * as spi from "../../../ffi/spi";
import { SysError } from "../../../ffi/libc";
import type { Job, JobResult } from "./offload";

declare const self: Worker;

function run(job: Job): number | Uint8Array | null {
  const { fd } = job;
  switch (job.op) {
    case "i2c.read":
      return i2c.transfer(fd, [{ addr: job.address, flags: i2c.I2C_M_RD, length: job.size }])[0]!;
    case "i2c.write":
      i2c.transfer(fd, [{ addr: job.address, data: job.data }]);
      return null;
    case "i2c.writeRead":
      return i2c.transfer(fd, [{ addr: job.address, data: job.data }, { addr: job.address, flags: i2c.I2C_M_RD, length: job.size }])[0]!;
    case "smbus.receiveBytes": {
      const out = new Uint8Array(job.size);
      for (let i = 0; i < job.size; i++) out[i] = i2c.readByte(fd);
      return out;
    }
    case "smbus.sendByte":
      i2c.writeByte(fd, job.value);
      return null;
    case "smbus.readByteData":
      return i2c.readByteData(fd, job.reg);
    case "smbus.readWordData":
      return i2c.readWordData(fd, job.reg);
    case "smbus.writeByteData":
      i2c.writeByteData(fd, job.reg, job.value);
      return null;
    case "smbus.writeWordData":
      i2c.writeWordData(fd, job.reg, job.value);
      return null;
    case "smbus.readI2cBlock":
      return i2c.readI2cBlockData(fd, job.reg, job.size);
    case "smbus.writeI2cBlock":
      i2c.writeI2cBlockData(fd, job.reg, job.data);
      return null;
    case "spi.transfer":
      return spi.transfer(fd, [{ tx: job.data, read: job.read, delayUsecs: job.delayUsecs }])[0]!;
  }
}

self.onmessage = (ev: MessageEvent<Job>) => {
  const job = ev.data;
  let reply: JobResult;
  try {
    reply = { id: job.id, value: run(job) };
  } catch (e) {
    reply = { id: job.id, error: { message: (e as Error).message, errno: e instanceof SysError ? e.errno : undefined, call: e instanceof SysError ? e.call : undefined } };
  }
  self.postMessage(reply);
};
