// The polling fds the service hands out (gpio/, i2c/, uart/getPollingFd): one eventfd
// per open resource, signalled by the service (an edge, a transfer done, input
// waiting); each caller gets its own duplicate through fd passing, so the service can
// close its copy when the resource is closed (the caller's then never fires again).
import { check, closeFd, libc } from "../../../ffi/libc";
import { eventfd, eventfdSignal } from "../../../ffi/shm";

const F_DUPFD_CLOEXEC = 1030;

export class PollFd {
  private fd?: number;

  /** A new descriptor for the caller, on the same eventfd. */
  duplicate(): number {
    this.fd ??= eventfd();
    const own = this.fd;
    return check("fcntl(F_DUPFD_CLOEXEC)", () => libc.fcntl(own, F_DUPFD_CLOEXEC, 0));
  }

  get active(): boolean {
    return this.fd !== undefined;
  }

  /** Adds one to the counter (a no-op until a caller asked for the fd). */
  signal(): void {
    if (this.fd !== undefined) eventfdSignal(this.fd, 1n);
  }

  /** Wakes a waiting caller once more (its next call finds the resource closed), then lets go. */
  close(): void {
    if (this.fd === undefined) return;
    eventfdSignal(this.fd, 1n);
    closeFd(this.fd);
    this.fd = undefined;
  }
}
