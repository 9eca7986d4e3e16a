/**
 * Closed survey questions through the public API (issue #11): a survey export uploaded with
 * `POST /api/research/upload` and synthesised with `POST /api/research/synthesize` yields quantitative insights
 * whose every figure is recomputed here from the uploaded file (papaparse, independent of the engine), whose quotes
 * are verbatim free-text answers of the respondents behind the figure, and which are stored like any insight.
 * The engine-level test on the real Jupyter survey is test/unit/ai/synthesis-survey.test.ts.
 */
import { readFile } from "node:fs/promises";
import { fileURLToPath } from "node:url";
import { beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { uploadResearch, waitFor } from "../support/multipart";
import { cell, checkFigures, checkQuotes, isQuantitative, parse } from "../unit/ai/survey-figures";

const FIXTURE = fileURLToPath(new URL("../fixtures/surveys/product-survey.csv", import.meta.url));

type Insight = { id: string; title: string; description: string; mention_count: number; insight_type: string; severity: string; quotes: { text: string; source_id: string; speaker?: string | null }[] };

let ctx: { token: string; workspaceId: string; sourceId: string; text: string };

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Product survey");
  const res = await uploadResearch(owner.token, workspace.id, { name: "product-survey.csv", data: await readFile(FIXTURE) }, "text/csv", "survey");
  expect(res.status, res.text).toBe(201);
  const done = await waitFor(async () => {
    const r = await call("GET", `/api/research/sources/${res.body.id}`, { token: owner.token });
    return r.body.processing_status !== "pending" ? r.body : undefined;
  }, 90_000);
  expect(done.processing_status, done.processing_error).toBe("completed");
  ctx = { token: owner.token, workspaceId: workspace.id, sourceId: res.body.id, text: done.extracted_text };
}, 120_000);

describe("POST /api/research/synthesize on a survey export", () => {
  it("returns and stores quantitative insights whose figures the file recomputes", async () => {
    const res = await call("POST", "/api/research/synthesize", { token: ctx.token, body: { workspace_id: ctx.workspaceId, source_ids: [ctx.sourceId] } });
    expect(res.status, res.text).toBe(200);
    const q = (res.body.insights as Insight[]).filter(isQuantitative);
    expect(q.map((d) => d.title).join("\n")).toMatch(/“Installation” ranked first on average for “Rank these challenges/);
    expect(q.length).toBeGreaterThanOrEqual(4);
    const f = parse(FIXTURE);
    const idCol = f.header.indexOf("Respondent ID");
    const rowOf = (speaker: string) => f.rows.findIndex((r) => cell(r, idCol) === speaker);
    const free = [f.header.indexOf("What is the biggest problem you face with the product?"), f.header.indexOf("What would you like us to build next?")];
    for (const d of q) {
      checkQuotes(d, { extracted_text: ctx.text }, f, checkFigures(d, f, rowOf), rowOf, free);
      // Stored as returned.
      const stored = await call("GET", `/api/insights/${d.id}`, { token: ctx.token });
      expect(stored.status).toBe(200);
      expect(stored.body).toMatchObject({ title: d.title, description: d.description, frequency: 1, source_ids: [ctx.sourceId] });
    }
  }, 120_000);
});
