// What the camera service needs of a camera system: the devices plugged now (and
// word when that changes), what each can do, and an opened device to configure
// and stream from. linux.ts drives V4L2; virtual.ts generates a test pattern.

/** The spec's format names and the V4L2 pixel formats behind them. */
export type FormatName = "YUV" | "JPEG";
export const FOURCC: Record<FormatName, string> = { YUV: "YUYV", JPEG: "MJPG" };

export interface DeviceDesc {
  /** Stable while the device is plugged (its node path). */
  key: string;
  name: string;
  /** Part of the board rather than plugged in (USB cameras are not). */
  builtin: boolean;
}

export interface FrameSize {
  width: number;
  height: number;
  /** Frame rates offered at this size, highest first. */
  fps: number[];
}

export interface CameraFormat {
  width: number;
  height: number;
  format: FormatName;
  fps: number;
}

/** A control's range and value, in the spec's camera_capability shape. */
export interface Capability {
  min: number;
  max: number;
  step: number;
  default: number;
  value?: number;
}

export interface CapturedFrame {
  /** The frame's bytes: a view valid only during the callback (copy what you keep). */
  data: Buffer;
  deviceSequence: number;
  timestampUs: bigint;
}

export interface OpenDevice {
  /** Sizes and rates per format. */
  formats(): Partial<Record<FormatName, FrameSize[]>>;
  getFormat(): CameraFormat;
  /** Applies a format (not while streaming); throws UnsupportedFormat when the device cannot. */
  setFormat(f: CameraFormat): CameraFormat;
  /** The largest frame of the current format, in bytes. */
  frameSize(): number;
  /** The spec's property names this device has, with their ranges and values. */
  properties(): Record<string, Capability>;
  /** Sets one property; returns the value the device kept. */
  setProperty(name: string, value: number): number;
  /** Starts streaming: onFrame runs on the event source for each frame. */
  start(onFrame: (f: CapturedFrame) => void, onError: (e: Error) => void): void;
  stop(): void;
  readonly streaming: boolean;
  close(): void;
}

export interface CameraBackend {
  readonly kind: "linux" | "virtual";
  /** The devices plugged now. */
  list(): DeviceDesc[];
  /** Runs onChange (on the event loop) when devices may have come or gone; returns a stop. */
  watch(onChange: () => void): () => void;
  /** Formats of a device without opening it for streaming. */
  formats(key: string): Partial<Record<FormatName, FrameSize[]>>;
  open(key: string): OpenDevice;
  close(): void;
}

/** The device cannot take the requested format (the spec's 30). */
export class UnsupportedFormat extends Error {}
