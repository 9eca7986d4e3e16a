/**
 * Background tasks (issue #23 point 1; spec 02 "Background task", its state table, "Background tasks" endpoints,
 * phases and timeouts, Limits): every endpoint with its errors through the real handlers against DynamoDB Local; each
 * task type run to its end by the local runner of the same state machine definition Step Functions runs
 * (functions/steps/task.asl.ts); the cancel that races a completion; and the sweeper, which resumes a task whose worker
 * died from its record (skipping what the dead attempt finished) and fails one whose attempts are used up.
 * Timeouts and the cancel of a running model call are in tasks-bedrock.test.ts; the progress stream in
 * tasks-progress.test.ts.
 */
import { randomUUID } from "node:crypto";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, newUser, newWorkspace } from "../support/api";
import { readsDuring } from "../support/read-units";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import { sourceWith } from "../support/sources";
import { conversation, firstAttemptDies, realRun, settled, spawned } from "../support/tasks";
import { setAccount, topUp } from "../support/billing";
import { connectDrive, DriveStandIn, useDriveSettings } from "../support/drive-standin";
import { expectEnvelope } from "./_helpers";
import { idIndexLags } from "../support/index-lag";
import { db } from "../../core/db/service";
import { runsOf } from "../../core/agent";
import { claimAttempt, completeTask, readTask, runIdOf, setTaskRunner, taskRunner, TASK_TIMEOUT_SECONDS, TaskProgress } from "../../core/task";
import { exhaustedError, sweepTasks } from "../../core/task/sweeper";
import { TaskSettings } from "../../core/task/settings";
import { dropLocalExecution, localTaskRunner } from "../../local/tasks";
import type { TaskExecutionInput } from "../../core/task/runner";

type Ws = Awaited<ReturnType<typeof newWorkspace>>;

/** A task of the workspace's owner, spawned over the API. */
const spawn = (ws: Ws, conv: string, body: Record<string, unknown>, token = ws.owner.token) =>
  call("POST", "/api/tasks/spawn", { token, body: { workspace_id: ws.workspace.id, conversation_id: conv, ...body } });

/** A gate a held step waits at. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  return { opened, open };
}

/** The spawn's hold of a task's run while the account still has it (core/billing: one `creditHold` per run id). */
const holdOf = async (userId: string, taskId: string) => (await db().entities.creditHold.get({ user_id: userId, run_id: runIdOf(taskId) }).go({ consistent: true })).data;
/** Credits the account holds for runs that have not ended. */
const reservedOf = async (userId: string) => (await db().entities.billingAccount.get({ user_id: userId }).go({ consistent: true })).data!.reserved;

const LINES = [
  "I lose my work when the app crashes during an upload.",
  "Exports to CSV take forever, I gave up after ten minutes.",
  "I would pay for an offline mode on site visits.",
  "We believe field workers will sync their notes every evening.",
];

/** A workspace with two completed sources and three insights quoting them verbatim. */
async function researchedWorkspace(name: string) {
  const ws = await newWorkspace(name);
  await topUp(ws.owner.id, 100);
  const conv = await conversation(ws.owner.token, ws.workspace.id);
  const s1 = await sourceWith(ws.owner.token, ws.workspace.id, LINES.slice(0, 2), "interview-1.md");
  const s2 = await sourceWith(ws.owner.token, ws.workspace.id, LINES.slice(2), "interview-2.md");
  const insight = async (body: Record<string, unknown>) => {
    const res = await call("POST", "/api/insights", { token: ws.owner.token, body: { workspace_id: ws.workspace.id, ...body } });
    expect(res.status, res.text).toBe(201);
    return res.body.id as string;
  };
  const insights = [
    await insight({ insight_type: "pain_point", title: "Uploads lose work when the app crashes", description: "Crashes during uploads lose the user's work.", severity: "critical", quotes: [{ text: LINES[0], source_id: s1, speaker: "P1" }] }),
    await insight({ insight_type: "pain_point", title: "CSV exports are too slow", description: "Exports take minutes and users give up.", severity: "high", quotes: [{ text: LINES[1], source_id: s1 }] }),
    await insight({ insight_type: "feature_request", title: "Offline mode for site visits", description: "Field workers want to work offline.", severity: "medium", quotes: [{ text: LINES[2], source_id: s2, speaker: "P2" }] }),
  ];
  return { ws, conv, sources: [s1, s2], insights };
}

afterEach(() => setTaskRunner(localTaskRunner()));

