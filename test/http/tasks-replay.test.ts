/**
 * Background tasks that are replayed or whose end's writes fail (docs/decisions.md "Heartbeat and recovery", "Outcome
 * in the conversation"; "Task replays and outcome messages"), through the real handlers against DynamoDB Local:
 *
 * - a resumed attempt finds what a step of the dead attempt wrote before the step was recorded: the section a task
 *   appends to its target document, and a redraft of it (drafted, charged and saved once);
 * - the outcome message of an ended task is written once: retried when its write fails, not written twice when a
 *   response is lost, and written by the sweeper when the end's writer could not.
 */
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { localDocumentEngine } from "../../core/document/engine";
import { call, newWorkspace } from "../support/api";
import { waitFor } from "../support/multipart";
import { sourceWith } from "../support/sources";
import { conversation, firstAttemptDies, settled, spawned } from "../support/tasks";
import { topUp } from "../support/billing";
import { db } from "../../core/db/service";
import { dynamoClient } from "../../core/db/client";
import { runsOf } from "../../core/agent";
import { outcomeMessageIdOf, readTask, setTaskRunner, taskRunner } from "../../core/task";
import { OUTCOME_WINDOW_MS, sweepTasks } from "../../core/task/sweeper";
import { TaskSettings } from "../../core/task/settings";
import { localTaskRunner } from "../../local/tasks";

type Ws = Awaited<ReturnType<typeof newWorkspace>>;
/** A middleware of the table's client (the SDK's initialize step). */
type Mw = (next: (args: { input: object }) => Promise<unknown>, context: { commandName?: string }) => (args: { input: object }) => Promise<unknown>;

/** Run `body` with a middleware on the table's client; removed after, whatever happens. */
async function withMiddleware<T>(name: string, mw: Mw, body: () => Promise<T>): Promise<T> {
  dynamoClient().middlewareStack.add(mw as never, { step: "initialize", name });
  try {
    return await body();
  } finally {
    dynamoClient().middlewareStack.remove(name);
  }
}

/** The worker of the task's first attempt dies at its write of the checkpoint holding `step`: the step's write landed, its record did not. */
const diesAtCheckpointOf = (ws: Ws, step: string, taskId: () => string): Mw => (next, context) => async (args) => {
  const input = JSON.stringify(args.input);
  const id = taskId();
  if (id && /Update/.test(String(context.commandName)) && input.includes(id) && input.includes(`"${step}":{`) && (await readTask(ws.workspace.id, id))?.attempt === 1) {
    throw Object.assign(new Error("the worker died"), { name: "WorkerDied" });
  }
  return next(args);
};

/** The worker of the task's first attempt dies right after its checkpoint holding `step` was written. */
const diesAfterCheckpointOf = (ws: Ws, step: string, taskId: () => string): Mw => (next, context) => async (args) => {
  const input = JSON.stringify(args.input);
  const id = taskId();
  const hit = !!id && /Update/.test(String(context.commandName)) && input.includes(id) && input.includes(`"${step}":{`) && (await readTask(ws.workspace.id, id))?.attempt === 1;
  const out = await next(args);
  if (hit) throw Object.assign(new Error("the worker died"), { name: "WorkerDied" });
  return out;
};

/** The conversation's messages about a task's end. */
async function outcomeMessages(token: string, conv: string, taskId: string) {
  const res = await call("GET", `/api/chat/conversations/${conv}/messages`, { token });
  expect(res.status, res.text).toBe(200);
  return (res.body as { id: string; content: string; inferred_intent: string | null }[]).filter((m) => m.content.includes(`[task ${taskId}]`));
}

/** Sweep past the staleness bound: a dead worker's task is resumed, an owed outcome message is due. */
const sweepLater = (ws: Ws, ms = TaskSettings.staleMs() + 1000) => sweepTasks({ workspaceId: ws.workspace.id, now: Date.now() + ms });

afterEach(() => setTaskRunner(localTaskRunner()));

