// Peripheral manager errors. The spec (part 3, "Errors") shows no table for this
// service, so this one is ours (docs/services/peripheralmanager.md): one code per
// cause, the same code and text from every protocol's methods.
import type { ErrorRow } from "../../core/errors";

export const E = {
  /** Malformed JSON, or a payload that does not match the method's schema (a missing or mistyped field, a value out of range). */
  invalidParameters: { code: 1, text: "Invalid parameters" },
  /** The board recipe has no such GPIO pin. */
  unknownPin: { code: 2, text: "Unknown pin" },
  /** The board recipe has no such I2C bus. */
  unknownI2cBus: { code: 3, text: "Unknown I2C bus" },
  /** The board recipe has no such SPI bus. */
  unknownSpiBus: { code: 4, text: "Unknown SPI bus" },
  /** The board recipe has no such UART interface. */
  unknownUart: { code: 5, text: "Unknown UART interface" },
  /** open: another application holds the pin, I2C device, SPI bus or UART. */
  openedByOther: { code: 6, text: "Already opened by another application" },
  /** Any method but open and list on a resource the caller has not opened (or lost). */
  notOpened: { code: 7, text: "Not opened by this application" },
  /** The caller is not root nor in the protocol's access group. */
  permissionDenied: { code: 8, text: "Permission denied" },
  /** The kernel says the resource is taken outside this service (another process, a kernel driver): EBUSY. */
  busy: { code: 9, text: "In use outside the peripheral manager" },
  /** gpio/setValue on a pin whose direction is `in`. */
  notOutput: { code: 10, text: "Pin is not an output" },
  /** spi/setFrequency above the bus maximum of the board recipe. */
  frequencyTooHigh: { code: 11, text: "Frequency above the bus maximum" },
  /** The device or adapter refused a setting or transfer kind (EINVAL, EOPNOTSUPP). */
  notSupported: { code: 12, text: "Not supported by the device" },
  /** No device acknowledged its address (ENXIO, EREMOTEIO, ENODEV). */
  noDevice: { code: 13, text: "No device answered" },
  /** A transfer, read or write failed (EIO, ETIMEDOUT, another errno), or a UART write did not drain in time. */
  ioError: { code: 14, text: "I/O error" },
  /** The device node could not be opened (missing, or not permitted to the service). */
  deviceUnavailable: { code: 15, text: "Device unavailable" },
  /** Anything else: a failure inside the service. */
  internal: { code: 16, text: "Internal error" },
  /**
   * I2C: an address the board recipe does not have on that bus (not among the bus's
   * declared devices; on a bus that declares none, outside i2cMinAddress..i2cMaxAddress).
   */
  unknownI2cDevice: { code: 17, text: "Unknown I2C device" },
} as const satisfies Record<string, ErrorRow>;
