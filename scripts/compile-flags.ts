// How every executable of the product is compiled (bun build --compile): the product
// itself (scripts/build.ts) and what benchmarks measure it against (bench/bus/floor.ts).
export const COMPILE_FLAGS = ["--compile", "--bytecode", "--minify", "--sourcemap=none"];
