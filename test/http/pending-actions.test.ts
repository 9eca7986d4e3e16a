/**
 * Pending actions over HTTP (spec 01 Pending action, Pending action status, Pending actions endpoints and batch
 * rules, Errors; DESIGN.md 6.2 exactly-once execution). Rows are made the way the agent loop makes them:
 * `createPending` with the real `create_insight` gated tool from the registry. Execution is exercised twice: first
 * with no stream reader running (the executor called directly, so a row stays approved until the test says so),
 * then with the embedded runtime's stream reader (local/streams.ts) started in this file, as `npm start` runs it.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { idFor } from "../../core/db/agent-write";
import { AppError } from "../../core/error";
import { gatedTool, type GatedTool, type ToolContext } from "../../core/agent/tools";
import { createPending } from "../../core/pending-action";
import { executeAction, MAX_ATTEMPTS, sweep } from "../../core/pending-action/executor";
import { startLocalStreams, type LocalStreams } from "../../local/streams";
import { LIST_RESPONSE_BYTES, wireBytes } from "../../core/response-size";
import { call, newUser, newWorkspace } from "../support/api";
import { storeFails } from "../support/store-faults";
import { waitFor } from "../support/multipart";
import { expectEnvelope } from "./_helpers";

type User = { id: string; token: string; email: string };

let owner: User;
let outsider: User;
let wsA: string;
let wsB: string;
let tool: GatedTool;

const insightInput = (title = `Finding ${randomUUID().slice(0, 6)}`) => ({
  insight_type: "pain_point",
  title,
  description: "Users cannot find the export button.",
  severity: "high",
});

const ctxFor = (workspaceId: string, over: Partial<ToolContext> = {}): ToolContext => ({
  userId: owner.id,
  workspaceId,
  missionId: randomUUID(),
  sessionId: null,
  attachmentIds: [],
  ...over,
});

/** A pending create_insight made as the agent loop makes it. */
async function pend(opts: { workspaceId?: string; missionId?: string; title?: string } = {}) {
  const input = insightInput(opts.title);
  const ctx = ctxFor(opts.workspaceId ?? wsA, opts.missionId ? { missionId: opts.missionId } : {});
  const { id, preview } = await createPending(ctx, tool, input);
  return { id, preview, input, ctx };
}

const get = (id: string, token = owner.token) => call("GET", `/api/pending-actions/${id}`, { token });
const approve = (id: string, body: unknown = {}, token = owner.token) => call("POST", `/api/pending-actions/${id}/approve`, { token, body });
const reject = (id: string, token = owner.token) => call("POST", `/api/pending-actions/${id}/reject`, { token, body: {} });
const batch = (batchId: string, items: unknown[], token = owner.token) =>
  call("POST", `/api/pending-actions/batch/${batchId}/approve`, { token, body: { items } });
const statusOf = async (id: string) => (await get(id)).body.status as string;

/** The insights of a workspace that a pending action wrote (tagged with its id). */
async function insightsOf(workspaceId: string, paId: string) {
  const { data } = await db().entities.insight.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true });
  return data.filter((i) => i.pending_action_id === paId);
}

/** Poll GET until the row reaches a final state (the stream reader executes it in the background). */
const settled = (id: string) =>
  waitFor(async () => {
    const res = await get(id);
    return ["executed", "failed", "rejected"].includes(res.body.status) ? res : null;
  }, 30_000, 50);

beforeAll(async () => {
  const [a, stranger] = await Promise.all([newWorkspace("Pending actions"), newUser()]);
  owner = a.owner;
  outsider = stranger;
  wsA = a.workspace.id;
  const b = await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Second workspace" } });
  expect(b.status, b.text).toBe(201);
  wsB = b.body.id;
  tool = gatedTool("create_insight")!;
  expect(tool, "create_insight is a gated tool of the registry").toBeDefined();
});