describe("a resumed attempt finds what the dead attempt's step wrote before the step was recorded", () => {
  let ws: Ws;
  let conv: string;
  beforeAll(async () => {
    ws = await newWorkspace("Task replays");
    await topUp(ws.owner.id, 100);
    conv = await conversation(ws.owner.token, ws.workspace.id);
    const source = await sourceWith(ws.owner.token, ws.workspace.id, ["I lose my work when the app crashes during an upload.", "Exports to CSV take forever."], "interview.md");
    const res = await call("POST", "/api/insights", {
      token: ws.owner.token,
      body: { workspace_id: ws.workspace.id, insight_type: "pain_point", title: "Uploads lose work when the app crashes", description: "Crashes during uploads lose the user's work.", severity: "critical", quotes: [{ text: "I lose my work when the app crashes during an upload.", source_id: source }] },
    });
    expect(res.status, res.text).toBe(201);
  }, 120_000);

  it("research with a target document: the section is appended once (one new version), not again by the resumed attempt", async () => {
    const doc = await call("POST", "/api/documents", { token: ws.owner.token, body: { workspace_id: ws.workspace.id, document_type: "memo", title: "Upload notes", content: "# Upload notes" } });
    expect(doc.status, doc.text).toBe(201);
    let taskId = "";
    firstAttemptDies();
    await withMiddleware("dieAtTargetCheckpoint", diesAtCheckpointOf(ws, "target", () => taskId), async () => {
      taskId = await spawned(ws, conv, { task_type: "research", prompt: "What do users struggle with in uploads?", target_document_id: doc.body.id });
      await waitFor(async () => !(await taskRunner().isRunning({ task_id: taskId, attempt: 1 })) || null);
      const stuck = (await readTask(ws.workspace.id, taskId))!;
      expect(stuck).toMatchObject({ status: "running", attempt: 1 });
      expect((stuck.checkpoint as Record<string, unknown>).target).toBeUndefined();
      // The section was appended before the worker died.
      expect((await call("GET", `/api/documents/${doc.body.id}`, { token: ws.owner.token })).body.version).toBe(2);
    });
    expect(await sweepLater(ws)).toMatchObject({ resumed: 1 });
    const done = await settled(ws.owner.token, taskId);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", result_data: { target_document: { document_id: doc.body.id, version: 2 } } });
    expect((await readTask(ws.workspace.id, taskId))!.attempt).toBe(2);
    const after = (await call("GET", `/api/documents/${doc.body.id}`, { token: ws.owner.token })).body;
    expect(after.version).toBe(2);
    expect(after.content.match(/^## Research: /gm)).toHaveLength(1);
    // Marked once, invisibly (an HTML comment under the heading), so the heading reads as written.
    expect(after.content.match(new RegExp(`^<!-- task:${taskId} -->$`, "gm"))).toHaveLength(1);
    expect(after.content).not.toContain(`[task ${taskId}]`);
    // The extracted blocks carry the section's heading and text, never the mark.
    const extracted = await call("POST", "/api/blocks/extract", { token: ws.owner.token, body: { workspace_id: ws.workspace.id, document_id: doc.body.id } });
    expect(extracted.status, extracted.text).toBe(200);
    expect(JSON.stringify(extracted.body.blocks)).toMatch(/Research: /);
    expect(JSON.stringify(extracted.body.blocks)).not.toContain(`task:${taskId}`);
  });

  it("drafting with a target document: redrafted, charged and saved as a revision once, not again by the resumed attempt", async () => {
    const doc = await call("POST", "/api/documents", { token: ws.owner.token, body: { workspace_id: ws.workspace.id, document_type: "prd", title: "Exports", content: "# Exports\n\nTBD" } });
    expect(doc.status, doc.text).toBe(201);
    const charged = async () => (await db().entities.billingAccount.get({ user_id: ws.owner.id }).go({ consistent: true })).data!.charged;
    const chargedBefore = await charged();
    let taskId = "";
    firstAttemptDies();
    await withMiddleware("dieAtDraftCheckpoint", diesAtCheckpointOf(ws, "draft", () => taskId), async () => {
      taskId = await spawned(ws, conv, { task_type: "drafting", prompt: "Redraft it for engineers", target_document_id: doc.body.id });
      await waitFor(async () => !(await taskRunner().isRunning({ task_id: taskId, attempt: 1 })) || null);
      const stuck = (await readTask(ws.workspace.id, taskId))!;
      expect(stuck).toMatchObject({ status: "running", attempt: 1 });
      expect((stuck.checkpoint as Record<string, unknown> | undefined)?.draft).toBeUndefined();
      expect((await call("GET", `/api/documents/${doc.body.id}`, { token: ws.owner.token })).body.version).toBe(2);
    });
    expect(await sweepLater(ws)).toMatchObject({ resumed: 1 });
    const done = await settled(ws.owner.token, taskId);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", result_data: { document: { id: doc.body.id, version: 2, redrafted: true } } });
    expect((await readTask(ws.workspace.id, taskId))!.attempt).toBe(2);
    expect((await call("GET", `/api/documents/${doc.body.id}`, { token: ws.owner.token })).body.version).toBe(2);
    const runs = (await runsOf(ws.workspace.id)).filter((r) => r.tool_name === "task_drafting" && (r.input_data as { task_id?: string }).task_id === taskId);
    expect(runs).toHaveLength(1);
    expect(runs[0]!.credits_charged).toBe(0.5);
    expect(await charged()).toBe(chargedBefore + 0.5);
    const versions = await call("GET", `/api/documents/${doc.body.id}/versions`, { token: ws.owner.token });
    expect(JSON.stringify(versions.body).split(`Before the background drafting task ${taskId}`)).toHaveLength(2);
  });

  it("drafting with a target document: a worker that dies after its draft was kept writes that draft on resume, without drafting again", async () => {
    const doc = await call("POST", "/api/documents", { token: ws.owner.token, body: { workspace_id: ws.workspace.id, document_type: "prd", title: "Crash uploads", content: "# Crash uploads\n\nTBD" } });
    expect(doc.status, doc.text).toBe(201);
    const prompt = "Redraft it for the support team";
    const drafts = vi.spyOn(localDocumentEngine, "draft");
    const draftsOfTask = () => drafts.mock.calls.filter(([input]) => input.user_instructions === prompt).length;
    let taskId = "";
    let kept = "";
    try {
      firstAttemptDies();
      await withMiddleware("dieAfterRedraftKept", diesAfterCheckpointOf(ws, "redraft_content", () => taskId), async () => {
        taskId = await spawned(ws, conv, { task_type: "drafting", prompt, target_document_id: doc.body.id });
        await waitFor(async () => !(await taskRunner().isRunning({ task_id: taskId, attempt: 1 })) || null);
        const stuck = (await readTask(ws.workspace.id, taskId))!;
        expect((stuck.checkpoint as Record<string, { content?: string }>).redraft_content?.content).toEqual(expect.any(String));
        kept = (stuck.checkpoint as Record<string, { content: string }>).redraft_content!.content;
        // Drafted and kept, not written.
        expect((await call("GET", `/api/documents/${doc.body.id}`, { token: ws.owner.token })).body.version).toBe(1);
      });
      expect(draftsOfTask()).toBe(1);
      expect(await sweepLater(ws)).toMatchObject({ resumed: 1 });
      const done = await settled(ws.owner.token, taskId);
      expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", result_data: { document: { id: doc.body.id, version: 2, redrafted: true } } });
      expect(draftsOfTask()).toBe(1);
      // The resumed attempt wrote the draft the dead one kept (a completed task keeps no checkpoint: read while stuck).
      expect((await call("GET", `/api/documents/${doc.body.id}`, { token: ws.owner.token })).body.content).toBe(kept);
      const runs = (await runsOf(ws.workspace.id)).filter((r) => r.tool_name === "task_drafting" && (r.input_data as { task_id?: string }).task_id === taskId);
      expect(runs).toHaveLength(1);
    } finally {
      drafts.mockRestore();
    }
  });
});

describe("an ended task's outcome message in its conversation", () => {
  let ws: Ws;
  beforeAll(async () => {
    ws = await newWorkspace("Task outcomes");
    await topUp(ws.owner.id, 100);
  });

  /** Fails the outcome message's write for `conv` (`fails` times; `afterCommit`: its response is lost instead). */
  const failOutcomeWrite = (conv: string, fails: number, opts: { afterCommit?: boolean } = {}) => {
    const seen = { tries: 0 };
    const mw: Mw = (next, context) => async (args) => {
      const input = JSON.stringify(args.input);
      if (!/TransactWrite/.test(String(context.commandName)) || !input.includes(conv) || !input.includes("task_completed")) return next(args);
      seen.tries++;
      if (seen.tries > fails) return next(args);
      if (opts.afterCommit) await next(args);
      throw Object.assign(new Error("socket hang up"), { name: "NetworkingError" });
    };
    return { mw, seen };
  };

  it("a failed write of it is tried again: the conversation gets the message", async () => {
    const conv = await conversation(ws.owner.token, ws.workspace.id);
    const { mw, seen } = failOutcomeWrite(conv, 1);
    await withMiddleware("failOutcomeOnce", mw, async () => {
      const id = await spawned(ws, conv, { task_type: "research", prompt: "What do users say?" });
      expect(await settled(ws.owner.token, id)).toMatchObject({ status: "completed" });
      const messages = await waitFor(async () => {
        const found = await outcomeMessages(ws.owner.token, conv, id);
        return found.length ? found : null;
      }, 10_000);
      expect(messages).toHaveLength(1);
      expect(messages[0]).toMatchObject({ id: outcomeMessageIdOf(id), inferred_intent: "task_completed" });
      expect(messages[0]!.content).toMatch(new RegExp(`task \\[task ${id}\\] completed`));
      expect(seen.tries).toBe(2);
    });
  });

  it("a write whose response was lost is not written again by the retry: one message", async () => {
    const conv = await conversation(ws.owner.token, ws.workspace.id);
    const { mw, seen } = failOutcomeWrite(conv, 1, { afterCommit: true });
    await withMiddleware("loseOutcomeResponse", mw, async () => {
      const id = await spawned(ws, conv, { task_type: "research", prompt: "What do users say about exports?" });
      expect(await settled(ws.owner.token, id)).toMatchObject({ status: "completed" });
      await waitFor(async () => !(await taskRunner().isRunning({ task_id: id, attempt: 1 })) || null);
      expect(seen.tries).toBe(2);
      expect(await outcomeMessages(ws.owner.token, conv, id)).toHaveLength(1);
      // Nothing is owed any more: the sweeper finds nothing to write.
      expect((await sweepLater(ws)).outcomes).toMatchObject({ due: 0 });
    });
  });

  it("a message the end could not write (every try failed) is written by the sweeper once it is due, once", async () => {
    const conv = await conversation(ws.owner.token, ws.workspace.id);
    const { mw, seen } = failOutcomeWrite(conv, Number.POSITIVE_INFINITY);
    let id = "";
    await withMiddleware("failOutcomeAlways", mw, async () => {
      id = await spawned(ws, conv, { task_type: "research", prompt: "What do users say about crashes?" });
      expect(await settled(ws.owner.token, id)).toMatchObject({ status: "completed" });
      await waitFor(async () => !(await taskRunner().isRunning({ task_id: id, attempt: 1 })) || null);
    });
    expect(seen.tries).toBeGreaterThan(1);
    expect(await outcomeMessages(ws.owner.token, conv, id)).toHaveLength(0);
    // Not before it is due (the end's writer may still be trying); then written, and the task leaves the sweep.
    expect((await sweepTasks({ workspaceId: ws.workspace.id })).outcomes).toMatchObject({ written: 0 });
    expect((await sweepLater(ws)).outcomes).toMatchObject({ due: 1, written: 1 });
    const messages = await outcomeMessages(ws.owner.token, conv, id);
    expect(messages).toHaveLength(1);
    expect(messages[0]).toMatchObject({ id: outcomeMessageIdOf(id), inferred_intent: "task_completed" });
    expect((await sweepLater(ws)).outcomes).toMatchObject({ due: 0, written: 0 });
    expect((await readTask(ws.workspace.id, id))!.sweep).toBeUndefined();
  });

  it("the sweeper gives a message up once its task ended longer ago than the window (a cancelled task's, here)", async () => {
    const conv = await conversation(ws.owner.token, ws.workspace.id);
    const mw: Mw = (next, context) => async (args) => {
      if (/TransactWrite/.test(String(context.commandName)) && JSON.stringify(args.input).includes(conv)) throw Object.assign(new Error("socket hang up"), { name: "NetworkingError" });
      return next(args);
    };
    setTaskRunner(localTaskRunner({ handlers: { Run: () => new Promise(() => undefined) } }));
    let id = "";
    await withMiddleware("failOutcomeForConversation", mw, async () => {
      id = await spawned(ws, conv, { task_type: "research", prompt: "Cancel me" });
      expect((await call("POST", `/api/tasks/${id}/cancel`, { token: ws.owner.token, body: {} })).status).toBe(200);
    });
    expect((await readTask(ws.workspace.id, id))!.sweep).toBe("outcome");
    const late = await sweepLater(ws, OUTCOME_WINDOW_MS + 60_000);
    expect(late.outcomes).toMatchObject({ due: 1, written: 0, dropped: 1 });
    expect(await outcomeMessages(ws.owner.token, conv, id)).toHaveLength(0);
    expect((await readTask(ws.workspace.id, id))!.sweep).toBeUndefined();
  });

  it("a task whose conversation is gone leaves the sweep with nothing written", async () => {
    const conv = await conversation(ws.owner.token, ws.workspace.id);
    setTaskRunner(localTaskRunner({ handlers: { Run: () => new Promise(() => undefined) } }));
    const id = await spawned(ws, conv, { task_type: "research", prompt: "Orphan" });
    const gone = await call("DELETE", `/api/chat/conversations/${conv}`, { token: ws.owner.token });
    expect(gone.status, gone.text).toBeLessThan(300);
    expect((await call("POST", `/api/tasks/${id}/cancel`, { token: ws.owner.token, body: {} })).status).toBe(200);
    expect((await readTask(ws.workspace.id, id))!.sweep).toBeUndefined();
    expect((await sweepLater(ws)).outcomes).toMatchObject({ due: 0 });
  });
});
