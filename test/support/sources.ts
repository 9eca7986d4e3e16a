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

/**
 * Markdown notes (file name → text) uploaded as interviews, once every source of the workspace is `completed`.
 * @returns file name → source id
 */
export async function notesAsSources(token: string, workspaceId: string, notes: Record<string, string>): Promise<Record<string, string>> {
  const sources: Record<string, string> = {};
  for (const [file, body] of Object.entries(notes)) {
    const up = await uploadResearch(token, workspaceId, { name: file, data: Buffer.from(body) }, "text/markdown", "interview");
    expect(up.status, up.text).toBe(201);
    sources[file] = up.body.id;
  }
  await waitFor(async () => (await call("GET", "/api/research/sources", { token, query: { workspace_id: workspaceId } })).body.sources.every((s: { processing_status: string }) => s.processing_status === "completed"));
  return sources;
}

/**
 * A pain-point insight made by hand (`POST /api/insights`) whose one quote is `quote`, verbatim from `sourceId`.
 * @returns the insight id
 */
export async function insightQuoting(token: string, workspaceId: string, i: { title: string; quote: string; sourceId: string; severity: string }): Promise<string> {
  const res = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: workspaceId, insight_type: "pain_point", title: i.title, description: `${i.title}.`, severity: i.severity, quotes: [{ text: i.quote, source_id: i.sourceId, speaker: null }] },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}
