// Builds the single executable dist/devservices (bun build --compile), or with
// DEVSERVICES_TARGET=bun-linux-<arch> dist/devservices-<arch> for that target. The poller
// thread of the event source (src/ffi/loop.ts) is a second entry point so the binary carries it.
import { $ } from "bun";
import { COMPILE_FLAGS } from "./compile-flags";

//
// Test builds: DEVSERVICES_STORE_BUMP=1 compiles in a power-on reason file one format
// newer than the product's, with its migration step (src/core/store.ts, STORE_BUMP), to
// test upgrades and rollbacks across a change of format (test/store); DEVSERVICES_OUTFILE
// writes the executable elsewhere, so such a build leaves dist/devservices alone.
const target = process.env.DEVSERVICES_TARGET; // e.g. bun-linux-arm64 for a cross build
// A target build goes next to the host's: bun-linux-arm64 -> dist/devservices-arm64.
const outfile = process.env.DEVSERVICES_OUTFILE || (target ? `dist/devservices-${target.replace(/^bun-linux-/, "")}` : "dist/devservices");
const bump = process.env.DEVSERVICES_STORE_BUMP === "1" ? ["--define", 'DEVSERVICES_STORE_BUMP="1"'] : [];
// The build's identity (DEVSERVICES_BUILD): a digest of what the executable is made of
// (the sources, the recipes built in, the locked dependencies, Bun's version, the target
// and these options). The start's record of its parses (src/core/config.ts) is kept for
// one build: an update or a rollback to another executable parses afresh.
const digest = new Bun.CryptoHasher("sha256");
for (const f of [...new Bun.Glob("{src,recipes}/**/*").scanSync(".")].sort()) digest.update(`${f}\0`).update(await Bun.file(f).arrayBuffer());
for (const f of ["package.json", "package-lock.json"]) digest.update(await Bun.file(f).arrayBuffer());
digest.update(JSON.stringify([Bun.version, target ?? null, COMPILE_FLAGS, bump]));
const build = ["--define", `DEVSERVICES_BUILD=${JSON.stringify(digest.digest("hex").slice(0, 32))}`];
await $`bun build ${COMPILE_FLAGS} ${bump} ${build} --external x11 ${
  target ? ["--target", target] : []
} src/main.ts src/ffi/poller-worker.ts src/ffi/gst-worker.ts src/ffi/as-caller-worker.ts src/services/mediaindexer/index/extract-worker.ts src/services/peripheralmanager/backend/transfer-worker.ts --outfile ${outfile}`;