describe("createPending (the agent loop's entry)", () => {
  it("stores a pending row with the tool's preview, batched as {missionId}:{toolName}", async () => {
    const { id, preview, input, ctx } = await pend({ title: "Export is hidden" });
    expect(preview).toMatchObject({ summary: 'Create insight "Export is hidden"', target: "insight", operation: "create" });
    const res = await get(id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toEqual({
      id,
      workspaceId: wsA,
      missionId: ctx.missionId,
      sessionId: null,
      batchId: `${ctx.missionId}:create_insight`,
      toolName: "create_insight",
      toolInput: input,
      preview: JSON.parse(JSON.stringify(preview)),
      status: "pending",
      userEdits: null,
      result: null,
      error: null,
      createdAt: expect.any(String),
      resolvedAt: null,
      executedAt: null,
    });
  });

  it("batches by conversation without a mission, and under adhoc with neither", async () => {
    const conversationId = randomUUID();
    const byConversation = await createPending(ctxFor(wsA, { missionId: null, conversationId }), tool, insightInput());
    expect((await get(byConversation.id)).body.batchId).toBe(`${conversationId}:create_insight`);
    const adhoc = await createPending(ctxFor(wsA, { missionId: null }), tool, insightInput());
    expect((await get(adhoc.id)).body).toMatchObject({ batchId: "adhoc:create_insight", missionId: null });
  });

  it("refuses input the tool's schema refuses, and input over the size cap (422)", async () => {
    const invalid = await createPending(ctxFor(wsA), tool, { title: "" }).catch((e: unknown) => e);
    expect(invalid).toBeInstanceOf(AppError);
    expect((invalid as AppError).code).toBe("VALIDATION_ERROR");
    expect((invalid as AppError).status).toBe(422);
    const huge = await createPending(ctxFor(wsA), tool, { ...insightInput(), description: "x".repeat(9_000), impact: "y".repeat(70_000) }).catch((e: unknown) => e);
    expect(huge).toBeInstanceOf(AppError);
    expect((huge as AppError).status).toBe(422);
  });
});

describe("GET /api/pending-actions", () => {
  let ids: string[];
  beforeAll(async () => {
    // A workspace of its own, so the list holds exactly these rows.
    const ws = await call("POST", "/api/workspaces", { token: owner.token, body: { name: "Listing" } });
    const first = await createPending(ctxFor(ws.body.id), tool, insightInput("first"));
    const second = await createPending(ctxFor(ws.body.id), tool, insightInput("second"));
    const third = await createPending(ctxFor(ws.body.id), tool, insightInput("third"));
    ids = [ws.body.id, first.id, second.id, third.id];
    expect((await reject(second.id)).status).toBe(200);
  });

  it("lists newest first with the total", async () => {
    const [ws, first, second, third] = ids;
    const res = await call("GET", "/api/pending-actions", { token: owner.token, query: { workspace_id: ws } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(3);
    expect(res.body.items.map((i: { id: string }) => i.id)).toEqual([third, second, first]);
  });

  it("filters by status", async () => {
    const [ws, first, second, third] = ids;
    const pending = await call("GET", "/api/pending-actions", { token: owner.token, query: { workspace_id: ws, status: "pending" } });
    expect(pending.body.items.map((i: { id: string }) => i.id)).toEqual([third, first]);
    expect(pending.body.total).toBe(2);
    const rejected = await call("GET", "/api/pending-actions", { token: owner.token, query: { workspace_id: ws, status: "rejected" } });
    expect(rejected.body).toMatchObject({ total: 1, items: [{ id: second, status: "rejected" }] });
    const executed = await call("GET", "/api/pending-actions", { token: owner.token, query: { workspace_id: ws, status: "executed" } });
    expect(executed.body).toEqual({ items: [], total: 0 });
  });

  it("cuts a page at what one answer may carry: 32 rows of 3 × 55 KB fields pass 5 MB once escaped; total counts all, the next page starts after the cut", async () => {
    const { owner: member, workspace } = await newWorkspace("Heavy listing");
    // update_block-sized fields near the 64 KiB cap, with quotes that the proxy answer escapes twice.
    const big = (tag: string) => ({ content: `<p class="${tag}">${'"block" '.repeat(5_500)}</p>` });
    await Promise.all(
      Array.from({ length: 32 }, () =>
        db()
          .entities.pendingAction.create({
            id: randomUUID(),
            workspace_id: workspace.id,
            batch_id: `${randomUUID()}:update_block`,
            tool_name: "update_block",
            tool_input: big("input"),
            preview: big("preview"),
            user_edits: big("edits"),
            status: "rejected",
            created_by: member.id,
          })
          .go(),
      ),
    );
    const first = await call("GET", "/api/pending-actions", { token: member.token, query: { workspace_id: workspace.id } });
    expect(first.status).toBe(200);
    expect(first.body.total).toBe(32);
    const n = first.body.items.length;
    expect(n).toBeGreaterThan(0);
    expect(n).toBeLessThan(32);
    expect(wireBytes(first.body.items)).toBeLessThanOrEqual(LIST_RESPONSE_BYTES);
    const rest = await call("GET", "/api/pending-actions", { token: member.token, query: { workspace_id: workspace.id, offset: n } });
    expect(rest.status).toBe(200);
    expect(rest.body.total).toBe(32);
    const ids = [...first.body.items, ...rest.body.items].map((i: { id: string }) => i.id);
    expect(ids).toHaveLength(32);
    expect(new Set(ids).size).toBe(32);
  }, 60_000);

  it("answers 422 for a status outside the spec's five", async () => {
    for (const status of ["executing", "done"]) {
      const res = await call("GET", "/api/pending-actions", { token: owner.token, query: { workspace_id: ids[0], status } });
      expectEnvelope(res, 422, "VALIDATION_ERROR");
    }
  });

  it("answers 403 FORBIDDEN to a non-member", async () => {
    const res = await call("GET", "/api/pending-actions", { token: outsider.token, query: { workspace_id: ids[0] } });
    expectEnvelope(res, 403, "FORBIDDEN");
  });
});

describe("single-row errors", () => {
  it("404 NOT_FOUND for unknown ids on get, approve and reject", async () => {
    const id = randomUUID();
    expectEnvelope(await get(id), 404, "NOT_FOUND");
    expectEnvelope(await approve(id), 404, "NOT_FOUND");
    expectEnvelope(await reject(id), 404, "NOT_FOUND");
  });

  it("404 (not 403) for a row of a workspace the caller is not in; the row stays pending", async () => {
    const { id } = await pend();
    expectEnvelope(await get(id, outsider.token), 404, "NOT_FOUND");
    expectEnvelope(await approve(id, {}, outsider.token), 404, "NOT_FOUND");
    expectEnvelope(await reject(id, outsider.token), 404, "NOT_FOUND");
    expect(await statusOf(id)).toBe("pending");
  });

  it("422 for a malformed id or body", async () => {
    expectEnvelope(await get("not-a-uuid"), 422, "VALIDATION_ERROR");
    const { id } = await pend();
    expectEnvelope(await approve(id, { userEdits: "title" }), 422, "VALIDATION_ERROR");
    expectEnvelope(await approve(id, { edits: {} }), 422, "VALIDATION_ERROR");
    expect(await statusOf(id)).toBe("pending");
  });
});

describe("execution without a stream reader (executeAction called directly)", () => {
  it("approve answers 200 approved at once, persisting userEdits; nothing executes until an executor runs", async () => {
    const { id, input } = await pend();
    const res = await approve(id, { userEdits: { severity: "critical" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id, status: "approved", userEdits: { severity: "critical" }, toolInput: input, result: null, executedAt: null });
    expect(Date.parse(res.body.resolvedAt)).not.toBeNaN();
    expect(await insightsOf(wsA, id)).toEqual([]);

    const done = await executeAction(wsA, id);
    expect(done).toMatchObject({ outcome: "executed", status: "executed" });
    const row = (await get(id)).body;
    expect(row).toMatchObject({ status: "executed", error: null, result: { insight_id: idFor(id, "insight"), title: input.title } });
    expect(Date.parse(row.executedAt)).not.toBeNaN();
    const [insight] = await insightsOf(wsA, id);
    expect(insight).toMatchObject({ id: idFor(id, "insight"), severity: "critical", title: input.title, origin: "agent" });
  });

  it("executes exactly once when executeAction runs twice concurrently for the same row", async () => {
    const { id } = await pend();
    expect((await approve(id)).status).toBe(200);
    const outcomes = await Promise.all([executeAction(wsA, id), executeAction(wsA, id), executeAction(wsA, id)]);
    expect(outcomes.filter((o) => o.outcome === "executed")).toHaveLength(1);
    expect(outcomes.filter((o) => o.outcome === "skipped")).toHaveLength(2);
    expect(await insightsOf(wsA, id)).toHaveLength(1);
    expect((await executeAction(wsA, id)).outcome).toBe("skipped");
    expect(await insightsOf(wsA, id)).toHaveLength(1);
  });

  it("ends failed with the validation message when userEdits make the input invalid; nothing is written", async () => {
    const { id } = await pend();
    expect((await approve(id, { userEdits: { title: "", severity: "apocalyptic" } })).status).toBe(200);
    const done = await executeAction(wsA, id);
    expect(done.outcome).toBe("failed");
    const row = (await get(id)).body;
    expect(row.status).toBe("failed");
    expect(row.error).toMatch(/^Invalid input: /);
    expect(row.error).toMatch(/title/);
    expect(row.error).toMatch(/severity/);
    expect(row.result).toBeNull();
    expect(row.executedAt).toBeNull();
    expect(await insightsOf(wsA, id)).toEqual([]);
  });

  it("ends failed when the approver is no longer a member: execution runs as the approver", async () => {
    const member = await newUser();
    const added = await call("POST", `/api/workspaces/${wsA}/members`, { token: owner.token, body: { email: member.email, role: "member" } });
    expect(added.status, added.text).toBe(201);
    const { id } = await pend();
    expect((await approve(id, {}, member.token)).status).toBe(200);
    const removed = await call("DELETE", `/api/workspaces/${wsA}/members/${member.id}`, { token: owner.token });
    expect(removed.status, removed.text).toBe(204);
    expect((await executeAction(wsA, id)).outcome).toBe("failed");
    expect((await get(id)).body).toMatchObject({ status: "failed", error: "approver is no longer a member" });
    expect(await insightsOf(wsA, id)).toEqual([]);
  });

  it("ends failed for a tool the registry does not know", async () => {
    const { id } = await pend();
    await db().entities.pendingAction.patch({ workspace_id: wsA, id }).set({ tool_name: "launch_rockets" }).go();
    expect((await approve(id)).status).toBe(200);
    expect((await executeAction(wsA, id)).outcome).toBe("failed");
    expect((await get(id)).body).toMatchObject({ status: "failed", error: "unknown tool launch_rockets" });
  });

  it("the sweeper reclaims an executing row whose lease expired, and a re-run writes nothing twice", async () => {
    const { id } = await pend();
    expect((await approve(id)).status).toBe(200);
    // A first run that wrote the insight and died before the flip: executing, lease long expired.
    const first = await executeAction(wsA, id);
    expect(first.outcome).toBe("executed");
    const past = Date.now() - 60_000;
    await db()
      .entities.pendingAction.patch({ workspace_id: wsA, id })
      .set({ status: "executing", lease_owner: "crashed", lease_expires_at: past, sweep: "due", due_at: new Date(past).toISOString(), attempts: 1 })
      .remove(["result", "executed_at"])
      .go();
    // A live lease is left alone.
    const live = Date.now() + 60_000;
    const { id: busyId } = await pend();
    await db()
      .entities.pendingAction.patch({ workspace_id: wsA, id: busyId })
      .set({ status: "executing", resolved_by: owner.id, lease_owner: "alive", lease_expires_at: live, sweep: "due", due_at: new Date(live).toISOString(), attempts: 1 })
      .go();
    expect(await executeAction(wsA, busyId)).toMatchObject({ outcome: "skipped", status: "executing" });

    const report = await sweep({ graceMs: 0 });
    expect(report.executed).toBeGreaterThanOrEqual(1);
    expect((await get(id)).body).toMatchObject({ status: "executed", result: { insight_id: idFor(id, "insight") } });
    expect(await insightsOf(wsA, id)).toHaveLength(1);
    expect((await db().entities.pendingAction.get({ workspace_id: wsA, id }).go()).data).toMatchObject({ attempts: 2 });
    expect(await statusOf(busyId)).toBe("approved");
  });

  it(`gives up after ${MAX_ATTEMPTS} interrupted attempts: failed "outcome unknown", out of the sweeper's index`, async () => {
    const { id } = await pend();
    expect((await approve(id)).status).toBe(200);
    const past = Date.now() - 1_000;
    await db()
      .entities.pendingAction.patch({ workspace_id: wsA, id })
      .set({ status: "executing", lease_owner: "crashed", lease_expires_at: past, sweep: "due", due_at: new Date(past).toISOString(), attempts: MAX_ATTEMPTS })
      .go();
    expect((await executeAction(wsA, id)).outcome).toBe("failed");
    expect((await get(id)).body).toMatchObject({ status: "failed", error: expect.stringMatching(/^outcome unknown/) });
    expect(await insightsOf(wsA, id)).toEqual([]);
    const due = await db().entities.pendingAction.query.due({ sweep: "due" }).go({ pages: "all" });
    expect(due.data.map((r) => r.id)).not.toContain(id);
  });
});

describe("with the embedded stream reader", () => {
  let reader: LocalStreams;
  beforeAll(async () => {
    reader = await startLocalStreams({ endpoint: inject("dynamoEndpoint"), tableName: inject("tableName"), sweepIntervalMs: 3_600_000 });
  });
  afterAll(async () => {
    await reader?.stop();
  });

  it("approve → 200 approved; the stream executes it: result.insight_id names the insight, tagged with the action", async () => {
    const { id, input } = await pend({ title: "Sign-in loops on Android" });
    const res = await approve(id);
    expect(res.status, res.text).toBe(200);
    expect(res.body.status).toBe("approved");
    const done = await settled(id);
    expect(done.body).toMatchObject({ status: "executed", error: null });
    const insightId = done.body.result.insight_id as string;
    expect(insightId).toBe(idFor(id, "insight"));
    const insight = await call("GET", `/api/insights/${insightId}`, { token: owner.token });
    expect(insight.status, insight.text).toBe(200);
    expect(insight.body).toMatchObject({ workspace_id: wsA, title: input.title, insight_type: "pain_point" });
    const stored = await db().entities.insight.get({ workspace_id: wsA, id: insightId }).go();
    expect(stored.data?.pending_action_id).toBe(id);
    expect(await insightsOf(wsA, id)).toHaveLength(1);
  });

  it("merges userEdits into toolInput before execution (title changed), toolInput itself untouched", async () => {
    const { id, input } = await pend({ title: "Original title" });
    expect((await approve(id, { userEdits: { title: "Edited title" } })).status).toBe(200);
    const done = await settled(id);
    expect(done.body).toMatchObject({ status: "executed", toolInput: input, userEdits: { title: "Edited title" }, result: { title: "Edited title" } });
    const [insight] = await insightsOf(wsA, id);
    expect(insight?.title).toBe("Edited title");
    expect(insight?.description).toBe(input.description);
  });

  it("accepts the snake_case body (user_edits)", async () => {
    const { id } = await pend();
    const res = await approve(id, { user_edits: { title: "Snake title" } });
    expect(res.status, res.text).toBe(200);
    expect(res.body.userEdits).toEqual({ title: "Snake title" });
    expect((await settled(id)).body.result.title).toBe("Snake title");
  });

  it("reject → 200 rejected, kept as audit trail; the tool never runs", async () => {
    const { id } = await pend();
    const res = await reject(id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id, status: "rejected", result: null });
    expect(Date.parse(res.body.resolvedAt)).not.toBeNaN();
    // A later approval goes through the stream after the rejection: once it is executed, the rejected row had its chance.
    const later = await pend();
    expect((await approve(later.id)).status).toBe(200);
    expect((await settled(later.id)).body.status).toBe("executed");
    expect(await insightsOf(wsA, id)).toEqual([]);
    expect((await db().entities.insight.get({ workspace_id: wsA, id: idFor(id, "insight") }).go()).data).toBeNull();
    expect(await statusOf(id)).toBe("rejected");
  });

  it("409 INVALID_STATE when the row is not pending (approve twice, reject after approve)", async () => {
    const { id } = await pend();
    expect((await approve(id)).status).toBe(200);
    expectEnvelope(await approve(id), 409, "INVALID_STATE");
    expectEnvelope(await reject(id), 409, "INVALID_STATE");
    await settled(id);
    expectEnvelope(await approve(id), 409, "INVALID_STATE");
    expect(await insightsOf(wsA, id)).toHaveLength(1);
  });

  it("approve racing reject on one row: exactly one 200 and one 409, and the row ends as the winner decided", async () => {
    for (let round = 0; round < 3; round++) {
      const { id } = await pend();
      const [a, r] = await Promise.all([approve(id), reject(id)]);
      expect([a.status, r.status].sort()).toEqual([200, 409]);
      const loser = a.status === 409 ? a : r;
      expectEnvelope(loser, 409, "INVALID_STATE");
      const final = (await settled(id)).body.status;
      if (a.status === 200) {
        expect(final).toBe("executed");
        expect(await insightsOf(wsA, id)).toHaveLength(1);
      } else {
        expect(final).toBe("rejected");
        expect(await insightsOf(wsA, id)).toEqual([]);
      }
    }
  });

  describe("POST /api/pending-actions/batch/{batch_id}/approve", () => {
    it("approves listed rows, rejects excluded ones, leaves unlisted rows pending and counts non-pending ones nowhere", async () => {
      const missionId = randomUUID();
      const rows = [];
      for (let i = 0; i < 5; i++) rows.push(await pend({ missionId, title: `Batch row ${i}` }));
      const [r0, r1, r2, r3, r4] = rows.map((r) => r.id) as [string, string, string, string, string];
      expect((await reject(r4)).status).toBe(200);

      const res = await batch(`${missionId}:create_insight`, [
        { pendingActionId: r0 },
        { pendingActionId: r1, exclude: true },
        { pending_action_id: r2, user_edits: { title: "Edited in batch" } },
        { pendingActionId: r4 },
      ]);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toEqual({ batchId: `${missionId}:create_insight`, approved: 2, rejected: 1, skipped: 0 });

      expect((await settled(r0)).body.status).toBe("executed");
      expect((await settled(r2)).body).toMatchObject({ status: "executed", userEdits: { title: "Edited in batch" }, result: { title: "Edited in batch" } });
      expect(await statusOf(r1)).toBe("rejected");
      expect(await statusOf(r3)).toBe("pending");
      expect(await statusOf(r4)).toBe("rejected");
      expect(await insightsOf(wsA, r1)).toEqual([]);
      expect(await insightsOf(wsA, r3)).toEqual([]);
    });

    it("accepts a percent-encoded colon in the batch id", async () => {
      const missionId = randomUUID();
      const { id } = await pend({ missionId });
      const res = await batch(`${missionId}%3Acreate_insight`, [{ pendingActionId: id, exclude: true }]);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ batchId: `${missionId}:create_insight`, rejected: 1 });
    });

    it("counts as skipped a row another session resolved between the listing and the write", async () => {
      const missionId = randomUUID();
      const rows = [];
      for (let i = 0; i < 3; i++) rows.push(await pend({ missionId }));
      const [r0, r1, r2] = rows.map((r) => r.id) as [string, string, string];
      // Another session rejects r1 at the exact moment the batch's transaction is sent (a middleware on the shared
      // client, just before the request goes out).
      const stack = dynamoClient().middlewareStack;
      let injected = false;
      const concurrentSession: Parameters<typeof stack.add>[0] = (next) => async (args) => {
        if (!injected && "TransactItems" in (args.input as Record<string, unknown>)) {
          injected = true;
          expect((await reject(r1)).status).toBe(200);
        }
        return next(args);
      };
      stack.add(concurrentSession, { step: "deserialize", name: "concurrentSession" });
      try {
        const res = await batch(`${missionId}:create_insight`, [{ pendingActionId: r0 }, { pendingActionId: r1 }, { pendingActionId: r2, exclude: true }]);
        expect(res.status, res.text).toBe(200);
        expect(injected).toBe(true);
        expect(res.body).toMatchObject({ approved: 1, rejected: 1, skipped: 1 });
      } finally {
        stack.remove("concurrentSession");
      }
      expect(await statusOf(r1)).toBe("rejected");
      expect(await statusOf(r2)).toBe("rejected");
      expect((await settled(r0)).body.status).toBe("executed");
      expect(await insightsOf(wsA, r1)).toEqual([]);
    });

    it("writes more than 100 rows in several transactions", async () => {
      const missionId = randomUUID();
      const ids = await Promise.all(Array.from({ length: 101 }, () => pend({ missionId }).then((r) => r.id)));
      const res = await batch(`${missionId}:create_insight`, ids.map((pendingActionId) => ({ pendingActionId, exclude: true })));
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ approved: 0, rejected: 101, skipped: 0 });
      const listed = await db().entities.pendingAction.query.byBatch({ batch_id: `${missionId}:create_insight` }).go({ pages: "all" });
      expect(listed.data.filter((r) => r.status === "rejected")).toHaveLength(101);
    });

    it("a store failure after a committed transaction: 503 with the counts so far and the rows left; the retry resolves the rest", async () => {
      const missionId = randomUUID();
      const ids = await Promise.all(Array.from({ length: 101 }, () => pend({ missionId }).then((r) => r.id)));
      // Row 0 is approved in the first transaction (100 rows), row 100 in the second, which the store fails (as
      // throttling past the SDK's retries would); every other row is rejected.
      const items = ids.map((pendingActionId, i) => ({ pendingActionId, exclude: i !== 0 && i !== 100 }));
      const fault = storeFails(/^TransactWrite/, ids[100]!, 1);
      let res;
      try {
        res = await batch(`${missionId}:create_insight`, items);
      } finally {
        fault.remove();
      }
      expect(fault.failed()).toBe(1);
      expectEnvelope(res, 503, "SERVICE_UNAVAILABLE");
      expect(res.body).toMatchObject({ batchId: `${missionId}:create_insight`, approved: 1, rejected: 99, skipped: 0, remainingIds: [ids[100]], retryable: true });
      expect(res.body.detail).toMatch(/1 approved, 99 rejected/);
      expect(await statusOf(ids[100]!)).toBe("pending");
      expect(await statusOf(ids[1]!)).toBe("rejected");

      // The retry of the same request: the rows the first one resolved are non-pending now, counted nowhere.
      const retry = await batch(`${missionId}:create_insight`, items);
      expect(retry.status, retry.text).toBe(200);
      expect(retry.body).toEqual({ batchId: `${missionId}:create_insight`, approved: 1, rejected: 0, skipped: 0 });
      expect((await settled(ids[0]!)).body.status).toBe("executed");
      expect((await settled(ids[100]!)).body.status).toBe("executed");
    }, 60_000);

    it("rows with large edits are approved in transactions under DynamoDB's 4 MB (80 rows of 60 KB edits: one chunk would be 4.8 MB)", async () => {
      const { dynamoClient } = await import("../../core/db/client");
      const missionId = randomUUID();
      const ids = await Promise.all(Array.from({ length: 80 }, () => pend({ missionId }).then((r) => r.id)));
      const edits = { description: "Sign-in fails after every app update. ".repeat(1600).slice(0, 60_000) };
      // Each transaction's request is measured (one chunk of all 80 is refused: ValidationException, a 500).
      const sizes: number[] = [];
      const name = "transactionSizes";
      dynamoClient().middlewareStack.add(
        (next, context) => async (args) => {
          const input = JSON.stringify(args.input);
          if (/TransactWrite/.test(String(context.commandName)) && ids.some((id) => input.includes(id))) sizes.push(Buffer.byteLength(input));
          return next(args);
        },
        { step: "initialize", name },
      );
      try {
        const res = await batch(`${missionId}:create_insight`, ids.map((pendingActionId) => ({ pendingActionId, userEdits: edits })));
        expect(res.status, res.text).toBe(200);
        expect(res.body).toMatchObject({ approved: 80, rejected: 0, skipped: 0 });
      } finally {
        dynamoClient().middlewareStack.remove(name);
      }
      expect(sizes.length).toBeGreaterThan(1);
      for (const size of sizes) expect(size).toBeLessThan(4 * 1024 * 1024);
      const listed = await db().entities.pendingAction.query.byBatch({ batch_id: `${missionId}:create_insight` }).go({ pages: "all" });
      expect(listed.data.filter((r) => r.status !== "pending")).toHaveLength(80);
    }, 60_000);

    it("404 NOT_FOUND for an empty or unknown batch, and for a batch of a workspace the caller is not in", async () => {
      expectEnvelope(await batch(`${randomUUID()}:create_insight`, []), 404, "NOT_FOUND");
      // An id of another form names no batch either (spec 01: 404, not a validation error).
      expectEnvelope(await batch("nonsense", []), 404, "NOT_FOUND");
      const missionId = randomUUID();
      const { id } = await pend({ missionId });
      expectEnvelope(await batch(`${missionId}:create_insight`, [{ pendingActionId: id }], outsider.token), 404, "NOT_FOUND");
      expect(await statusOf(id)).toBe("pending");
    });

    it("422 when an item names a row outside the batch (nothing is written)", async () => {
      const missionId = randomUUID();
      const { id } = await pend({ missionId });
      const foreign = await pend();
      const res = await batch(`${missionId}:create_insight`, [{ pendingActionId: id }, { pendingActionId: foreign.id }]);
      expectEnvelope(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors[0].loc).toEqual(["body", "items", 1, "pendingActionId"]);
      expect(await statusOf(id)).toBe("pending");
      expect(await statusOf(foreign.id)).toBe("pending");
    });

    it("500 INVARIANT_VIOLATION when the batch spans workspaces (same missionId in two); nothing is written", async () => {
      const missionId = randomUUID();
      const inA = await pend({ missionId, workspaceId: wsA });
      const inB = await pend({ missionId, workspaceId: wsB });
      const res = await batch(`${missionId}:create_insight`, [{ pendingActionId: inA.id }]);
      expectEnvelope(res, 500, "INVARIANT_VIOLATION");
      expect(await statusOf(inA.id)).toBe("pending");
      expect(await statusOf(inB.id)).toBe("pending");
    });
  });
});
