/**
 * The stream variants over the wire (spec 02 Streaming): `/api/stream/synthesis`, `/recommendation`, `/draft` and
 * `/pipeline` run the operation the user asked for with `progress` and `creation` events, then the copilot reports,
 * read by a real SSE client off the local gateway. Real research: the VA app-store reviews.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { runsOf } from "../../core/agent";
import { call, newWorkspace } from "../support/api";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import { liveGateway, orderProblems, readStream, type WireEvent } from "../support/sse";

// Mentions are embedded at ingestion, so each synthesis reuses the stored vectors.
process.env.MENTION_INDEXING = "on";

let gw: Awaited<ReturnType<typeof liveGateway>>;
let token: string;
let ws: string;
let sourceId: string;

const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);

/** Progress events rise from the first to the last and every step's percentages stay within 0..100. */
function expectProgress(events: WireEvent[], steps: string[]) {
  const progress = of(events, "progress");
  expect([...new Set(progress.map((p) => p.step))]).toEqual(steps);
  const pcts = progress.map((p) => p.percentage);
  expect(pcts).toEqual([...pcts].sort((a, b) => a - b));
  for (const p of progress) {
    expect(p.percentage).toBeGreaterThanOrEqual(0);
    expect(p.percentage).toBeLessThanOrEqual(100);
    expect(typeof p.message).toBe("string");
  }
}

beforeAll(async () => {
  gw = await liveGateway();
  const w = await newWorkspace("VA Health and Benefits");
  token = w.owner.token;
  ws = w.workspace.id;
  const up = await uploadResearch(token, ws, await realFile("va-mobile-app/app-store-reviews-2024-05-partial.csv"), "text/csv", "feedback");
  expect(up.status, up.text).toBe(201);
  sourceId = up.body.id;
  await waitFor(async () => (await call("GET", "/api/research/sources", { token, query: { workspace_id: ws } })).body.sources.every((s: { processing_status: string; indexed: boolean }) => s.processing_status === "completed" && s.indexed), 120_000);
}, 180_000);
afterAll(async () => gw.close());

