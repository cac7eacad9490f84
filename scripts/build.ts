// Builds the single executable dist/devservices (bun build --compile). The reader
// worker of the bus transport is a second entry point so the binary carries it.
import { $ } from "bun";

const target = process.env.DEVSERVICES_TARGET; // e.g. bun-linux-arm64 for a cross build
await $`bun build --compile --bytecode --minify --sourcemap=none --external x11 ${
  target ? ["--target", target] : []
} src/main.ts src/bus/reader-worker.ts --outfile dist/devservices`;
