import { beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { multipart, realFile, waitFor } from "../support/multipart";

const FILES: [string, string, string][] = [
  ["va-mobile-app/app-store-reviews-2024-05-partial.csv", "text/csv", "feedback"],
  ["va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md", "text/markdown", "interview"],
  ["va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md", "text/markdown", "interview"],
];

let ctx: { token: string; workspaceId: string; sourceIds: string[]; texts: Map<string, string> };

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("VA Health and Benefits");
  const sourceIds: string[] = [];
  for (const [path, type, sourceType] of FILES) {
    const file = await realFile(path);
    const body = await multipart({ workspace_id: workspace.id, source_type: sourceType, title: file.name }, { ...file, type });
    const res = await call("POST", "/api/research/upload", { token: owner.token, raw: body });
    expect(res.status).toBe(201);
    sourceIds.push(res.body.id);
  }
  const texts = new Map<string, string>();
  for (const id of sourceIds) {
    const done = await waitFor(async () => {
      const r = await call("GET", `/api/research/sources/${id}`, { token: owner.token });
      return r.body.processing_status === "completed" ? r.body : undefined;
    });
    texts.set(id, done.extracted_text);
  }
  ctx = { token: owner.token, workspaceId: workspace.id, sourceIds, texts };
}, 120_000);

describe("POST /api/research/synthesize", () => {
  it("synthesizes grounded insights from real VA research and records the agent run", async () => {
    const res = await call("POST", "/api/research/synthesize", {
      token: ctx.token,
      body: { workspace_id: ctx.workspaceId, source_ids: ctx.sourceIds },
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.insights.length).toBeGreaterThan(2);
    for (const insight of res.body.insights) {
      expect(insight.quotes.length).toBeGreaterThan(0);
      for (const q of insight.quotes) expect(ctx.texts.get(q.source_id)).toContain(q.text);
      expect(insight.frequency).toBe(new Set(insight.source_ids).size);
    }
    console.log(res.body.insights.map((i: { title: string; frequency: number; mention_count: number }) => `${i.title} [${i.frequency}/${i.mention_count}]`).join("\n"));
  }, 120_000);
});
