// The writing side of the frame ring in shared memory (docs/services/camera.md,
// "Shared memory"): the layout is src/clients/camera/layout.ts, which the readers
// (src/clients/camera/reader.ts, camera_shm.h) share.
import { FLAG_STOPPED, H, HEADER_SIZE, RING_MAGIC, RING_VERSION, SLOT, SLOT_HEADER_SIZE } from "../../clients/camera/layout";

export interface RingGeometry {
  slotCount: number;
  /** Largest frame in bytes. */
  frameSize: number;
  width: number;
  height: number;
  fourcc: number;
  fps: number;
}

const align = (n: number, a: number) => Math.ceil(n / a) * a;

export function slotSizeFor(frameSize: number): number {
  return align(SLOT_HEADER_SIZE + frameSize, 64);
}

/** Total bytes of a ring (rounded up to pages). */
export function ringSize(g: Pick<RingGeometry, "slotCount" | "frameSize">): number {
  return align(HEADER_SIZE + g.slotCount * slotSizeFor(g.frameSize), 4096);
}

/** The writing side over a mapped buffer (the service). */
export class RingWriter {
  readonly slotSize: number;
  private view: DataView;
  private written = 0;

  constructor(readonly buf: Buffer, readonly g: RingGeometry) {
    this.slotSize = slotSizeFor(g.frameSize);
    if (buf.length < ringSize(g)) throw new RangeError(`ring needs ${ringSize(g)} bytes, has ${buf.length}`);
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
    const v = this.view;
    buf.fill(0, 0, HEADER_SIZE);
    v.setUint32(H.version, RING_VERSION, true);
    v.setUint32(H.headerSize, HEADER_SIZE, true);
    v.setUint32(H.slotCount, g.slotCount, true);
    v.setUint32(H.slotSize, this.slotSize, true);
    v.setUint32(H.width, g.width, true);
    v.setUint32(H.height, g.height, true);
    v.setUint32(H.fourcc, g.fourcc, true);
    v.setUint32(H.fpsMilli, Math.round(g.fps * 1000), true);
    v.setUint32(H.writeIndex, 0, true);
    for (let i = 0; i < g.slotCount; i++) buf.fill(0, this.slotOffset(i), this.slotOffset(i) + SLOT_HEADER_SIZE);
    // The magic last: a reader that sees it sees a complete header.
    v.setUint32(H.magic, RING_MAGIC, true);
  }

  get frames(): number {
    return this.written;
  }

  slotOffset(i: number): number {
    return HEADER_SIZE + i * this.slotSize;
  }

  /**
   * Writes one frame: fill(dst) copies the frame's bytes into dst (the slot's data
   * area, frameSize bytes) and returns how many it wrote. Returns the slot's data.
   */
  write(fill: (dst: Buffer) => number, meta: { deviceSequence: number; timestampUs: bigint; flags?: number }): Buffer {
    const n = this.written;
    const off = this.slotOffset(n % this.g.slotCount);
    const v = this.view;
    const lock = v.getUint32(off + SLOT.lock, true);
    v.setUint32(off + SLOT.lock, (lock + 1) | 1, true);
    const data = this.buf.subarray(off + SLOT_HEADER_SIZE, off + SLOT_HEADER_SIZE + this.g.frameSize);
    const used = Math.min(fill(data), this.g.frameSize);
    v.setUint32(off + SLOT.bytesused, used, true);
    v.setUint32(off + SLOT.frame, n >>> 0, true);
    v.setUint32(off + SLOT.deviceSequence, meta.deviceSequence >>> 0, true);
    v.setBigUint64(off + SLOT.timestampUs, meta.timestampUs, true);
    v.setUint32(off + SLOT.flags, meta.flags ?? 0, true);
    v.setUint32(off + SLOT.lock, ((lock + 1) | 1) + 1, true);
    this.written = n + 1;
    v.setUint32(H.writeIndex, this.written >>> 0, true);
    return data.subarray(0, used);
  }

  /** Marks the ring stopped: readers see that no frame follows. */
  stop(): void {
    this.view.setUint32(H.flags, this.view.getUint32(H.flags, true) | FLAG_STOPPED, true);
  }
}
