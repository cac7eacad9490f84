// How every executable of the product is compiled (bun build --compile): the product
// itself (scripts/build.ts) and what benchmarks measure it against (bench/bus/floor.ts).
// --compile-jit-policy=16: the executable starts with JavaScriptCore's tier-up
// thresholds multiplied by 16, so the code that runs once while the process starts
// (every module's evaluation: the services' schemas and options, the libraries) stays
// in the interpreter instead of being compiled; the normal policy applies once the
// services have served JIT_SETTLE_CALLS calls (src/core/engine.ts). Measured
// (docs/performance.md): exec until ready 173 -> 129 ms (median of 16), idle RssAnon
// 17.7 -> 15.8 MB; the floor 42 -> 39 ms, 6.3 -> 5.9 MB.
export const COMPILE_FLAGS = ["--compile", "--bytecode", "--minify", "--sourcemap=none", "--compile-jit-policy=16"];
