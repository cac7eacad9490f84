// Worker threads' entry points, from the compiled binary or from source.
// scripts/build.ts gives each worker file an entry point of its own, so the binary
// carries it in its embedded filesystem at its path relative to src/.

/** Whether this process runs the compiled binary (its script in Bun's embedded filesystem). */
export function compiled(): boolean {
  return Bun.main.startsWith("/$bunfs/") || Bun.main.startsWith("B:/~BUN/");
}

/** The URL to start a Worker with, for a worker file given by its path relative to src/ ("ffi/poller-worker.ts"). */
export function workerUrl(fromSrc: string): string {
  return compiled() ? `./${fromSrc}` : new URL(`../${fromSrc}`, import.meta.url).href;
}
