// libmtp through bun:ffi, opened on demand (the library is optional on a board):
// initialisation and raw device detection (LIBMTP_Detect_Raw_Devices), the part
// the media indexer's mtp plugin uses. The calls enumerate USB devices through
// libusb and can take milliseconds: callers run them off the main thread.
import { dlopen, FFIType, ptr, read, CString, type Pointer } from "bun:ffi";

const { i32, void: V, ptr: P } = FFIType;

/** LIBMTP_raw_device_t on LP64: { LIBMTP_device_entry_t { char *vendor; uint16_t vendor_id; char *product; uint16_t product_id; uint32_t device_flags; }; uint32_t bus_location; uint8_t devnum; } */
export const RAW_DEVICE = { size: 40, vendor: 0, vendor_id: 8, product: 16, product_id: 24, device_flags: 28, bus_location: 32, devnum: 36 };
export const LIBMTP_ERROR_NONE = 0, LIBMTP_ERROR_NO_DEVICE_ATTACHED = 5;

export interface RawDevice {
  vendor: string;
  vendorId: number;
  product: string;
  productId: number;
  busLocation: number;
  devnum: number;
}

function open(library: string) {
  return dlopen(library, {
    LIBMTP_Init: { args: [], returns: V },
    LIBMTP_Detect_Raw_Devices: { args: [P, P], returns: i32 },
    free: { args: [P], returns: V },
  });
}

let lib: ReturnType<typeof open> | undefined;

/** Opens and initialises libmtp; throws when the library is not there. */
export function loadLibmtp(library = "libmtp.so.9"): void {
  if (lib) return;
  // free() resolves to the C library's through libmtp's own dependencies.
  lib = open(library);
  lib.symbols.LIBMTP_Init();
}

/** The MTP devices on USB now ([] when none is attached). */
export function detectRawDevices(): RawDevice[] {
  if (!lib) throw new Error("libmtp not loaded");
  const listp = new BigUint64Array(1);
  const count = new Int32Array(1);
  const err = lib.symbols.LIBMTP_Detect_Raw_Devices(ptr(listp), ptr(count));
  if (err === LIBMTP_ERROR_NO_DEVICE_ATTACHED) return [];
  if (err !== LIBMTP_ERROR_NONE) throw new Error(`LIBMTP_Detect_Raw_Devices: error ${err}`);
  const base = Number(listp[0]) as unknown as Pointer;
  const out: RawDevice[] = [];
  const str = (p: number) => (p ? new CString(p as unknown as Pointer).toString() : "");
  for (let i = 0; i < count[0]!; i++) {
    const o = i * RAW_DEVICE.size;
    out.push({
      vendor: str(Number(read.u64(base, o + RAW_DEVICE.vendor))),
      vendorId: read.u16(base, o + RAW_DEVICE.vendor_id),
      product: str(Number(read.u64(base, o + RAW_DEVICE.product))),
      productId: read.u16(base, o + RAW_DEVICE.product_id),
      busLocation: read.u32(base, o + RAW_DEVICE.bus_location),
      devnum: read.u8(base, o + RAW_DEVICE.devnum),
    });
  }
  if (base) lib.symbols.free(base);
  return out;
}
