// The layout of the camera's frame ring in shared memory (docs/services/camera.md,
// "Shared memory"): the contract between the camera service, which writes it
// (src/services/camera/ring.ts), and its readers (reader.ts here, camera_shm.h for C): a 64-byte header, then
// slotCount slots of slotSize bytes, each a 64-byte slot header followed by the frame.
//
// A slot is written under a sequence lock: `lock` is made odd, the slot filled,
// `lock` made even again, and only then the header's writeIndex (frames written so
// far) advances. A reader takes frame n from slot n % slotCount, checks that the
// slot says frame n and that `lock` was even and unchanged around its copy; a
// slower reader that fell more than slotCount frames behind skips to the oldest
// frame still there and counts the skipped ones as lost.

export const RING_MAGIC = 0x46435344; // "DSCF" in memory order
export const RING_VERSION = 1;
export const HEADER_SIZE = 64;
export const SLOT_HEADER_SIZE = 64;

/** Header field offsets (all little-endian u32). */
export const H = {
  magic: 0, version: 4, headerSize: 8, slotCount: 12, slotSize: 16, width: 20, height: 24, fourcc: 28, fpsMilli: 32,
  flags: 36, writeIndex: 40,
} as const;
/** Slot header field offsets (u32 but timestampUs, u64). */
export const SLOT = { lock: 0, bytesused: 4, frame: 8, deviceSequence: 12, timestampUs: 16, flags: 24 } as const;
/** Header flags: the writer has stopped (no frame will follow). */
export const FLAG_STOPPED = 0x1;
