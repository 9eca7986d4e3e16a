import { readFile } from "node:fs/promises";
import { basename } from "node:path";

/** Encode fields and one file as multipart/form-data, as a browser or curl -F would (via the WHATWG FormData encoder). */
export async function multipart(fields: Record<string, string>, file?: { name: string; type: string; data: Buffer }) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("file", new Blob([new Uint8Array(file.data)], { type: file.type }), file.name);
  const res = new Response(form);
  return { data: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get("content-type")! };
}

/** A real research file from ../shared/realdata. */
export async function realFile(relative: string) {
  const path = new URL(`../../../shared/realdata/${relative}`, import.meta.url);
  return { name: basename(relative), data: await readFile(path) };
}

/** Poll `check` until it returns a value (no fixed sleeps): for background work such as extraction. */
export async function waitFor<T>(check: () => Promise<T | undefined | null | false>, timeoutMs = 60_000, everyMs = 50): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
