/**
 * `POST /api/research/synthesize` (spec 01 Research sources and synthesis, Limits; DESIGN.md section 5): grounded
 * insights from real research, frequency = distinct sources, the agent run, mention vectors precomputed at ingestion,
 * merging on a second run, and the preconditions: 404 unknown source, 422 SOURCE_NOT_READY naming the sources,
 * 409 SYNTHESIS_IN_PROGRESS while the workspace lock is held (and success once it has expired), 429 after 10
 * requests a minute, 402 without an active subscription.
 */
import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { acquireLock, rateLimit, runsOf } from "../../core/agent";
import * as Synthesis from "../../core/insight/synthesis";
import { SYNTHESIS_RATE_PER_MINUTE } from "../../core/insight/synthesis";
import { call, newUser, newWorkspace } from "../support/api";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import { expectEnvelope, withEnv } from "./_helpers";

// Mentions are embedded at ingestion here, so synthesis reuses the stored vectors (and a second run is cheap).
process.env.MENTION_INDEXING = "on";

const FILES: [string, string, string][] = [
  ["va-mobile-app/app-store-reviews-2024-05-partial.csv", "text/csv", "feedback"],
  ["va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md", "text/markdown", "interview"],
  ["va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md", "text/markdown", "interview"],
];

type Insight = { id: string; title: string; source_ids: string[]; frequency: number; mention_count: number; quotes: { text: string; source_id: string }[] };

let ctx: { token: string; userId: string; workspaceId: string; sourceIds: string[]; texts: Map<string, string>; failedId: string };
let first: { insights: Insight[]; insight_ids: string[] } | undefined;

const synthesize = (token: string, workspace_id: string, source_ids: string[]) =>
  call("POST", "/api/research/synthesize", { token, body: { workspace_id, source_ids } });

async function upload(token: string, workspaceId: string, file: { name: string; data: Buffer }, type: string, sourceType: string) {
  const res = await uploadResearch(token, workspaceId, file, type, sourceType);
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

const settled = (token: string, id: string) =>
  waitFor(async () => {
    const r = await call("GET", `/api/research/sources/${id}`, { token });
    return r.body.processing_status !== "pending" ? r.body : undefined;
  }, 90_000);

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("VA Health and Benefits");
  const sourceIds: string[] = [];
  for (const [path, type, sourceType] of FILES) sourceIds.push(await upload(owner.token, workspace.id, await realFile(path), type, sourceType));
  // A PDF cut short: its extraction fails (a source in state "failed").
  const pdf = await realFile("jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf");
  const failedId = await upload(owner.token, workspace.id, { name: "truncated.pdf", data: pdf.data.subarray(0, Math.floor(pdf.data.length / 3)) }, "application/pdf", "other");
  const texts = new Map<string, string>();
  for (const id of sourceIds) {
    const done = await settled(owner.token, id);
    expect(done.processing_status, done.processing_error).toBe("completed");
    texts.set(id, done.extracted_text);
  }
  expect((await settled(owner.token, failedId)).processing_status).toBe("failed");
  // The Index step (mention vectors) runs after a source is marked completed; wait for it too.
  for (const id of sourceIds) {
    await waitFor(async () => (await db().entities.researchSource.get({ workspace_id: workspace.id, id }).go({ consistent: true })).data?.indexed, 90_000);
  }
  ctx = { token: owner.token, userId: owner.id, workspaceId: workspace.id, sourceIds, texts, failedId };
}, 180_000);

