// The client side of the camera's shared-memory frames (docs/services/camera.md,
// "Shared memory"): map the ring the service writes (POSIX: the fd from getFd
// type "buffer"; System V: the key from startCamera), then take frames as the
// eventfd from getFd type "event" signals them. Usable by any TypeScript client;
// C clients use camera_shm.h (this folder), which reads the same layout (layout.ts).
import { libc } from "../../ffi/libc";
import { mmap, PROT_READ, shmat, shmget, SHM_RDONLY, watchEventfd, type Mapping } from "../../ffi/shm";
import type { Watch } from "../../ffi/loop";
import { FLAG_STOPPED, H, HEADER_SIZE, RING_MAGIC, SLOT, SLOT_HEADER_SIZE } from "./layout";

export interface RingFrame {
  /** Frame number within the stream: 0, 1, 2... without gaps unless frames were lost. */
  frame: number;
  /** The driver's sequence number. */
  deviceSequence: number;
  /** Capture time in microseconds (CLOCK_MONOTONIC, from the driver). */
  timestampUs: bigint;
  /** The frame's bytes, copied out of the ring. */
  data: Buffer;
}

export interface RingInfo {
  slotCount: number;
  slotSize: number;
  width: number;
  height: number;
  /** V4L2 fourcc of the frames (YUYV or MJPG). */
  fourcc: string;
  fps: number;
}

const SEEK_END = 2;

export class FrameReader {
  private view: DataView;
  /** The next frame number to read. */
  private next = 0;
  /** Frames that were overwritten before this reader got to them. */
  lost = 0;
  private watchHandle?: Watch;

  private constructor(private readonly map: Mapping) {
    const b = map.buffer;
    this.view = new DataView(b.buffer, b.byteOffset, b.byteLength);
    if (this.view.getUint32(H.magic, true) !== RING_MAGIC) throw new Error("not a camera frame ring (bad magic)");
    // Start with the frames still in the ring.
    const w = this.writeIndex;
    this.next = Math.max(0, w - this.info.slotCount);
  }

  /** Maps the ring of a POSIX shared-memory fd (getFd type "buffer"); the fd stays the caller's. */
  static fromFd(fd: number): FrameReader {
    const size = Number(libc.lseek(fd, 0, SEEK_END));
    if (size < HEADER_SIZE) throw new Error(`shared memory of ${size} bytes is no frame ring`);
    return new FrameReader(mmap(fd, size, { prot: PROT_READ }));
  }

  /** Attaches the System V segment of a key (startCamera with type sysvshm). */
  static fromKey(key: number): FrameReader {
    const id = shmget(key, 0, 0);
    return new FrameReader(shmat(id, SHM_RDONLY));
  }

  get info(): RingInfo {
    const v = this.view;
    const cc = v.getUint32(H.fourcc, true);
    return {
      slotCount: v.getUint32(H.slotCount, true),
      slotSize: v.getUint32(H.slotSize, true),
      width: v.getUint32(H.width, true),
      height: v.getUint32(H.height, true),
      fourcc: String.fromCharCode(cc & 0xff, (cc >>> 8) & 0xff, (cc >>> 16) & 0xff, cc >>> 24),
      fps: v.getUint32(H.fpsMilli, true) / 1000,
    };
  }

  /** Frames written so far. */
  get writeIndex(): number {
    return this.view.getUint32(H.writeIndex, true);
  }

  /** Whether the writer has stopped (stopCamera, close, or the camera gone). */
  get stopped(): boolean {
    return (this.view.getUint32(H.flags, true) & FLAG_STOPPED) !== 0;
  }

  /** Skips every frame written so far: read() returns only those that follow. */
  skipToLatest(): void {
    this.next = this.writeIndex;
  }

  /** Every frame written since the last call (copied out), oldest first. */
  read(): RingFrame[] {
    const out: RingFrame[] = [];
    const { slotCount, slotSize } = this.info;
    const v = this.view;
    const w = this.writeIndex;
    if (w - this.next > slotCount) {
      this.lost += w - slotCount - this.next;
      this.next = w - slotCount;
    }
    while (this.next < w) {
      const n = this.next++;
      const off = HEADER_SIZE + (n % slotCount) * slotSize;
      const lock = v.getUint32(off + SLOT.lock, true);
      const used = v.getUint32(off + SLOT.bytesused, true);
      const frame = v.getUint32(off + SLOT.frame, true);
      const data = Buffer.from(this.map.buffer.subarray(off + SLOT_HEADER_SIZE, off + SLOT_HEADER_SIZE + used));
      const deviceSequence = v.getUint32(off + SLOT.deviceSequence, true);
      const timestampUs = v.getBigUint64(off + SLOT.timestampUs, true);
      if (lock & 1 || frame !== n >>> 0 || v.getUint32(off + SLOT.lock, true) !== lock) {
        this.lost++; // overwritten while (or before) it was read
        continue;
      }
      out.push({ frame, deviceSequence, timestampUs, data });
    }
    return out;
  }

  /** Calls onFrame for each new frame as the eventfd (getFd type "event") signals, on the event source. */
  watch(eventFd: number, onFrame: (f: RingFrame) => void): Watch {
    this.watchHandle?.close();
    this.watchHandle = watchEventfd(eventFd, () => {
      for (const f of this.read()) onFrame(f);
    });
    return this.watchHandle;
  }

  close(): void {
    this.watchHandle?.close();
    this.map.unmap();
  }
}
