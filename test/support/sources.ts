import { expect } from "vitest";
import { call } from "./api";
import { uploadResearch, waitFor } from "./multipart";

/**
 * A completed research source of the workspace whose extracted text holds `lines` verbatim (a Markdown upload, one
 * paragraph per line), for tests that make insights by hand: their quotes must occur verbatim in a source of the
 * same workspace (core/insight `create`, issue #10 item 6).
 * @returns the source id, once its processing status is `completed`.
 */
export async function sourceWith(token: string, workspaceId: string, lines: string[], name = "notes.md"): Promise<string> {
  const res = await uploadResearch(token, workspaceId, { name, data: Buffer.from(`${lines.join("\n\n")}\n`) }, "text/markdown");
  expect(res.status, res.text).toBe(201);
  const id = res.body.id as string;
  await waitFor(async () => {
    const got = await call("GET", `/api/research/sources/${id}`, { token });
    if (got.body.processing_status === "failed") throw new Error(`source ${id} failed: ${got.body.processing_error}`);
    return got.body.processing_status === "completed";
  });
  return id;
}
