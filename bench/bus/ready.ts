// Starting bench processes, and waiting for their word of readiness on stdout.
import type { spawn } from "bun";

/** Resolves once the process has written `word` on stdout; its later output is drained. */
export async function waitReady(p: ReturnType<typeof spawn>, word: string): Promise<void> {
  const reader = (p.stdout as ReadableStream<Uint8Array>).getReader();
  let text = "";
  while (!text.includes(word)) {
    const { value, done } = await reader.read();
    if (done) throw new Error(`exited before '${word}': ${text}`);
    text += new TextDecoder().decode(value);
  }
  // Keep draining its output: a full pipe would stall the process it belongs to.
  void (async () => {
    while (!(await reader.read()).done) {}
  })();
}

/** Starts a bench process (kept in `children`, to be stopped with the bench) and resolves once it wrote `word`. */
export async function startReady(argv: string[], word: string, children: ReturnType<typeof spawn>[]): Promise<ReturnType<typeof spawn>> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "inherit" });
  children.push(p);
  await waitReady(p, word);
  return p;
}
