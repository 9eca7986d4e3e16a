/**
 * Background tasks on the Bedrock engine (issue #23 point 1; spec 02 "Task timeouts": validation_kit 240 s, others
 * 300 s, "on timeout the status becomes failed"): the real worker drives the real Bedrock SDK against a stand-in
 * Bedrock Runtime that holds the model's answer open, as a slow model would. Past the task's timeout (fake timers) the
 * state machine's Run state times out (States.Timeout, the same definition Step Functions runs) and the task ends
 * failed with "... timed out after Ns"; the worker stops its model call. A cancel of a running task stops it at once.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { call, newWorkspace } from "../support/api";
import { waitFor } from "../support/multipart";
import { topUp } from "../support/billing";
import { recorded, refusedTurn, toolCallTurn, type Frame } from "../support/bedrock-stream";
import { startBedrockServer, type BedrockServer } from "../support/bedrock-server";
import { runsOf } from "../../core/agent";
import { db } from "../../core/db/service";
import { readTask, runIdOf, TASK_TIMEOUT_SECONDS } from "../../core/task";
import { DEFAULT_CATALOGUE, modelCostUsd } from "../../core/ai/catalogue";
import { creditsFor } from "../../core/billing/credits";

process.env.AI_ENGINE = "bedrock";
process.env.AWS_ACCESS_KEY_ID = "AKIDEXAMPLE";
process.env.AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
process.env.AWS_REGION = "us-east-1";

let bedrock: BedrockServer;
let owner: Awaited<ReturnType<typeof newWorkspace>>["owner"];
let ws: string;
let conv: string;

beforeAll(async () => {
  bedrock = await startBedrockServer();
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = bedrock.url;
  const w = await newWorkspace("Tasks on Bedrock");
  owner = w.owner;
  ws = w.workspace.id;
  await topUp(owner.id, 1_000);
  conv = (await call("POST", "/api/chat/conversations", { token: owner.token, body: { workspace_id: ws } })).body.id;
});
afterAll(async () => {
  await bedrock.close();
});

/** Spawn a task whose first model call the stand-in holds open; resolves once that call is in. */
async function spawnHeld(task_type: string, prompt: string) {
  bedrock.reply({ frames: recorded("claude-v2-text.json").frames, holdAfter: 1 });
  const before = bedrock.requests.length;
  const res = await call("POST", "/api/tasks/spawn", { token: owner.token, body: { workspace_id: ws, conversation_id: conv, task_type, prompt } });
  expect(res.status, res.text).toBe(201);
  await waitFor(async () => bedrock.requests.length === before + 1, 30_000, 20);
  const running = await readTask(ws, res.body.id);
  expect(running?.status).toBe("running");
  return { id: res.body.id as string, request: bedrock.requests[before]! };
}

const settled = (id: string) =>
  waitFor(async () => {
    const t = await readTask(ws, id);
    return t && ["completed", "failed", "cancelled"].includes(t.status) ? t : null;
  }, 30_000, 20);

describe("timeouts (fake timers)", () => {
  for (const [task_type, seconds] of [["research", TASK_TIMEOUT_SECONDS.research], ["validation_kit", TASK_TIMEOUT_SECONDS.validation_kit]] as const) {
    it(`${task_type}: past ${seconds} s the task ends failed, "timed out after ${seconds}s", and its model call stops`, async () => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
      try {
        const { id, request } = await spawnHeld(task_type, "What do users struggle with?");
        // Just before the timeout nothing has happened.
        await vi.advanceTimersByTimeAsync(seconds * 1000 - 2000);
        expect((await readTask(ws, id))!.status).toBe("running");
        await vi.advanceTimersByTimeAsync(3000);
        const done = await settled(id);
        expect(done).toMatchObject({ status: "failed", error: `Task timed out after ${seconds}s` });
        expect(done.error!.endsWith(`timed out after ${seconds}s`)).toBe(true);
        expect(done.completed_at).toEqual(expect.any(String));
        await request.closed; // the worker's abort reached the SDK's connection
        expect(request.wasClosedEarly()).toBe(true);
        // The run is charged as a run that stopped early (at least spec 02's minimum, with the cut call's estimated
        // use: Bedrock bills the request it accepted), never as a success.
        await waitFor(async () => (await runsOf(ws)).find((r) => r.id === runIdOf(id)), 10_000, 20);
        const run = (await runsOf(ws)).find((r) => r.id === runIdOf(id))!;
        expect(run.status).not.toBe("success");
        expect(run.tokens_used).toBeGreaterThan(0);
        expect(run.credits_charged).toBeGreaterThanOrEqual(0.25);
      } finally {
        vi.useRealTimers();
      }
    });
  }
});

