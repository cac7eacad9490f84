// Where the layer's files are, for the packaging tests.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "../helpers/harness";

export const LAYER_FILES = join(ROOT, "meta-devservices/recipes-core/devservices/files");
export const RECIPE = join(ROOT, "meta-devservices/recipes-core/devservices/devservices_0.1.bb");

/** Every service the units may run: the short names of the D-Bus policy files' bus names. */
export const SERVICE_NAMES = readdirSync(join(LAYER_FILES, "dbus"))
  .filter((f) => f.startsWith("com.vendor.service.") && f.endsWith(".conf"))
  .map((f) => f.slice("com.vendor.service.".length, -".conf".length));