describe("POST /api/tasks/spawn", () => {
  let ws: Ws;
  let conv: string;
  beforeAll(async () => {
    ws = await newWorkspace("Spawn");
    await topUp(ws.owner.id, 20);
    conv = await conversation(ws.owner.token, ws.workspace.id);
  });

  it("answers 201 with the canonical record, pending, its execution started", async () => {
    const res = await spawn(ws, conv, { task_type: "research", prompt: "What do users struggle with?" });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String), workspace_id: ws.workspace.id, conversation_id: conv, task_type: "research", prompt: "What do users struggle with?",
      target_document_id: null, status: "pending", result_summary: null, result_data: {}, error: null, created_at: expect.any(String),
      started_at: null, completed_at: null, progress_pct: 0, phase: "pending", message: expect.any(String), heartbeat_at: null,
      timeout_seconds: 300, created_by: ws.owner.id,
    });
    await settled(ws.owner.token, res.body.id);
  });

  it("422 for a malformed body: no prompt, an unknown or internal type, a prompt over 10,000 characters, extra fields", async () => {
    const bad = [
      { task_type: "research" },
      { task_type: "research", prompt: "   " },
      { task_type: "research_cycle", prompt: "x" },
      { task_type: "telepathy", prompt: "x" },
      { task_type: "research", prompt: "x".repeat(10_001) },
      { task_type: "research", prompt: "x", extra: 1 },
      { task_type: "research", prompt: "x", target_document_id: "not-a-uuid" },
    ];
    for (const body of bad) expectEnvelope(await spawn(ws, conv, body), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("POST", "/api/tasks/spawn", { token: ws.owner.token, body: { workspace_id: ws.workspace.id, task_type: "research", prompt: "x" } }), 422, "VALIDATION_ERROR");
  });

  it("422 naming the id for a conversation that is not the caller's in this workspace, or a document of another workspace", async () => {
    const other = await newWorkspace("Elsewhere");
    const foreignConv = await conversation(other.owner.token, other.workspace.id);
    const res = await spawn(ws, foreignConv, { task_type: "research", prompt: "x" });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors).toEqual([expect.objectContaining({ loc: ["body", "conversation_id"] })]);
    // A member's own conversation is private: another member cannot attach a task to it.
    const member = await newUser();
    await call("POST", `/api/workspaces/${ws.workspace.id}/members`, { token: ws.owner.token, body: { email: member.email, role: "member" } });
    expectEnvelope(await spawn(ws, conv, { task_type: "research", prompt: "x" }, member.token), 422, "VALIDATION_ERROR");
    const doc = await call("POST", "/api/documents", { token: other.owner.token, body: { workspace_id: other.workspace.id, document_type: "prd", title: "Theirs", content: "# Theirs" } });
    const withDoc = await spawn(ws, conv, { task_type: "research", prompt: "x", target_document_id: doc.body.id });
    expectEnvelope(withDoc, 422, "VALIDATION_ERROR");
    expect(withDoc.body.errors).toEqual([expect.objectContaining({ loc: ["body", "target_document_id"] })]);
  });

  it("403 FORBIDDEN for a non-member (and for a workspace that does not exist)", async () => {
    const outsider = await newUser();
    expectEnvelope(await spawn(ws, conv, { task_type: "research", prompt: "x" }, outsider.token), 403, "FORBIDDEN");
    const res = await call("POST", "/api/tasks/spawn", { token: outsider.token, body: { workspace_id: randomUUID(), conversation_id: conv, task_type: "research", prompt: "x" } });
    expectEnvelope(res, 403, "FORBIDDEN");
  });

  it("403 FORBIDDEN (a plan gate) for fs_research below the Power plan (spec 02 has_fs_researcher)", async () => {
    const res = await spawn(ws, conv, { task_type: "fs_research", prompt: "onboarding" });
    expectEnvelope(res, 403, "FORBIDDEN");
    expect(res.body).toMatchObject({ feature: "has_fs_researcher", plan: "trial", required_plan: "power" });
  });

  it("402 before anything is created when the account cannot carry the task's run; 402 for a lapsed subscription", async () => {
    const poor = await newWorkspace("No credits");
    const pconv = await conversation(poor.owner.token, poor.workspace.id);
    await db().entities.billingAccount.patch({ user_id: poor.owner.id }).set({ quota_remaining: 0 }).go();
    const res = await spawn(poor, pconv, { task_type: "research", prompt: "x" });
    expectEnvelope(res, 402, "USAGE_LIMIT_EXCEEDED");
    expect(res.body.reason).toBe("credits_exhausted");
    expect((await call("GET", "/api/tasks", { token: poor.owner.token, query: { workspace_id: poor.workspace.id } })).body.total).toBe(0);
    await setAccount(poor.owner.id, { status: "cancelled" });
    expectEnvelope(await spawn(poor, pconv, { task_type: "research", prompt: "x" }), 402, "SUBSCRIPTION_REQUIRED");
  });
});

describe("GET /api/tasks, /api/tasks/{id}, /status", () => {
  let ws: Ws;
  let ids: string[];
  beforeAll(async () => {
    ws = await newWorkspace("Lists");
    await topUp(ws.owner.id, 50);
    const conv = await conversation(ws.owner.token, ws.workspace.id);
    // Held before they start: they stay pending (the runner's Run step waits), so the list has two statuses.
    const held = gate();
    setTaskRunner(localTaskRunner({ handlers: { Run: async (input) => (await held.opened, realRun(input)) } }));
    ids = [];
    for (let i = 0; i < 22; i++) ids.push(await spawned(ws, conv, { task_type: "research", prompt: `Question ${i}` }));
    await call("POST", `/api/tasks/${ids[0]}/cancel`, { token: ws.owner.token, body: {} });
    setTaskRunner(localTaskRunner());
    held.open();
    await Promise.all(ids.slice(1).map((id) => settled(ws.owner.token, id)));
  }, 180_000);

  const list = (query: Record<string, string | number | undefined>) => call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, ...query } });

  it("lists newest first, 20 by default, up to 100, with offset and the total", async () => {
    const first = await list({});
    expect(first.status, first.text).toBe(200);
    expect(first.body.total).toBe(22);
    expect(first.body.tasks).toHaveLength(20);
    const created = first.body.tasks.map((t: { created_at: string }) => t.created_at);
    expect(created).toEqual([...created].sort().reverse());
    expect(first.body.tasks[0].id).toBe(ids[21]);
    const rest = await list({ offset: 20, limit: 100 });
    expect(rest.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[1], ids[0]]);
    expect((await list({ limit: 1 })).body.tasks).toHaveLength(1);
  });

  it("reads the tasks of the page whole, and of the others only what orders and counts them", async () => {
    const { dynamoClient } = await import("../../core/db/client");
    const seen: { command: string; input: any }[] = [];
    const name = "taskListReads";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (JSON.stringify(args.input).includes(ws.workspace.id)) seen.push({ command: String(context.commandName), input: args.input });
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await list({ limit: 2, offset: 1 });
      expect(res.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[20], ids[19]]);
      expect(res.body.tasks[0]).toMatchObject({ status: "completed", result_summary: expect.any(String) });
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    const queries = seen.filter((c) => /Query/.test(c.command));
    expect(queries.length).toBeGreaterThan(0);
    for (const q of queries) expect(q.input.ProjectionExpression).toEqual(expect.any(String));
    const batch = seen.filter((c) => /BatchGet/.test(c.command) && !JSON.stringify(c.input).includes("member"));
    expect(batch.flatMap((b) => Object.values(b.input.RequestItems as Record<string, { Keys: unknown[] }>).flatMap((r) => r.Keys))).toHaveLength(2);
  });

  it("a task the id index does not know yet (it lags its table) is found a moment later, not answered 404", async () => {
    const { forgetLocations } = await import("../../core/workspace");
    forgetLocations();
    const lag = idIndexLags(ids[5]!);
    try {
      const res = await call("GET", `/api/tasks/${ids[5]}/status`, { token: ws.owner.token });
      expect(res.status, res.text).toBe(200);
    } finally {
      lag.restore();
    }
    expect(lag.hidden()).toBe(1);
  });

  it("filters by status", async () => {
    const cancelled = await list({ status: "cancelled" });
    expect(cancelled.body).toMatchObject({ total: 1, tasks: [expect.objectContaining({ id: ids[0], status: "cancelled" })] });
    expect((await list({ status: "completed" })).body.total).toBe(21);
    expect((await list({ status: "running" })).body.total).toBe(0);
  });

  it("422 for a bad query (limit over 100 or under 1, negative offset, unknown status, no workspace)", async () => {
    for (const q of [{ limit: 101 }, { limit: 0 }, { offset: -1 }, { status: "done" }] as Record<string, string | number>[]) expectEnvelope(await list(q), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("GET", "/api/tasks", { token: ws.owner.token }), 422, "VALIDATION_ERROR");
  });

  it("403 on the list for a non-member; 404 on a task for a non-member, exactly as for an id that does not exist", async () => {
    const outsider = await newUser();
    expectEnvelope(await call("GET", "/api/tasks", { token: outsider.token, query: { workspace_id: ws.workspace.id } }), 403, "FORBIDDEN");
    for (const suffix of ["", "/status"]) {
      const theirs = await call("GET", `/api/tasks/${ids[1]}${suffix}`, { token: outsider.token });
      const none = await call("GET", `/api/tasks/${randomUUID()}${suffix}`, { token: outsider.token });
      expectEnvelope(theirs, 404, "NOT_FOUND");
      expect(theirs.body.detail).toBe(none.body.detail);
      expectEnvelope(await call("GET", `/api/tasks/not-a-uuid${suffix}`, { token: ws.owner.token }), 422, "VALIDATION_ERROR");
    }
  });

  it("GET /status answers the progress event's shape (spec 02: the same shape), GET /{id} the canonical record", async () => {
    const status = await call("GET", `/api/tasks/${ids[1]}/status`, { token: ws.owner.token });
    expect(status.status).toBe(200);
    expect(Object.keys(status.body).sort()).toEqual(Object.keys(TaskProgress.shape).sort());
    expect(status.body).toMatchObject({ id: ids[1], status: "completed", task_type: "research", progress_pct: 100, phase: "complete", error: null });
    expect(status.body.completed_at).toEqual(expect.any(String));
    const task = await call("GET", `/api/tasks/${ids[1]}`, { token: ws.owner.token });
    expect(task.body).toMatchObject({ id: ids[1], status: "completed", result_summary: expect.any(String), prompt: "Question 1" });
  });
});

