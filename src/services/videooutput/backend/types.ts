// What the video output service needs of a display: planes it can put a framebuffer
// on, with a window (source crop, output rectangle) and compositing (alpha, zpos).
// linux.ts drives DRM/KMS; virtual.ts keeps the same state in memory.
import type { Rect, Size } from "../schemas";

export interface DisplayInfo {
  /** The active mode's size (the CRTC's). */
  width: number;
  height: number;
  crtcId: number;
  connectorId: number;
}

export interface Window {
  /** The source crop, in frame pixels. */
  src: Rect;
  /** Where on the display (CRTC coordinates). */
  dst: Rect;
}

/** What compositing could be applied: the plane properties that exist and were set. */
export interface Compositing {
  alpha: boolean;
  zpos: boolean;
}

/** A failure of the display driver (answered as the HAL error row). */
export class HalError extends Error {
  constructor(message: string, readonly errno?: number) {
    super(message);
  }
}

export interface VideoBackend {
  readonly kind: "linux" | "virtual";
  /** How planes are updated: "atomic" or "legacy" (SETPLANE), or "memory". */
  readonly commit: string;
  display(): DisplayInfo;
  /** Every plane of the display (primary, overlay and cursor). */
  planeIds(): number[];
  /** Connected displays (connectors). */
  connectedCount(): number;
  // Each change resolves once the display has taken it (an atomic commit's
  // completion event) and rejects with HalError when the driver refuses it.
  /** Gives plane planeIndex a framebuffer of frame size and shows it in window; resolves to the plane id. */
  attach(planeIndex: number, frame: Size, window: Window, comp: { opacity: number; zOrder: number }): Promise<number>;
  /** A new framebuffer of frame size on an attached plane (setVideoData). */
  resize(planeIndex: number, frame: Size, window: Window): Promise<void>;
  /** Moves an attached plane's window. */
  setWindow(planeIndex: number, window: Window): Promise<void>;
  /** Opacity 0..255 and zOrder of several planes, as one change where the driver allows. */
  setCompositing(changes: { planeIndex: number; opacity: number; zOrder: number }[]): Promise<Compositing>;
  /** Gives the plane back (off, or what it showed before) and frees its framebuffer. */
  detach(planeIndex: number): Promise<void>;
  /** Gives every plane back and closes the display (at stop; bounded by one frame per plane). */
  close(): void;
}
