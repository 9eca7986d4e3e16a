/**
 * A process killed between an approved action's flip to executed and its run's settle does not leave the work
 * uncharged (DESIGN.md 6.2, 6.3). The embedded runtime (`local/start.ts`) runs as a child process group on a data
 * directory of its own, as in test/flows/pending-action-crash.test.ts; its crash hook (core/crash-point.ts, armed
 * through a file) SIGKILLs it at `before-settle`: draft_document's document and the action's flip have committed
 * inside the run, the run's reservation is still open. After the restart the hold is aged past 20 minutes and the
 * credit sweeper's own handler (functions/events/credit-sweeper.ts, what EventBridge and the runtime run) sweeps: the
 * account must be charged exactly what an uncrashed draft of the same kind was, with one settle entry and no hold, and
 * the run's agent-run record written as the uncrashed run's was.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatedTool } from "../../core/agent/tools";
import { idFor } from "../../core/db/agent-write";
import { db } from "../../core/db/service";
import { balanceOf } from "../../core/billing/ledger";
import { STALE_HOLD_MS } from "../../core/billing/sweeper";
import { createPending } from "../../core/pending-action";
import type { CrashPoint } from "../../core/crash-point";
import { handler as creditSweeper } from "../../functions/events/credit-sweeper";
import { setAccount, topUp } from "../support/billing";
import { waitFor } from "../support/multipart";
import { startCrashableRuntime, START_TIMEOUT, type CrashableRuntime, type RuntimeProcess } from "../support/runtime-process";
import { toolCase, type Api, type CaseEnv } from "../support/gated-tool-cases";


let crashable: CrashableRuntime;
let runtime: RuntimeProcess;
let token: string;
let userId: string;
let env: CaseEnv;

const api: Api = async (method, path, body) => {
  const res = await fetch(`${runtime.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
};

/** Arm the runtime's crash hook (it reads its file at each point), or disarm it. */
const arm = (spec: { at: CrashPoint; arrivals?: number } | null) => crashable.arm(spec);