describe("GET /api/tasks reads slim index entries, not the tasks' results", () => {
  let ws: Ws;
  let ids: string[];
  /** About 60 KB of result per task: the list must not pay for it to count and order the tasks. */
  const RESULT = "r".repeat(60_000);
  const TASKS = 30;
  beforeAll(async () => {
    ws = await newWorkspace("Large results");
    const base = Date.parse("2026-01-01T00:00:00.000Z");
    ids = [];
    for (let i = 0; i < TASKS; i++) {
      const id = randomUUID();
      ids.push(id);
      await db().entities.task.create({ id, workspace_id: ws.workspace.id, task_type: "research", prompt: `Big ${i}`, status: i % 3 === 0 ? "failed" : "completed", timeout_seconds: 600, created_by: ws.owner.id, created_at: new Date(base + i * 1000).toISOString(), result_summary: `Summary ${i}`, result_data: { report: RESULT } }).go();
    }
  }, 120_000);

  /** The DynamoDB reads of one list request on this workspace, with the read units each consumed (test/support/read-units.ts). */
  async function measured(query: Record<string, string | number>) {
    const { result: res, reads } = await readsDuring(ws.workspace.id, () => call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, ...query } }));
    expect(res.status, res.text).toBe(200);
    return { res, reads };
  }

  it("counts and orders the workspace's tasks from a few read units, and reads whole only the page's tasks", async () => {
    // A first listing (a workspace created today has its index mark, so its tasks are listed from the index at once).
    expect((await call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id } })).body.total).toBe(TASKS);
    const { res, reads } = await measured({ limit: 2, offset: 3 });
    expect(res.body.total).toBe(TASKS);
    expect(res.body.tasks.map((t: { id: string }) => t.id)).toEqual([ids[TASKS - 4], ids[TASKS - 5]]);
    expect(res.body.tasks[0].result_data).toEqual({ report: RESULT });

    const queries = reads.filter((r) => /Query/.test(r.command));
    const batches = reads.filter((r) => /BatchGet/.test(r.command));
    const queryUnits = queries.reduce((n, r) => n + r.units, 0);
    const queryBytes = queries.reduce((n, r) => n + r.bytes, 0);
    const batchUnits = batches.reduce((n, r) => n + r.units, 0);
    console.info(`GET /api/tasks over ${TASKS} tasks of ~60 KB: ${queries.length} Query page(s), ${queryUnits} RCU, ${queryBytes} B returned; batch get ${batchUnits} RCU; all reads ${JSON.stringify(reads)}`);
    // Only the slim index is queried: its entries hold no result. A partition Query (the old list) reads every task
    // whole, ~1.8 MB here: hundreds of read units, whatever its projection returns. (DynamoDB Local cuts even the
    // index's pages at 1 MB of the tasks' whole size, so it may answer in two pages where DynamoDB answers in one;
    // the read units are the index entries'.)
    expect(queryUnits).toBeGreaterThan(0);
    expect(queryUnits).toBeLessThan(5);
    for (const q of queries) expect(q.index).toBe("gsi4");
    // The whole items are the page's two, read by key.
    expect(batches.reduce((n, r) => n + r.keys, 0)).toBe(2);
    // Every read of the request together stays far below one task's worth per listed task.
    expect(reads.reduce((n, r) => n + r.units, 0)).toBeLessThan(batchUnits + 10);
  });

  it("filters by status and pages with offset and limit over the index, newest first", async () => {
    const failed = ids.filter((_, i) => i % 3 === 0).reverse();
    const { res, reads } = await measured({ status: "failed", limit: 3, offset: 2 });
    expect(res.body.total).toBe(failed.length);
    expect(res.body.tasks.map((t: { id: string; status: string }) => [t.id, t.status])).toEqual(failed.slice(2, 5).map((id) => [id, "failed"]));
    const queries = reads.filter((r) => /Query/.test(r.command));
    expect(queries.reduce((n, r) => n + r.units, 0)).toBeLessThan(5);
    for (const q of queries) expect(q.index).toBe("gsi4");
    const past = await call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, status: "failed", offset: failed.length } });
    expect(past.body).toEqual({ tasks: [], total: failed.length });
  });

  it("leaves out of a status-filtered page a task whose status moved off the filter after the index was read", async () => {
    const failed = ids.filter((_, i) => i % 3 === 0).reverse();
    const moved = failed[0]!;
    const { dynamoClient } = await import("../../core/db/client");
    const name = "statusMovesBeforePageRead";
    // The index is eventually consistent: between its Query and the page's read by key, the task completes (here,
    // just before the page's BatchGet goes out).
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (/^(BatchGet|Get)/.test(String(context.commandName)) && JSON.stringify(args.input).includes(moved)) {
          await db().entities.task.patch({ workspace_id: ws.workspace.id, id: moved }).set({ status: "completed" }).go();
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      const res = await call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, status: "failed", limit: 3 } });
      expect(res.status, res.text).toBe(200);
      expect(res.body.tasks.map((t: { id: string; status: string }) => [t.id, t.status])).toEqual(failed.slice(1, 3).map((id) => [id, "failed"]));
    } finally {
      dynamoClient().middlewareStack.remove(name);
      await db().entities.task.patch({ workspace_id: ws.workspace.id, id: moved }).set({ status: "failed" }).go();
    }
  });
});