describe("POST /api/research/synthesize", () => {
  it("synthesizes grounded insights from real VA research (frequency = distinct sources) and records the agent run", async () => {
    const res = await synthesize(ctx.token, ctx.workspaceId, ctx.sourceIds);
    expect(res.status, res.text).toBe(200);
    expect(res.body.engine).toBe("local");
    expect(res.body.insights.length).toBeGreaterThan(2);
    expect(res.body.insight_ids).toEqual(res.body.insights.map((i: Insight) => i.id));
    expect(res.body.created_ids).toEqual(res.body.insight_ids);
    expect(res.body.merged).toEqual([]);
    expect(res.body.summary.length).toBeGreaterThan(0);
    for (const insight of res.body.insights as Insight[]) {
      expect(insight.quotes.length).toBeGreaterThan(0);
      for (const q of insight.quotes) expect(ctx.texts.get(q.source_id)).toContain(q.text);
      expect(insight.frequency).toBe(new Set(insight.source_ids).size);
      for (const s of insight.source_ids) expect(ctx.sourceIds).toContain(s);
    }
    first = res.body;
    // Mentions are stored per source too (a later run over a known source replaces its count, never adds it again).
    for (const id of res.body.insight_ids as string[]) {
      const item = (await db().entities.insight.get({ workspace_id: ctx.workspaceId, id }).go()).data!;
      expect(item.mentions_by_source!.reduce((n, m) => n + m.count, 0)).toBe(item.mention_count);
      expect(new Set(item.mentions_by_source!.map((m) => m.source_id))).toEqual(new Set(item.source_ids));
    }

    const listed = await call("GET", "/api/insights", { token: ctx.token, query: { workspace_id: ctx.workspaceId } });
    expect(new Set(listed.body.insights.map((i: Insight) => i.id))).toEqual(new Set(res.body.insight_ids));

    const runs = (await runsOf(ctx.workspaceId)).filter((r) => r.agent_type === "synthesis");
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ status: "success", tool_name: "synthesize", engine: "local" });
    expect(runs[0]!.latency_ms).toBeGreaterThan(0);
    expect(new Set((runs[0]!.input_data as { source_ids: string[] }).source_ids)).toEqual(new Set(ctx.sourceIds));
    const stats = (runs[0]!.output_data as { stats: { vectors_reused: number; vectors_computed: number } }).stats;
    // Every mention vector was precomputed at ingestion (MENTION_INDEXING on), none embedded during synthesis.
    expect(stats.vectors_reused).toBeGreaterThan(0);
    expect(stats.vectors_computed).toBe(0);
  }, 120_000);

  it("answers 409 SYNTHESIS_IN_PROGRESS while another synthesis holds the lock, and runs once the lock has expired", async () => {
    expect(first, "the first synthesis must have run").toBeDefined();
    const release = await acquireLock(`ws#${ctx.workspaceId}`, "synthesis", 300, "SYNTHESIS_IN_PROGRESS", "held by the test");
    try {
      expectEnvelope(await synthesize(ctx.token, ctx.workspaceId, ctx.sourceIds), 409, "SYNTHESIS_IN_PROGRESS");
    } finally {
      await release();
    }
    // A lock left behind by a crashed synthesis: its expiry is in the past, so it no longer holds.
    await db().entities.guard.put({ scope: `ws#${ctx.workspaceId}`, name: "synthesis", owner: randomUUID(), ttl: Math.floor(Date.now() / 1000) - 5 }).go();

    // Same sources again: the findings merge into the first run's insights instead of duplicating them.
    const res = await synthesize(ctx.token, ctx.workspaceId, ctx.sourceIds);
    expect(res.status, res.text).toBe(200);
    expect(res.body.merged.length).toBeGreaterThan(0);
    const firstIds = new Set(first!.insight_ids);
    for (const m of res.body.merged) expect(firstIds.has(m.insight_id)).toBe(true);
    expect(res.body.created_ids).toEqual([]);
    expect(res.body.insight_ids).toEqual(res.body.merged.map((m: { insight_id: string }) => m.insight_id));
    const before = new Map(first!.insights.map((i) => [i.id, i]));
    for (const insight of res.body.insights as Insight[]) {
      expect(insight.frequency).toBe(new Set(insight.source_ids).size);
      // Re-synthesising sources already counted does not double their mentions.
      expect(insight.mention_count).toBe(before.get(insight.id)!.mention_count);
      for (const q of insight.quotes) expect(ctx.texts.get(q.source_id)).toContain(q.text);
    }
    const listed = await call("GET", "/api/insights", { token: ctx.token, query: { workspace_id: ctx.workspaceId } });
    expect(listed.body.total).toBe(first!.insights.length);
    expect((await runsOf(ctx.workspaceId)).filter((r) => r.agent_type === "synthesis")).toHaveLength(2);
    // The lock was released after the run.
    const lock = await db().entities.guard.get({ scope: `ws#${ctx.workspaceId}`, name: "synthesis" }).go({ consistent: true });
    expect(lock.data).toBeNull();
  }, 120_000);

  it("a stored synthesis answers 200 even when releasing its lock fails: the lock expires by itself, and a retry would create again", async () => {
    const name = `lockReleaseFails-${randomUUID()}`;
    let failed = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!failed && /^Delete/.test(context.commandName ?? "") && JSON.stringify(args.input).includes(`ws#${ctx.workspaceId}`) && JSON.stringify(args.input).includes("synthesis")) {
          failed = true;
          throw Object.assign(new Error("the store did not answer"), { name: "InternalServerError" });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    const runs = (await runsOf(ctx.workspaceId)).filter((r) => r.agent_type === "synthesis").length;
    try {
      const res = await synthesize(ctx.token, ctx.workspaceId, ctx.sourceIds);
      expect(failed, "the lock's release failed").toBe(true);
      expect(res.status, res.text).toBe(200);
      expect(res.body.insight_ids.length).toBeGreaterThan(0);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect((await runsOf(ctx.workspaceId)).filter((r) => r.agent_type === "synthesis")).toHaveLength(runs + 1);
    // Still there, until its expiry (SYNTHESIS_LOCK_SECONDS): let it go for the tests after this one.
    const lock = await db().entities.guard.get({ scope: `ws#${ctx.workspaceId}`, name: "synthesis" }).go({ consistent: true });
    expect(lock.data?.ttl).toBeGreaterThan(Math.floor(Date.now() / 1000));
    await db().entities.guard.delete({ scope: `ws#${ctx.workspaceId}`, name: "synthesis" }).go();
  }, 120_000);

  it("a synthesis that lost its lock to another one while it ran stores nothing: 409 SYNTHESIS_IN_PROGRESS, retryable", async () => {
    const name = `lockTaken-${randomUUID()}`;
    const other = randomUUID();
    let taken = false;
    // Just before the run's commit: its lock expired and another synthesis took it (the run outlived the lock).
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (!taken && /^TransactWrite/.test(context.commandName ?? "") && JSON.stringify(args.input).includes(`"sk":"insight#`) && JSON.stringify(args.input).includes(ctx.workspaceId)) {
          taken = true;
          await db().entities.guard.put({ scope: `ws#${ctx.workspaceId}`, name: "synthesis", owner: other, ttl: Math.floor(Date.now() / 1000) + 300 }).go();
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    const listed = async () => (await call("GET", "/api/insights", { token: ctx.token, query: { workspace_id: ctx.workspaceId, limit: 100 } })).body;
    const before = await listed();
    try {
      const res = await synthesize(ctx.token, ctx.workspaceId, ctx.sourceIds);
      expect(taken, "the lock was taken before the commit").toBe(true);
      expectEnvelope(res, 409, "SYNTHESIS_IN_PROGRESS");
      expect(res.body).toMatchObject({ retryable: true });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    // Nothing of the run was written: no insight created, none merged into.
    const after = await listed();
    expect(after.total).toBe(before.total);
    const updated = new Map((before.insights as { id: string; updated_at: string }[]).map((i) => [i.id, i.updated_at]));
    for (const i of after.insights as { id: string; updated_at: string }[]) expect(i.updated_at).toBe(updated.get(i.id));
    // The other synthesis keeps its lock: the refused run neither extended nor released it.
    const lock = await db().entities.guard.get({ scope: `ws#${ctx.workspaceId}`, name: "synthesis" }).go({ consistent: true });
    expect(lock.data?.owner).toBe(other);
    await db().entities.guard.delete({ scope: `ws#${ctx.workspaceId}`, name: "synthesis" }).go();
  }, 120_000);

  it("a running synthesis extends its lock, so a run longer than the lock period keeps it", async () => {
    const name = `lockExtended-${randomUUID()}`;
    const extended: number[] = [];
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (/^Update/.test(context.commandName ?? "") && input.includes(`ws#${ctx.workspaceId}`) && input.includes("guard#synthesis")) {
          extended.push(Date.now());
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await withEnv({ SYNTHESIS_LOCK_HEARTBEAT_MS: "40" }, () => synthesize(ctx.token, ctx.workspaceId, ctx.sourceIds));
      expect(res.status, res.text).toBe(200);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(extended.length, "the lock was extended while the run went on").toBeGreaterThan(0);
    // Released at the end (no extension outlives the run).
    const lock = await db().entities.guard.get({ scope: `ws#${ctx.workspaceId}`, name: "synthesis" }).go({ consistent: true });
    expect(lock.data).toBeNull();
  }, 120_000);

  it("a stored synthesis whose insights cannot be read back answers 200 with the values it wrote, not a 5xx inviting a retry", async () => {
    const name = `rereadFails-${randomUUID()}`;
    let refused = 0;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (/^BatchGet/.test(context.commandName ?? "") && JSON.stringify(args.input).includes(`"sk":"insight#`) && JSON.stringify(args.input).includes(ctx.workspaceId)) {
          refused += 1;
          throw Object.assign(new Error("the store did not answer"), { name: "InternalServerError" });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    const runs = (await runsOf(ctx.workspaceId)).filter((r) => r.agent_type === "synthesis").length;
    let res;
    try {
      res = await synthesize(ctx.token, ctx.workspaceId, ctx.sourceIds);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(refused, "the read back was refused").toBeGreaterThan(0);
    expect(res.status, res.text).toBe(200);
    expect((await runsOf(ctx.workspaceId)).filter((r) => r.agent_type === "synthesis")).toHaveLength(runs + 1);
    // The answer is what is stored: every insight it names, with the stored fields.
    expect(res.body.insights.map((i: Insight) => i.id)).toEqual(res.body.insight_ids);
    for (const insight of res.body.insights as Insight[]) {
      const stored = await call("GET", `/api/insights/${insight.id}`, { token: ctx.token });
      expect(stored.status).toBe(200);
      expect({ ...insight, created_at: undefined, updated_at: undefined }).toEqual({ ...stored.body, created_at: undefined, updated_at: undefined });
    }
  }, 120_000);

  it("answers 422 SOURCE_NOT_READY naming the pending and failed sources, and 404 for a source of no such id", async () => {
    const pending = randomUUID();
    // A source whose extraction has not finished yet (written as the upload leaves it, without starting extraction).
    await db()
      .entities.researchSource.create({
        id: pending,
        workspace_id: ctx.workspaceId,
        source_type: "interview",
        title: "still-processing.md",
        file_name: "still-processing.md",
        file_key: `workspaces/${ctx.workspaceId}/sources/${pending}/still-processing.md`,
        file_type: "text/markdown",
        file_kind: "text",
        file_size_bytes: 10,
        upload_method: "multipart",
        processing_status: "pending",
        created_by: ctx.userId,
      })
      .go();
    const res = await synthesize(ctx.token, ctx.workspaceId, [ctx.sourceIds[0]!, pending, ctx.failedId]);
    expectEnvelope(res, 422, "SOURCE_NOT_READY");
    expect(new Set(res.body.source_ids)).toEqual(new Set([pending, ctx.failedId]));
    expect(res.body.detail).toContain("still-processing.md (pending)");
    expect(res.body.detail).toContain("truncated.pdf (failed)");

    const unknown = randomUUID();
    const missing = await synthesize(ctx.token, ctx.workspaceId, [ctx.sourceIds[0]!, unknown]);
    expectEnvelope(missing, 404, "NOT_FOUND");
    expect(missing.body.source_ids).toEqual([unknown]);

    // A source of another workspace is not found here either.
    const other = await newWorkspace("Other");
    expectEnvelope(await synthesize(other.owner.token, other.workspace.id, [ctx.sourceIds[0]!]), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", "/api/research/synthesize", { token: ctx.token, body: { workspace_id: ctx.workspaceId, source_ids: [] } }), 422, "VALIDATION_ERROR");
    expectEnvelope(await synthesize((await newUser()).token, ctx.workspaceId, ctx.sourceIds), 403, "FORBIDDEN");
  });

  it("answers 429 RATE_LIMITED after 10 requests in a minute by the same user", async () => {
    const { owner, workspace } = await newWorkspace("Busy");
    const key = `user#${owner.id}`;
    const windowNow = () => Math.floor(Date.now() / 60_000);
    // Fixed one-minute windows: if the window turns over between filling it and the request, fill the new one.
    for (;;) {
      const window = windowNow();
      for (let k = 0; k < SYNTHESIS_RATE_PER_MINUTE; k++) await rateLimit(key, SYNTHESIS_RATE_PER_MINUTE, 60);
      const res = await synthesize(owner.token, workspace.id, [randomUUID()]);
      // The service's own run for the same user (a research cycle's chunk, a task's, an approved action's) does not
      // spend the person's limit: it gets past it (to the unknown source's 404).
      const own = await Synthesis.synthesize(owner.id, { workspace_id: workspace.id, source_ids: [randomUUID()], synthesis_type: "comprehensive" }, { rateLimited: false }).then(() => null, (err: unknown) => err);
      if (windowNow() !== window) continue;
      expect(own).toMatchObject({ code: "NOT_FOUND" });
      expectEnvelope(res, 429, "RATE_LIMITED");
      expect(res.body.retry_after_seconds).toBeGreaterThan(0);
      expect(res.body.retry_after_seconds).toBeLessThanOrEqual(60);
      break;
    }
    // Other users are not limited by it (the unknown source is then the answer).
    const { owner: other, workspace: ws2 } = await newWorkspace("Calm");
    expectEnvelope(await synthesize(other.token, ws2.id, [randomUUID()]), 404, "NOT_FOUND");
  });

  it("answers 402 SUBSCRIPTION_REQUIRED when the workspace has no active subscription", async () => {
    const { owner, workspace } = await withEnv({ TRIAL_DAYS: "-1" }, () => newWorkspace("Trial over"));
    expectEnvelope(await synthesize(owner.token, workspace.id, [randomUUID()]), 402, "SUBSCRIPTION_REQUIRED");
  });
});