describe("stream variants over the wire", () => {
  let insightIds: string[] = [];
  let recommendationId: string;

  it("/api/stream/synthesis: progress, the created insights, then the copilot's report and done with a mission id", async () => {
    const events = await readStream(gw.base, "/api/stream/synthesis", token, { workspace_id: ws, prompt: "What do reviewers complain about?", source_ids: [sourceId] }, { timeoutMs: 150_000 });

    expectProgress(events, ["synthesis"]);
    const [created] = of(events, "creation");
    expect(created.type).toBe("insights");
    expect(created.count).toBe(created.ids.length);
    expect(created.count).toBeGreaterThan(0);
    expect(created.preview.map((p: { id: string }) => p.id)).toEqual(created.ids);
    insightIds = created.ids;
    const list = await call("GET", "/api/insights", { token, query: { workspace_id: ws } });
    expect(list.body.insights.map((i: { id: string }) => i.id)).toEqual(expect.arrayContaining(insightIds));
    // The creation comes before the report, and the report uses read tools only.
    expect(events.findIndex((e) => e.event === "creation")).toBeLessThan(events.findIndex((e) => e.event === "tool_use"));
    expect(of(events, "tool_result").every((r) => r.status !== "queued")).toBe(true);
    const done = of(events, "done")[0];
    expect(done.mission_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(done.credits).toBe(0.5);
    expect(of(events, "error")).toEqual([]);
    // The harness judged the synthesis (its insights, re-read) and the report; one source on the trial: no swarm.
    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "harness_complexity")[0]).toMatchObject({ level: "simple", subtask_count: 0 });
    expect(of(events, "harness_contract").at(-1)).toMatchObject({ passed: true, workflow_type: "synthesis" });
    expect(of(events, "harness_verifier").at(-1)!.claims).toBeGreaterThan(created.count);
    expect(of(events, "harness_swarm_activated")).toEqual([]);
  }, 180_000);

  it("/api/stream/recommendation: recommendations from the given insights", async () => {
    const events = await readStream(gw.base, "/api/stream/recommendation", token, { workspace_id: ws, prompt: "What should we build?", insight_ids: insightIds.slice(0, 20) }, { timeoutMs: 120_000 });

    expectProgress(events, ["recommendation"]);
    const [created] = of(events, "creation");
    expect(created.type).toBe("recommendations");
    expect(created.count).toBeGreaterThanOrEqual(3);
    expect(created.count).toBeLessThanOrEqual(7);
    recommendationId = created.ids[0];
    const rec = await call("GET", `/api/recommendations/${recommendationId}`, { token });
    expect(rec.status).toBe(200);
    expect(of(events, "done")).toHaveLength(1);
  }, 150_000);

  it("/api/stream/draft: a document of the asked type for the recommendation", async () => {
    const events = await readStream(gw.base, "/api/stream/draft", token, { workspace_id: ws, prompt: "Draft a spec", document_type: "spec", recommendation_id: recommendationId }, { timeoutMs: 120_000 });

    expectProgress(events, ["drafting"]);
    const [created] = of(events, "creation");
    expect(created).toMatchObject({ type: "documents", count: 1 });
    const doc = await call("GET", `/api/documents/${created.ids[0]}`, { token });
    expect(doc.body).toMatchObject({ document_type: "spec", status: "draft", related_recommendation_id: recommendationId });
  }, 150_000);

  it("/api/stream/pipeline: synthesis, then recommendations, then a PRD, in that order", async () => {
    const events = await readStream(gw.base, "/api/stream/pipeline", token, { workspace_id: ws, prompt: "Take the reviews all the way to a PRD" }, { timeoutMs: 200_000 });

    expectProgress(events, ["synthesis", "recommendation", "drafting"]);
    expect(of(events, "creation").map((c) => c.type)).toEqual(["insights", "recommendations", "documents"]);
    const doc = await call("GET", `/api/documents/${of(events, "creation")[2].ids[0]}`, { token });
    expect(doc.body.document_type).toBe("prd");
    expect(of(events, "error")).toEqual([]);
    expect(events.at(-1)!.event).toBe("done");
    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "harness_complexity")[0]).toMatchObject({ level: "medium" });
    expect(of(events, "harness_contract").at(-1)).toMatchObject({ passed: true, workflow_type: "pipeline" });
  }, 240_000);

  it("/api/stream/pipeline with nothing to synthesize: an error event, then done", async () => {
    const empty = await newWorkspace("Empty");
    const events = await readStream(gw.base, "/api/stream/pipeline", empty.owner.token, { workspace_id: empty.workspace.id, prompt: "Go" });
    expect(of(events, "error")[0]).toMatchObject({ code: "SOURCE_NOT_READY" });
    expect(events.at(-1)!.event).toBe("done");
    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "creation")).toEqual([]);
  });

  it("/api/stream/pipeline left by its client during synthesis: nothing is written, no later step runs, charged as cancelled", async () => {
    const count = async () => {
      const [ins, recs, docs] = await Promise.all([
        call("GET", "/api/insights", { token, query: { workspace_id: ws } }),
        call("GET", "/api/recommendations", { token, query: { workspace_id: ws } }),
        call("GET", "/api/documents", { token, query: { workspace_id: ws } }),
      ]);
      return { insights: ins.body.total, recommendations: recs.body.total, documents: docs.body.total };
    };
    const before = await count();
    const runsBefore = new Set((await runsOf(ws)).map((r) => r.id));

    // The client leaves as soon as the synthesis step starts.
    const events = await readStream(gw.base, "/api/stream/pipeline", token, { workspace_id: ws, prompt: "All the way to a PRD" }, { onEvent: (e, close) => e.event === "progress" && close() });
    expect(of(events, "progress")).toHaveLength(1);

    // The synthesis under way stops before it writes, and is recorded as cancelled (partial, the 0.25 minimum).
    await vi.waitFor(
      async () => {
        const fresh = (await runsOf(ws)).filter((r) => !runsBefore.has(r.id));
        expect(fresh.find((r) => r.tool_name === "synthesize")).toMatchObject({ status: "partial", credits_charged: 0.25 });
      },
      { timeout: 120_000, interval: 250 },
    );
    const fresh = (await runsOf(ws)).filter((r) => !runsBefore.has(r.id));
    // No later step ran, and the copilot never spoke (its message was settled as cancelled without a run).
    expect(fresh.map((r) => r.tool_name)).toEqual(["synthesize"]);
    expect(await count()).toEqual(before);
  }, 180_000);
});
