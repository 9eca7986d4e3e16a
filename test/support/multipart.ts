import { readFile } from "node:fs/promises";
import { basename } from "node:path";
import { call, type ApiResponse } from "./api";

/** Encode fields and one file as multipart/form-data, as a browser or curl -F would (via the WHATWG FormData encoder). */
export async function multipart(fields: Record<string, string>, file?: { name: string; type: string; data: Buffer }) {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) form.append(k, v);
  if (file) form.append("file", new Blob([new Uint8Array(file.data)], { type: file.type }), file.name);
  const res = new Response(form);
  return { data: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get("content-type")! };
}

/** `POST /api/research/upload` with one file, as a client does; the response as it came (status not asserted). */
export async function uploadResearch(
  token: string,
  workspaceId: string,
  file: { name: string; data: Buffer },
  type: string,
  sourceType = "interview",
): Promise<ApiResponse> {
  const body = await multipart({ workspace_id: workspaceId, source_type: sourceType, title: file.name }, { ...file, type });
  return call("POST", "/api/research/upload", { token, raw: body });
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