describe("POST /api/tasks/{id}/cancel", () => {
  let ws: Ws;
  let conv: string;
  beforeAll(async () => {
    ws = await newWorkspace("Cancel");
    await topUp(ws.owner.id, 50);
    conv = await conversation(ws.owner.token, ws.workspace.id);
  });
  const cancel = (id: string, token = ws.owner.token) => call("POST", `/api/tasks/${id}/cancel`, { token, body: {} });

  it("pending → cancelled; its execution never works (the claim is refused) and the conversation hears of it", async () => {
    const held = gate();
    const ran: unknown[] = [];
    setTaskRunner(localTaskRunner({ handlers: { Run: async (input) => (await held.opened, ran.push(await realRun(input)), ran.at(-1)) } }));
    const id = await spawned(ws, conv, { task_type: "research", prompt: "Hold me" });
    const res = await cancel(id);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id, status: "cancelled", completed_at: expect.any(String) });
    held.open();
    await waitFor(async () => ran.length === 1);
    expect(ran[0]).toMatchObject({ outcome: "superseded" });
    expect((await readTask(ws.workspace.id, id))!.status).toBe("cancelled");
    const messages = await call("GET", `/api/chat/conversations/${conv}/messages`, { token: ws.owner.token });
    expect(messages.body.map((m: { content: string }) => m.content)).toContainEqual(expect.stringMatching(new RegExp(`task \\[task ${id}\\] was cancelled`)));
  });

  it("409 INVALID_STATE for completed, failed and cancelled tasks; 404 for an outsider or an unknown id", async () => {
    const done = await spawned(ws, conv, { task_type: "research", prompt: "Finish" });
    await settled(ws.owner.token, done);
    const completed = await cancel(done);
    expectEnvelope(completed, 409, "INVALID_STATE");
    expect(completed.body.status).toBe("completed");
    const failedId = await spawned(ws, conv, { task_type: "recommendation", prompt: "No insights here" });
    expect(await settled(ws.owner.token, failedId)).toMatchObject({ status: "failed", error: expect.stringContaining("no insights") });
    expectEnvelope(await cancel(failedId), 409, "INVALID_STATE");
    const held = gate();
    setTaskRunner(localTaskRunner({ handlers: { Run: async (input) => (await held.opened, realRun(input)) } }));
    const c = await spawned(ws, conv, { task_type: "research", prompt: "Twice" });
    expect((await cancel(c)).status).toBe(200);
    expectEnvelope(await cancel(c), 409, "INVALID_STATE");
    held.open();
    const outsider = await newUser();
    expectEnvelope(await cancel(done, outsider.token), 404, "NOT_FOUND");
    expectEnvelope(await cancel(randomUUID()), 404, "NOT_FOUND");
  });

  it("a pending task cancelled gives its spawn's reservation back: ten cancelled on a trial account (5 credits), the eleventh is spawned", async () => {
    const trial = await newWorkspace("Trial cancels");
    const tconv = await conversation(trial.owner.token, trial.workspace.id);
    const held = gate();
    setTaskRunner(localTaskRunner({ handlers: { Run: async (input) => (await held.opened, realRun(input)) } }));
    const ids: string[] = [];
    try {
      for (let i = 0; i < 10; i++) {
        ids.push(await spawned(trial, tconv, { task_type: "research", prompt: `Cancel me ${i}` }));
        expect((await cancel(ids.at(-1)!, trial.owner.token)).status).toBe(200);
      }
      // Each held 0.5 credits until it was cancelled: without their return the trial's 5 are all held (402).
      const eleventh = await spawn(trial, tconv, { task_type: "research", prompt: "The eleventh" });
      expect(eleventh.status, eleventh.text).toBe(201);
      ids.push(eleventh.body.id);
      expect((await cancel(eleventh.body.id, trial.owner.token)).status).toBe(200);
    } finally {
      held.open();
    }
    for (const id of ids) expect(await holdOf(trial.owner.id, id)).toBeNull();
    expect(await reservedOf(trial.owner.id)).toBe(0);
  });

  it("a task whose operation refuses to start (no insights, no completed source) gives its spawn's reservation back when it fails", async () => {
    const bare = await newWorkspace("Nothing to work on");
    const bconv = await conversation(bare.owner.token, bare.workspace.id);
    for (const task_type of ["recommendation", "synthesis"]) {
      const id = await spawned(bare, bconv, { task_type, prompt: "Nothing here" });
      expect(await settled(bare.owner.token, id)).toMatchObject({ status: "failed" });
      expect(await holdOf(bare.owner.id, id)).toBeNull();
    }
    expect(await reservedOf(bare.owner.id)).toBe(0);
  });

  it("a research cycle's task cancelled while its night record's write fails: 200 cancelled (not a 500 a retry turns into 409); the sweeper settles the record", async () => {
    const { dynamoClient } = await import("../../core/db/client");
    const { cycleOf } = await import("../../core/cycle");
    const mine = await newWorkspace("Cycle cancel");
    const date = "2026-11-22";
    const taskId = randomUUID();
    const watchAt = new Date(Date.now() + TaskSettings.staleMs()).toISOString();
    await db().entities.researchCycle.create({ workspace_id: mine.workspace.id, date, status: "running", attempts: 1, task_id: taskId, cutoff_at: new Date().toISOString(), retry: "watch", retry_at: watchAt }).go();
    await db().entities.task.create({ id: taskId, workspace_id: mine.workspace.id, task_type: "research_cycle", prompt: "Overnight research cycle", status: "pending", timeout_seconds: 600, created_by: mine.owner.id, cycle_date: date, attempt: 1 }).go();
    const name = "failCycleRecordOnCancel";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        if (/Update/.test(String(context.commandName)) && JSON.stringify(args.input).includes(`cycle#${date}`)) throw Object.assign(new Error("lost connection"), { name: "NetworkingError" });
        return next(args);
      },
      { step: "initialize", name },
    );
    let res: Awaited<ReturnType<typeof cancel>>;
    try {
      res = await cancel(taskId, mine.owner.token);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: taskId, status: "cancelled" });
    expect(await cycleOf(mine.workspace.id, date)).toMatchObject({ status: "running" });
    // The sweeper's watch of running cycles gives the record its task's outcome once its time comes.
    const swept = await sweepTasks({ workspaceId: mine.workspace.id, now: Date.parse(watchAt) + 1000 });
    expect(swept.cycles.settled).toBe(1);
    expect(await cycleOf(mine.workspace.id, date)).toMatchObject({ status: "failed", error: "Cancelled by a member of the workspace" });
  });

  it("a cancel racing the completion: exactly one of them wins, each time", async () => {
    const held = gate();
    setTaskRunner(localTaskRunner({ handlers: { Run: async () => held.opened } }));
    const outcomes: string[] = [];
    for (let i = 0; i < 12; i++) {
      const id = await spawned(ws, conv, { task_type: "research", prompt: `Race ${i}` });
      const running = await claimAttempt(ws.workspace.id, id, 1);
      expect(running?.status).toBe("running");
      const [completed, cancelled] = await Promise.all([completeTask(ws.workspace.id, id, 1, { summary: "done", data: {} }), cancel(id)]);
      const final = (await readTask(ws.workspace.id, id))!;
      if (completed) {
        expect(cancelled.status).toBe(409);
        expect(final.status).toBe("completed");
      } else {
        expect(cancelled.status).toBe(200);
        expect(final.status).toBe("cancelled");
      }
      outcomes.push(final.status);
    }
    held.open();
    expect(outcomes.every((s) => s === "completed" || s === "cancelled")).toBe(true);
  });
});

