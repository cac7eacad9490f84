// Waiting for a bench process's word of readiness on its stdout.
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