const rowOf = async (id: string) => (await db().entities.pendingAction.get({ workspace_id: env.workspaceId, id }).go({ consistent: true })).data;
const holdsOf = async () => (await db().entities.creditHold.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" })).data;
const entriesOf = async (runId: string) =>
  (await db().entities.creditLedger.query.byUser({ user_id: userId }).go({ consistent: true, pages: "all" })).data.filter((l) => l.run_id === runId);

/** The run's ledger entries (kinds) and its settle's figures. */
async function chargeOf(runId: string) {
  const entries = await entriesOf(runId);
  const s = entries.find((l) => l.kind === "settle");
  return { kinds: entries.map((l) => l.kind).sort(), settle: s && { credits: s.credits, held: s.held, charged: s.charged, shortfall: s.shortfall, delta: s.delta, tokens: s.tokens, cost_usd: s.cost_usd } };
}

/** The agent-run records of one run (what `GET /api/admin/agent-runs` lists), with the fields its charge determines. */
async function recordsOf(runId: string) {
  const { data } = await db().entities.agentRun.query.byWorkspace({ workspace_id: env.workspaceId }).go({ consistent: true, pages: "all" });
  return data
    .filter((r) => r.id === runId)
    .map((r) => ({ user_id: r.user_id, agent_type: r.agent_type, tool_name: r.tool_name, engine: r.engine, status: r.status, tokens_used: r.tokens_used, cost_usd: r.cost_usd, credits_charged: r.credits_charged }));
}

/** An approved draft_document action (made as the agent loop makes it, approved over HTTP); its run's derived id. */
async function pendingDraft(): Promise<{ id: string; runId: string }> {
  const { input } = await toolCase("draft_document").setup(env);
  const ctx = { userId, workspaceId: env.workspaceId, missionId: randomUUID(), sessionId: null, attachmentIds: [] };
  const { id } = await createPending(ctx, gatedTool("draft_document")!, input);
  return { id, runId: idFor(id, "agent-run") };
}
async function approve(id: string) {
  const res = await api("POST", `/api/pending-actions/${id}/approve`, {});
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}
const executed = (id: string) => waitFor(async () => ((await rowOf(id))?.status === "executed" ? true : null), 90_000, 200);

beforeAll(async () => {
  crashable = await startCrashableRuntime("r2d-charge-crash", { PENDING_ACTION_LEASE_SECONDS: "2", PENDING_ACTION_SWEEP_INTERVAL_SECONDS: "1" });
  runtime = crashable.runtime;

  token = await runtime.token({ email: `charge-crash-${randomUUID().slice(0, 8)}@example.com`, name: "Charge Crash" });
  const me = await api("GET", "/api/auth/me");
  expect(me.status).toBe(200);
  userId = me.body.id;
  await setAccount(userId, { plan: "power", status: "active" });
  await topUp(userId, 100);
  const ws = await api("POST", "/api/workspaces", { name: "Charge crash" });
  expect(ws.status).toBe(201);
  env = { api, workspaceId: ws.body.id };
}, START_TIMEOUT + 60_000);

afterAll(async () => {
  await crashable?.dispose();
}, 60_000);

describe("an approved action killed between its flip and its settle is charged once, by the credit sweeper", () => {
  it("kill -9 at before-settle, restart, the hold goes stale: settled for what an uncrashed run is charged", async () => {
    // The reference: the same kind of action, uncrashed.
    const reference = await pendingDraft();
    let before = await balanceOf(userId);
    await approve(reference.id);
    await executed(reference.id);
    await waitFor(async () => ((await chargeOf(reference.runId)).settle ? true : null), 30_000, 100);
    const expected = await chargeOf(reference.runId);
    expect(expected.kinds).toEqual(["reserve", "settle"]);
    const expectedUsed = (await balanceOf(userId)).total_used - before.total_used;
    expect(expectedUsed).toBe(expected.settle!.charged);
    expect(await holdsOf()).toEqual([]);
    const expectedRecords = await recordsOf(reference.runId);
    expect(expectedRecords).toMatchObject([{ status: "success", credits_charged: expected.settle!.charged }]);

    // The crash: the runtime kills itself once the run, its document and its flip stored, is about to settle.
    const crashed = await pendingDraft();
    before = await balanceOf(userId);
    await arm({ at: "before-settle", arrivals: 1 });
    await approve(crashed.id);
    await runtime.exited(90_000);
    await runtime.crash();
    await arm(null);
    await runtime.start();

    // The work is delivered, the reservation left open, nothing charged yet.
    expect((await rowOf(crashed.id))?.status).toBe("executed");
    const { data: doc } = await db().entities.document.get({ workspace_id: env.workspaceId, id: idFor(crashed.id, "document") }).go({ consistent: true });
    expect(doc?.pending_action_id).toBe(crashed.id);
    const [hold] = await holdsOf();
    expect(hold?.run_id).toBe(crashed.runId);
    expect((await chargeOf(crashed.runId)).kinds).toEqual(["reserve"]);
    // The process died before the run's record too (it is written beside the settle).
    expect(await recordsOf(crashed.runId)).toEqual([]);

    // Twenty minutes on (the hold's age moved back: the sweeper reads the `open` index by creation time).
    await db().entities.creditHold.delete({ user_id: userId, run_id: crashed.runId }).go();
    await db().entities.creditHold.put({ ...hold!, created_at: new Date(Date.now() - STALE_HOLD_MS - 60_000).toISOString() }).go();
    const swept = await creditSweeper();

    expect(await chargeOf(crashed.runId)).toEqual(expected);
    expect(await holdsOf()).toEqual([]);
    const after = await balanceOf(userId);
    expect(after.total_used - before.total_used).toBe(expectedUsed);
    expect(after.reserved).toBe(0);
    expect(swept.holds).toMatchObject({ stale: 1, settled: 1, released: 0 });
    // The sweep also wrote the run's record, as the uncrashed run's.
    expect(await recordsOf(crashed.runId)).toEqual(expectedRecords);
    // Once: another sweep finds nothing.
    expect((await creditSweeper()).holds).toMatchObject({ stale: 0 });
    expect(await chargeOf(crashed.runId)).toEqual(expected);
    expect(await recordsOf(crashed.runId)).toEqual(expectedRecords);
  }, 300_000);
});
