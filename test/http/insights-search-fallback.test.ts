/**
 * Insight search without embeddings (spec 01: "falls back to case-insensitive text matching on title and description
 * when vector search is unavailable"). The embedder selection is pointed at Bedrock with an endpoint nothing listens
 * on, so every embedding call fails fast; the embedder is chosen once per process, hence this file of its own.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { expectEnvelope } from "./_helpers";

const saved = { AI_ENGINE: process.env.AI_ENGINE, AWS_ENDPOINT_URL_BEDROCK_RUNTIME: process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME };
process.env.AI_ENGINE = "bedrock";
process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = "http://127.0.0.1:9";
afterAll(() => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

let ws: { token: string; workspaceId: string };
const ids: Record<string, string> = {};
const search = (body: Record<string, unknown>) => call("POST", "/api/insights/search", { token: ws.token, body: { workspace_id: ws.workspaceId, ...body } });

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Fallback");
  ws = { token: owner.token, workspaceId: workspace.id };
  // Two distinct research sources of the workspace (frequency 2 for min_frequency): an insight may only name its own.
  const sources = await Promise.all(["a", "b"].map((k) => sourceWith(ws.token, ws.workspaceId, [`Support interview ${k}`], `${k}.md`)));
  const specs: [string, Record<string, unknown>][] = [
    ["titleHit", { title: "Password RESET emails arrive late", description: "Users wait ten minutes.", severity: "high" }],
    ["descHit", { title: "Support tickets pile up", description: "Most tickets are about a password reset that never arrives.", insight_type: "feedback_theme", source_ids: sources }],
    ["paraphrase", { title: "Users cannot get back into their account", description: "Recovering access takes too long." }],
    ["archived", { title: "Old password reset flow was confusing", description: "Replaced last year." }],
  ];
  for (const [name, body] of specs) {
    const res = await call("POST", "/api/insights", { token: ws.token, body: { workspace_id: ws.workspaceId, insight_type: "pain_point", ...body } });
    expect(res.status, res.text).toBe(201);
    ids[name] = res.body.id;
  }
  await call("PATCH", `/api/insights/${ids.archived}`, { token: ws.token, body: { is_archived: true } });
});

describe("POST /api/insights/search with embeddings unavailable", () => {
  it("falls back to case-insensitive text matching on title and description (title hits first), archived included", async () => {
    const res = await search({ query: "password reset" });
    expect(res.status, res.text).toBe(200);
    expect(res.body.mode).toBe("text");
    const found = res.body.insights.map((i: { id: string }) => i.id);
    // Title matches (newest first) rank above description matches; the paraphrase has no literal match.
    expect(found).toEqual([ids.archived, ids.titleHit, ids.descHit]);
    expect(res.body.total).toBe(3);
    expect(res.body.insights[0].score).toBeGreaterThan(res.body.insights[2].score);
  });

  it("applies filters and limit in text mode too", async () => {
    expect((await search({ query: "PASSWORD", insight_type: "feedback_theme" })).body.insights.map((i: { id: string }) => i.id)).toEqual([ids.descHit]);
    expect((await search({ query: "password", min_frequency: 2 })).body.insights.map((i: { id: string }) => i.id)).toEqual([ids.descHit]);
    expect((await search({ query: "password", severity: "high" })).body.insights.map((i: { id: string }) => i.id)).toEqual([ids.titleHit]);
    const limited = await search({ query: "password", limit: 1 });
    expect(limited.body.insights).toHaveLength(1);
    expect(limited.body.total).toBe(3);
    const none = await search({ query: "dark mode" });
    expect(none.body).toMatchObject({ insights: [], total: 0, mode: "text" });
    expectEnvelope(await search({ query: "password", limit: 101 }), 422, "VALIDATION_ERROR");
  });
});