describe("cancel of a running task", () => {
  it("cancelled at once: the execution and its worker stop, the model call is closed, nothing more is written", async () => {
    const { id, request } = await spawnHeld("research", "Tell me everything");
    const res = await call("POST", `/api/tasks/${id}/cancel`, { token: owner.token, body: {} });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ status: "cancelled" });
    await request.closed;
    expect(request.wasClosedEarly()).toBe(true);
    await waitFor(async () => (await runsOf(ws)).find((r) => r.id === runIdOf(id)), 10_000, 20);
    const after = (await readTask(ws, id))!;
    expect(after.status).toBe("cancelled");
    expect(after.error).toBeUndefined();
    expect(after.completed_at).toBe(res.body.completed_at);
    // Charged as cancelled (spec 02: at least the minimum, with the cut call's estimated use) from the spawn's hold,
    // once: the cancel left the hold to the run that was using it (nothing released first, then charged again from
    // the balance), and no hold is left.
    const run = (await runsOf(ws)).find((r) => r.id === runIdOf(id))!;
    expect(run.tokens_used).toBeGreaterThan(0);
    expect(run.credits_charged).toBeGreaterThanOrEqual(0.25);
    const ledger = (key: string) => db().entities.creditLedger.get({ user_id: owner.id, key }).go({ consistent: true }).then((r) => r.data);
    const settlement = await waitFor(() => ledger(`run#${runIdOf(id)}#settle`), 10_000, 20);
    expect(settlement).toMatchObject({ charged: run.credits_charged, shortfall: 0 });
    expect(settlement.held).toBeGreaterThan(run.credits_charged);
    expect(await ledger(`run#${runIdOf(id)}#release`)).toBeNull();
    expect((await db().entities.creditHold.get({ user_id: owner.id, run_id: runIdOf(id) }).go({ consistent: true })).data).toBeNull();
  });
});

describe("a task whose agent run fails after some model calls", () => {
  it("is recorded and charged with the calls it made (it was recorded at 0 tokens, 0 cost)", async () => {
    // A tool call, then the second call refused in its stream (not transient: no retry), and the run fails.
    const toolTurn = toolCallTurn("tooluse_task_1", "search_insights", { query: "sign-in", limit: 3 }, { inputTokens: 3800, outputTokens: 70 });
    bedrock.reply({ frames: toolTurn }, { frames: refusedTurn() });
    const res = await call("POST", "/api/tasks/spawn", { token: owner.token, body: { workspace_id: ws, conversation_id: conv, task_type: "research", prompt: "What do users say about sign-in?" } });
    expect(res.status, res.text).toBe(201);
    const run = await waitFor(async () => (await runsOf(ws)).find((r) => r.id === runIdOf(res.body.id)), 30_000, 20);
    const mid = DEFAULT_CATALOGUE.find((m) => m.tier === "mid")!;
    expect(run).toMatchObject({ status: "failed", tokens_used: 3870 });
    expect(run.cost_usd).toBeCloseTo(modelCostUsd(mid, 3800, 70), 6);
    expect(run.credits_charged).toBe(creditsFor(modelCostUsd(mid, 3800, 70), "failed"));
    expect(run.credits_charged).toBeGreaterThan(0.25);
  });
});