describe("each task type does its work", () => {
  let r: Awaited<ReturnType<typeof researchedWorkspace>>;
  beforeAll(async () => {
    r = await researchedWorkspace("Typed tasks");
  }, 120_000);

  it("research: the agent loop's answer, citing the workspace's insights; charged as one run of the task", async () => {
    const id = await spawned(r.ws, r.conv, { task_type: "research", prompt: "What do users struggle with?" });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", phase: "complete", progress_pct: 100 });
    expect(done.result_data.tools).toContain("search_insights");
    expect(done.result_data.insight_ids.length).toBeGreaterThan(0);
    for (const i of done.result_data.insight_ids) expect(r.insights).toContain(i);
    const run = (await runsOf(r.ws.workspace.id)).find((x) => x.id === runIdOf(id));
    expect(run).toMatchObject({ agent_type: "chat", tool_name: "task_research", status: "success", credits_charged: 0.5 });
  });

  it("validation_kit: an assumption map, a research plan and an interview guide as documents, about the target document", async () => {
    const prd = await call("POST", "/api/documents", {
      token: r.ws.owner.token,
      body: { workspace_id: r.ws.workspace.id, document_type: "prd", title: "Offline field notes", content: `# Offline field notes\n\n${LINES[3]} Users will trust the sync.`, related_insight_ids: [r.insights[2]] },
    });
    const id = await spawned(r.ws, r.conv, { task_type: "validation_kit", prompt: "Validate offline notes", target_document_id: prd.body.id });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", phase: "complete", progress_pct: 100, target_document_id: prd.body.id });
    const docs = done.result_data.documents;
    const read = async (kind: string) => (await call("GET", `/api/documents/${docs[kind].id}`, { token: r.ws.owner.token })).body;
    const map = await read("assumption_map");
    expect(map).toMatchObject({ title: "Assumption map: Offline field notes", document_type: "memo", metadata: { validation_kit: "assumption_map", task_id: id, validates_document_id: prd.body.id } });
    // Every insight is an assumption; the document's own claim is one too; quotes are the insights' own, verbatim.
    expect(map.content).toContain("| # | Assumption | Importance | Evidence | Quadrant | Based on |");
    for (const insight of r.insights) expect(map.content).toContain(`insight ${insight}`);
    expect(map.content).toContain(LINES[3]);
    expect(map.content).toContain(`"${LINES[0]}" (P1)`);
    const plan = await read("research_plan");
    expect(plan.content).toContain(`document ${docs.assumption_map.id}`);
    expect(plan.content).toMatch(/Method: /);
    const guide = await read("interview_guide");
    expect(guide.content).toContain(`document ${docs.research_plan.id}`);
    expect(guide.content).toMatch(/Probe: another person told us "/);
    expect(done.result_data.assumptions.length).toBeGreaterThanOrEqual(4);
  });

  it("synthesis: the workspace's sources through the synthesis operation (its own charged run), unsynthesized first", async () => {
    const notes: string[] = [];
    for (const n of [10, 11]) {
      const file = await realFile(`va-mobile-app/interview-notes/2023-07-retention-study-participant-${n}.md`);
      const up = await uploadResearch(r.ws.owner.token, r.ws.workspace.id, file, "text/markdown");
      notes.push(up.body.id);
    }
    await waitFor(async () => {
      const list = await call("GET", "/api/research/sources", { token: r.ws.owner.token, query: { workspace_id: r.ws.workspace.id, processing_status: "completed" } });
      return list.body.total === 4;
    });
    const id = await spawned(r.ws, r.conv, { task_type: "synthesis", prompt: "Synthesize what is new" });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    // The sources no insight cites yet come first.
    expect(done.result_data.source_ids.slice(0, 2).sort()).toEqual([...notes].sort());
    expect(done.result_data.source_ids.sort()).toEqual([...r.sources, ...notes].sort());
    expect(done.result_data.insight_ids.length).toBeGreaterThan(0);
    const runs = await runsOf(r.ws.workspace.id);
    expect(runs.some((x) => x.agent_type === "synthesis" && x.status === "success")).toBe(true);
    // The spawn's reservation went back when the operation took over the charge.
    expect(runs.some((x) => x.id === runIdOf(id))).toBe(false);
  });

  it("recommendation: generated from the workspace's insights, appended to the target document", async () => {
    const doc = await call("POST", "/api/documents", { token: r.ws.owner.token, body: { workspace_id: r.ws.workspace.id, document_type: "memo", title: "Plan", content: "# Plan" } });
    const id = await spawned(r.ws, r.conv, { task_type: "recommendation", prompt: "Focus on reliability", target_document_id: doc.body.id });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    expect(done.result_data.recommendation_ids.length).toBeGreaterThanOrEqual(3);
    const after = await call("GET", `/api/documents/${doc.body.id}`, { token: r.ws.owner.token });
    expect(after.body.version).toBe(2);
    expect(after.body.content).toContain("## Recommendations");
    expect(after.body.content).toContain(`[recommendation ${done.result_data.recommendation_ids[0]}]`);
  });

  it("drafting: a new document of the type the prompt names; with a target document, that document is redrafted", async () => {
    const id = await spawned(r.ws, r.conv, { task_type: "drafting", prompt: "Write a spec for resumable uploads" });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    const doc = await call("GET", `/api/documents/${done.result_data.document.id}`, { token: r.ws.owner.token });
    expect(doc.body.document_type).toBe("spec");
    const target = await call("POST", "/api/documents", { token: r.ws.owner.token, body: { workspace_id: r.ws.workspace.id, document_type: "prd", title: "Exports", content: "# Exports\n\nTBD" } });
    const redraft = await settled(r.ws.owner.token, await spawned(r.ws, r.conv, { task_type: "drafting", prompt: "Redraft it for engineers", target_document_id: target.body.id }));
    expect(redraft, JSON.stringify(redraft)).toMatchObject({ status: "completed", result_data: { document: { id: target.body.id, redrafted: true } } });
    const after = await call("GET", `/api/documents/${target.body.id}`, { token: r.ws.owner.token });
    expect(after.body.version).toBe(2);
    expect(after.body.content).not.toBe("# Exports\n\nTBD");
    const versions = await call("GET", `/api/documents/${target.body.id}/versions`, { token: r.ws.owner.token });
    expect(JSON.stringify(versions.body)).toContain(`Before the background drafting task ${redraft.id}`);
  });
});

describe("fs_research (Power plan)", () => {
  const drive = new DriveStandIn();
  let r: Awaited<ReturnType<typeof researchedWorkspace>>;
  beforeAll(async () => {
    useDriveSettings(drive);
    drive.listen();
    r = await researchedWorkspace("File store research");
    await setAccount(r.ws.owner.id, { plan: "power", status: "active" });
  }, 120_000);
  afterAll(() => drive.close());

  it("without a file store: the workspace's sources, phases as spec 02 lists them, the closest passages verbatim", async () => {
    const id = await spawned(r.ws, r.conv, { task_type: "fs_research", prompt: "offline work on site visits" });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", phase: "complete", progress_pct: 100, timeout_seconds: TASK_TIMEOUT_SECONDS.fs_research });
    expect(done.result_data.origin).toBe("sources");
    expect(done.result_data.findings[0]).toMatchObject({ text: LINES[2], origin: { kind: "source", id: r.sources[1] } });
    for (const f of done.result_data.findings) expect(LINES).toContain(f.text);
  });

  it("with the file store connected: its files are searched and read, and the report cites them", async () => {
    drive.put({ name: "Site visit notes", mimeType: "application/vnd.google-apps.document", content: "Offline mode matters on site visits.\n\nThe tablet loses signal in the basement, so notes are retyped later." });
    drive.put({ name: "Budget", mimeType: "application/vnd.google-apps.spreadsheet", content: "item,cost\nhosting,120\n" });
    drive.put({ name: "offline photo.png", mimeType: "image/png", content: "\u0089PNG" });
    // Found by the search, then deleted before it is read (Drive answers 404): skipped, not the task's failure.
    const gone = drive.put({ name: "Old offline site notes", mimeType: "text/plain", content: "Offline site visits were discussed at length in this old note." });
    drive.fail({ match: new RegExp(`GET /drive/v3/files/${gone}$`), status: 404, reason: "notFound", times: 5 });
    await connectDrive(drive, r.ws.owner.token, r.ws.workspace.id);
    const id = await spawned(r.ws, r.conv, { task_type: "fs_research", prompt: "offline site visits" });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    expect(done.result_data.origin).toBe("filestore");
    expect(done.result_data.read.map((f: { name: string }) => f.name)).toContain("Site visit notes");
    expect(done.result_data.skipped).toEqual(expect.arrayContaining([expect.objectContaining({ name: "offline photo.png" }), expect.objectContaining({ name: "Old offline site notes" })]));
    expect(done.result_data.skipped).toHaveLength(2);
    expect(done.result_data.findings[0]).toMatchObject({ origin: { kind: "file", name: "Site visit notes" } });
    expect(done.result_data.report).toContain("File: Site visit notes");
  });
});

describe("the sweeper: a dead worker's task does not stay running", () => {
  let r: Awaited<ReturnType<typeof researchedWorkspace>>;
  beforeAll(async () => {
    r = await researchedWorkspace("Recovery");
  }, 120_000);

  it("a worker that dies after a step: the task is resumed by a new attempt, which skips the finished step", async () => {
    // The first attempt's worker dies (its execution and worker dropped, as kill -9 would) once its evidence step is on the task.
    firstAttemptDies(async (i, run) => {
      void run.catch(() => undefined);
      await waitFor(async () => ((await readTask(i.workspace_id, i.task_id))?.checkpoint as Record<string, unknown> | undefined)?.evidence);
    });
    const id = await spawned(r.ws, r.conv, { task_type: "validation_kit", prompt: "Validate exports" });
    // Its record says running, with the finished step on it; no execution of it runs any more.
    const stuck = await waitFor(async () => {
      const t = await readTask(r.ws.workspace.id, id);
      const dead = !(await taskRunner().isRunning({ task_id: id, attempt: 1 }));
      return t?.status === "running" && (t.checkpoint as Record<string, unknown> | undefined)?.evidence && dead ? t : null;
    });
    expect(stuck.attempt).toBe(1);
    // Within the staleness bound the sweeper leaves it; past it, it resumes it.
    expect((await sweepTasks({ workspaceId: r.ws.workspace.id })).resumed).toBe(0);
    const report = await sweepTasks({ workspaceId: r.ws.workspace.id, now: Date.now() + TaskSettings.staleMs() + 1000 });
    expect(report).toMatchObject({ resumed: 1, errors: [] });
    const done = await settled(r.ws.owner.token, id);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    expect((await readTask(r.ws.workspace.id, id))!.attempt).toBe(2);
    // The evidence step ran once (one agent run of the task); the three documents exist once.
    expect((await runsOf(r.ws.workspace.id)).filter((x) => x.tool_name === "task_validation_kit")).toHaveLength(1);
    const docs = await call("GET", "/api/documents", { token: r.ws.owner.token, query: { workspace_id: r.ws.workspace.id } });
    expect(docs.body.documents.filter((d: { metadata: { task_id?: string } }) => d.metadata.task_id === id)).toHaveLength(3);
  });

  it("a worker that dies after its draft was written but before the step was recorded: the resumed attempt finds the draft, one document", async () => {
    const { dynamoClient } = await import("../../core/db/client");
    const before = (await call("GET", "/api/documents", { token: r.ws.owner.token, query: { workspace_id: r.ws.workspace.id } })).body.total as number;
    const drafts = async () => (await runsOf(r.ws.workspace.id)).filter((x) => x.tool_name === "draft_document").length;
    const draftsBefore = await drafts();
    let taskId = "";
    // The first attempt's checkpoint of its draft step never lands (the worker dies at that moment, as kill -9 would).
    const name = "dropDraftCheckpoint";
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const input = JSON.stringify(args.input);
        if (taskId && /Update/.test(String(context.commandName)) && input.includes(taskId) && input.includes("checkpoint") && input.includes("draft") && (await readTask(r.ws.workspace.id, taskId))?.attempt === 1) {
          throw Object.assign(new Error("the worker died"), { name: "WorkerDied" });
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    firstAttemptDies(async (_, run) => {
      await run.catch(() => undefined);
    });
    try {
      taskId = await spawned(r.ws, r.conv, { task_type: "drafting", prompt: "Draft a PRD for offline site visits" });
      await waitFor(async () => !(await taskRunner().isRunning({ task_id: taskId, attempt: 1 })) || null);
      const stuck = (await readTask(r.ws.workspace.id, taskId))!;
      expect(stuck).toMatchObject({ status: "running", attempt: 1 });
      expect((stuck.checkpoint as Record<string, unknown> | undefined)?.draft).toBeUndefined();
      expect((await call("GET", "/api/documents", { token: r.ws.owner.token, query: { workspace_id: r.ws.workspace.id } })).body.total).toBe(before + 1);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(await sweepTasks({ workspaceId: r.ws.workspace.id, now: Date.now() + TaskSettings.staleMs() + 1000 })).toMatchObject({ resumed: 1 });
    const done = await settled(r.ws.owner.token, taskId);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed" });
    expect((await readTask(r.ws.workspace.id, taskId))!.attempt).toBe(2);
    expect((await call("GET", "/api/documents", { token: r.ws.owner.token, query: { workspace_id: r.ws.workspace.id } })).body.total).toBe(before + 1);
    // Found, not drafted (nor charged) again.
    expect(await drafts()).toBe(draftsBefore + 1);
  });

  it("a recommendation step run again under the task's id finds the set the first run wrote (no second set, no second run)", async () => {
    const { generate } = await import("../../core/recommendation/generate");
    const { taskItemId } = await import("../../core/task");
    const id = taskItemId(randomUUID(), "generate");
    const input = { workspace_id: r.ws.workspace.id, insight_ids: r.insights, focus_areas: ["uploads"] };
    const runs = async () => (await runsOf(r.ws.workspace.id)).filter((x) => x.tool_name === "generate_recommendations").length;
    const runsBefore = await runs();
    const first = await generate(r.ws.owner.id, input, { id });
    const again = await generate(r.ws.owner.id, input, { id });
    expect(first.count).toBeGreaterThan(0);
    expect(again.recommendations.map((x) => x.id).sort()).toEqual(first.recommendations.map((x) => x.id).sort());
    expect(await runs()).toBe(runsBefore + 1);
  });

  it("a task whose attempts are used up fails with the reason; a pending task whose execution never started is started", async () => {
    let starts = 0;
    const never = localTaskRunner({ handlers: { Run: () => new Promise(() => undefined) } });
    setTaskRunner({ ...never, start: async (input) => (starts++, never.start(input)) });
    const id = await spawned(r.ws, r.conv, { task_type: "research", prompt: "Never runs" });
    await waitFor(async () => starts === 1);
    // Each sweep past the bound finds its execution gone (dropped) and starts the next attempt, up to the most.
    for (let attempt = 1; attempt < TaskSettings.maxAttempts(); attempt++) {
      dropLocalExecution({ task_id: id, attempt });
      const report = await sweepTasks({ workspaceId: r.ws.workspace.id, now: Date.now() + TaskSettings.staleMs() + 1000 });
      expect(report, JSON.stringify(report)).toMatchObject({ resumed: 1 });
    }
    dropLocalExecution({ task_id: id, attempt: TaskSettings.maxAttempts() });
    const last = await sweepTasks({ workspaceId: r.ws.workspace.id, now: Date.now() + TaskSettings.staleMs() + 1000 });
    expect(last.failed).toBe(1);
    const task = (await readTask(r.ws.workspace.id, id))!;
    expect(task).toMatchObject({ status: "failed", attempt: TaskSettings.maxAttempts(), error: exhaustedError({ status: "pending", attempt: TaskSettings.maxAttempts() }, TaskSettings.staleMs() / 1000) });
    expect(starts).toBe(TaskSettings.maxAttempts());
    // It never ran: the spawn's reservation went back with its end.
    expect(await holdOf(r.ws.owner.id, id)).toBeNull();
    // Failed, it left the sweeper's index.
    expect((await sweepTasks({ workspaceId: r.ws.workspace.id, now: Date.now() + 10 * TaskSettings.staleMs() })).due).toBe(0);
  });
});

describe("a fault before the task is claimed does not fail a task that never started", () => {
  let ws: Ws;
  let conv: string;
  beforeAll(async () => {
    ws = await newWorkspace("Faults before the claim");
    await topUp(ws.owner.id, 20);
    conv = await conversation(ws.owner.token, ws.workspace.id);
  });
  const executionEnded = (id: string, attempt = 1) => waitFor(async () => !(await taskRunner().isRunning({ task_id: id, attempt })) || null);
  /** A runner whose Run step runs `first` on its first call, the real step after. */
  const firstCall = (first: (input: TaskExecutionInput) => Promise<unknown>) => {
    let calls = 0;
    const outcomes: unknown[] = [];
    setTaskRunner(localTaskRunner({ handlers: { Run: async (input) => (++calls === 1 ? first(input as TaskExecutionInput) : (outcomes.push(await realRun(input)), outcomes.at(-1))) } }));
    return { calls: () => calls, outcomes };
  };

  it("a worker that fails before its claim (a throttled read) leaves the task pending; the sweeper starts it again", async () => {
    const run = firstCall(async () => {
      throw Object.assign(new Error("Rate of requests exceeds the allowed throughput."), { name: "ThrottlingException" });
    });
    const id = await spawned(ws, conv, { task_type: "research", prompt: "Throttled at the claim" });
    await executionEnded(id);
    const left = (await readTask(ws.workspace.id, id))!;
    expect(left).toMatchObject({ status: "pending", attempt: 1 });
    expect(left.error).toBeUndefined();
    expect(left.started_at).toBeUndefined();
    expect(await holdOf(ws.owner.id, id)).not.toBeNull();
    const report = await sweepTasks({ workspaceId: ws.workspace.id, now: Date.now() + TaskSettings.staleMs() + 1000 });
    expect(report, JSON.stringify(report)).toMatchObject({ resumed: 1, errors: [] });
    expect(await settled(ws.owner.token, id)).toMatchObject({ status: "completed" });
    expect((await readTask(ws.workspace.id, id))!.attempt).toBe(2);
    expect(run.calls()).toBe(2);
  });

  it("Lambda's transient faults are retried by the Run state: the task runs at its first attempt", async () => {
    const run = firstCall(async () => {
      throw Object.assign(new Error("Lambda could not run the function"), { name: "Lambda.ServiceException" });
    });
    const id = await spawned(ws, conv, { task_type: "research", prompt: "Lambda faulted once" });
    await executionEnded(id);
    const done = (await readTask(ws.workspace.id, id))!;
    expect(done).toMatchObject({ status: "completed", attempt: 1 });
    expect(done.error).toBeUndefined();
    expect(run.calls()).toBe(2);
    expect(run.outcomes).toEqual([{ task_id: id, attempt: 1, outcome: "completed" }]);
  });

  it("a Run retried after its worker claimed the attempt runs no second worker of it (an attempt is claimed once); the sweeper resumes it", async () => {
    // The first invocation claims the attempt, then its runtime dies (Lambda.Unknown); the Run state retries it.
    const run = firstCall(async (input) => {
      expect(await claimAttempt(input.workspace_id, input.task_id, input.attempt)).toMatchObject({ status: "running" });
      throw Object.assign(new Error("The runtime exited"), { name: "Lambda.Unknown" });
    });
    const id = await spawned(ws, conv, { task_type: "research", prompt: "Claimed, then the runtime died" });
    await executionEnded(id);
    expect(run.outcomes).toEqual([{ task_id: id, attempt: 1, outcome: "superseded" }]);
    expect(await readTask(ws.workspace.id, id)).toMatchObject({ status: "running", attempt: 1 });
    expect(await claimAttempt(ws.workspace.id, id, 1)).toBeNull();
    expect(await sweepTasks({ workspaceId: ws.workspace.id, now: Date.now() + TaskSettings.staleMs() + 1000 })).toMatchObject({ resumed: 1 });
    expect(await settled(ws.owner.token, id)).toMatchObject({ status: "completed" });
    expect((await readTask(ws.workspace.id, id))!.attempt).toBe(2);
  });
});

/**
 * Complete a research cycle's task while the write of its night record fails (the SDK's own retries spent, or the
 * process stopped there): the task ends, the record does not.
 */
async function completeWithoutRecord(workspaceId: string, taskId: string, date: string, why: string, summary: string): Promise<void> {
  const { dynamoClient } = await import("../../core/db/client");
  const name = "failCycleRecordWrite";
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      if (/Update/.test(String(context.commandName)) && JSON.stringify(args.input).includes(`cycle#${date}`)) throw Object.assign(new Error(why), { name: "NetworkingError" });
      return next(args);
    },
    { step: "initialize", name },
  );
  try {
    await expect(completeTask(workspaceId, taskId, 1, { summary, data: { changes: { insights_created: [] } } })).rejects.toThrow(why);
  } finally {
    dynamoClient().middlewareStack.remove(name);
  }
}

describe("a research cycle's night record after its task ended", () => {
  it("takes the outcome when the task's end was written but its record's was not (Fail's write lands on the ended task)", async () => {
    const { failTask } = await import("../../core/task");
    const { cycleOf } = await import("../../core/cycle");
    const ws = await newWorkspace("Cycle record");
    const date = "2026-11-20";
    const taskId = randomUUID();
    await db().entities.researchCycle.create({ workspace_id: ws.workspace.id, date, status: "running", attempts: 1, task_id: taskId, cutoff_at: new Date().toISOString() }).go();
    await db().entities.task.create({ id: taskId, workspace_id: ws.workspace.id, task_type: "research_cycle", prompt: "Overnight research cycle", status: "running", timeout_seconds: 600, created_by: ws.owner.id, cycle_date: date, attempt: 1 }).go();
    // The completion is written; the record's write then fails (after the SDK's own retries).
    await completeWithoutRecord(ws.workspace.id, taskId, date, "lost connection", "Synthesized 3 new sources");
    expect(await cycleOf(ws.workspace.id, date)).toMatchObject({ status: "running" });
    // Step Functions' Catch runs Fail for the Run's error: the task has ended, and the record catches up.
    expect(await failTask(ws.workspace.id, taskId, "The task failed unexpectedly", 1)).toBeNull();
    expect(await readTask(ws.workspace.id, taskId)).toMatchObject({ status: "completed" });
    expect(await cycleOf(ws.workspace.id, date)).toMatchObject({ status: "completed", changes: { insights_created: [] } });
  });
});

describe("a research cycle's night record whose task ended without it (the writer stopped between the two writes)", () => {
  it("is settled by the sweeper's watch of running cycles, once its task has ended; looked at again while the task runs", async () => {
    const { dynamoClient } = await import("../../core/db/client");
    const { cycleOf } = await import("../../core/cycle");
    const { Config } = await import("../../core/config");
    const { GetItemCommand } = await import("@aws-sdk/client-dynamodb");
    const ws = await newWorkspace("Cycle record watch");
    const date = "2026-11-21";
    const taskId = randomUUID();
    const watchAt = new Date(Date.now() + TaskSettings.staleMs()).toISOString();
    await db().entities.researchCycle.create({ workspace_id: ws.workspace.id, date, status: "running", attempts: 1, task_id: taskId, cutoff_at: new Date().toISOString(), retry: "watch", retry_at: watchAt }).go();
    await db().entities.task.create({ id: taskId, workspace_id: ws.workspace.id, task_type: "research_cycle", prompt: "Overnight research cycle", status: "running", timeout_seconds: 600, created_by: ws.owner.id, cycle_date: date, attempt: 1 }).go();
    const later = Date.parse(watchAt) + 1000;

    // Due while its task still runs: nothing settled, the look moved a heartbeat window on.
    const running = await sweepTasks({ workspaceId: ws.workspace.id, now: later });
    expect(running.cycles.settled).toBe(0);
    const postponed = (await cycleOf(ws.workspace.id, date))!;
    expect(postponed).toMatchObject({ status: "running", retry: "watch" });
    expect(Date.parse(postponed.retry_at!)).toBe(later + TaskSettings.staleMs());

    // The completion is written; the process stops before the record's write (no Fail follows it).
    await completeWithoutRecord(ws.workspace.id, taskId, date, "process stopped", "Synthesized 2 new sources");
    expect(await cycleOf(ws.workspace.id, date)).toMatchObject({ status: "running" });

    // Not before its time; then the record takes the task's outcome and leaves the watch (its index keys gone).
    expect((await sweepTasks({ workspaceId: ws.workspace.id, now: later })).cycles.settled).toBe(0);
    const swept = await sweepTasks({ workspaceId: ws.workspace.id, now: Date.parse(postponed.retry_at!) + 1000 });
    expect(swept.cycles.settled).toBe(1);
    const settled = (await cycleOf(ws.workspace.id, date))!;
    expect(settled).toMatchObject({ status: "completed", changes: { insights_created: [] } });
    expect(settled.retry).toBeUndefined();
    const raw = await dynamoClient().send(new GetItemCommand({ TableName: Config.tableName(), Key: { pk: { S: `ws#${ws.workspace.id}` }, sk: { S: `cycle#${date}` } }, ConsistentRead: true }));
    expect(raw.Item).toBeDefined();
    expect(raw.Item!.gsi3pk).toBeUndefined();
    expect((await sweepTasks({ workspaceId: ws.workspace.id, now: Date.parse(postponed.retry_at!) + 10 * TaskSettings.staleMs() })).cycles.settled).toBe(0);
  });
});
