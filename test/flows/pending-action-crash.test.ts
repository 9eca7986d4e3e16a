/**
 * Exactly-once execution across crashes, for every gated tool (DESIGN.md 6.2; spec 01 Pending action status, whose
 * "an approved row can be left without a result if the process restarts" ours must not do). The embedded runtime
 * (`local/start.ts`) runs as a child process group on a data directory of its own (DynamoDB Local persists there),
 * with a 2 s executor lease and a 1 s sweep, started once and restarted after each crash.
 *
 * Each case makes one pending action of each of the nine gated tools (create_insight, update_insight,
 * create_recommendation, update_recommendation_status, draft_document, update_document, update_block, run_synthesis,
 * generate_recommendations), approves them over HTTP, and kills the runtime with SIGKILL:
 * - right after the approvals: `kill -9` of the whole process group, wherever the executions are;
 * - after the claim, before the tool's write commits, after the tool returned: the crash hook (core/crash-point.ts,
 *   armed through a file while the runtime runs) holds every execution at that point until all nine are there, and
 *   then the runtime SIGKILLs itself, so each of the nine is interrupted at exactly that point.
 * The runtime is started again, unarmed, and every row must end executed, with the workspace holding exactly what one
 * execution of it writes, every item it wrote tagged with its id (test/support/gated-tool-cases.ts). run_synthesis
 * killed before its commit dies holding the workspace's synthesis lock (5 minutes): its replay must take the lock
 * over, not wait for it or fail. run_synthesis runs in a workspace of its own per case, so each run creates insights.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatedTool } from "../../core/agent/tools";
import { db } from "../../core/db/service";
import { createPending, type PendingActionItem } from "../../core/pending-action";
import type { CrashPoint } from "../../core/crash-point";
import { setAccount, topUp } from "../support/billing";
import { multipart, realFile, waitFor } from "../support/multipart";
import { startCrashableRuntime, START_TIMEOUT, type CrashableRuntime, type RuntimeProcess } from "../support/runtime-process";
import { TOOL_CASES, type Api, type CaseEnv } from "../support/gated-tool-cases";

const CASES: { name: string; hook: CrashPoint | null; attempts: number | null }[] = [
  // Wherever the executions were: claimed or not, written or not; the number of claims varies.
  { name: "kill -9 of the whole runtime right after the approvals", hook: null, attempts: null },
  // Claimed by the run that died, then by the one after the restart.
  { name: "after the claim", hook: "after-claim", attempts: 2 },
  // The AI calls made, the synthesis lock held, nothing written: the replay does it all, once.
  { name: "just before the tool's write and the flip commit", hook: "before-commit", attempts: 2 },
  // The write and the flip committed together: after the restart there is nothing left to do.
  { name: "after the tool returned, before the executor's own bookkeeping", hook: "after-execute", attempts: 1 },
];

let crashable: CrashableRuntime;
let runtime: RuntimeProcess;
let token: string;
let userId: string;
let workspaceId: string;
/** One workspace with one completed source per case, for run_synthesis. */
const synthesisSpaces: { workspaceId: string; sourceId: string }[] = [];

async function request(method: string, path: string, init: { body?: unknown; raw?: { data: Buffer; contentType: string } } = {}) {
  const headers: Record<string, string> = { authorization: `Bearer ${token}` };
  let body: string | Uint8Array | undefined;
  if (init.raw) {
    headers["content-type"] = init.raw.contentType;
    body = new Uint8Array(init.raw.data);
  } else if (init.body !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(init.body);
  }
  const res = await fetch(`${runtime.base}${path}`, { method, headers, body });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
}
const api: Api = (method, path, body) => request(method, path, body === undefined ? {} : { body });

/** A workspace with a completed research source (a real interview), over HTTP. */
async function synthesisSpace(name: string) {
  const ws = await api("POST", "/api/workspaces", { name });
  expect(ws.status).toBe(201);
  const { name: fileName, data } = await realFile("va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md");
  const raw = await multipart({ workspace_id: ws.body.id, source_type: "interview", title: fileName }, { name: fileName, type: "text/markdown", data });
  const up = await request("POST", "/api/research/upload", { raw });
  expect(up.status, JSON.stringify(up.body)).toBe(201);
  await waitFor(async () => {
    const s = await api("GET", `/api/research/sources/${up.body.id}`);
    if (s.body.processing_status === "failed") throw new Error(`source failed: ${s.body.processing_error}`);
    return s.body.processing_status === "completed";
  }, 90_000, 200);
  return { workspaceId: ws.body.id as string, sourceId: up.body.id as string };
}

/** A pending action made in this process, as the agent loop makes it, against the child's DynamoDB. */
async function pend(env: CaseEnv, tool: string, input: Record<string, unknown>): Promise<string> {
  const ctx = { userId, workspaceId: env.workspaceId, missionId: randomUUID(), sessionId: null, attachmentIds: [] };
  return (await createPending(ctx, gatedTool(tool)!, input)).id;
}

const rowOf = async (workspace: string, id: string) => (await db().entities.pendingAction.get({ workspace_id: workspace, id }).go({ consistent: true })).data;

/** Arm the runtime's crash hook at `at` for `arrivals` executions, or disarm it (it reads its file at each point). */
const arm = (spec: { at: CrashPoint; arrivals: number } | null) => crashable.arm(spec);

beforeAll(async () => {
  crashable = await startCrashableRuntime("r2d-crash", { PENDING_ACTION_LEASE_SECONDS: "2", PENDING_ACTION_SWEEP_INTERVAL_SECONDS: "1" });
  runtime = crashable.runtime;

  token = await runtime.token({ email: `crash-${randomUUID().slice(0, 8)}@example.com`, name: "Crash Tester" });
  const me = await api("GET", "/api/auth/me");
  expect(me.status).toBe(200);
  userId = me.body.id;
  // A plan with room for the five workspaces and the documents of the cases, and credits enough that no AI run
  // (nor a replay of one) is refused.
  await setAccount(userId, { plan: "power", status: "active" });
  await topUp(userId, 500);
  const ws = await api("POST", "/api/workspaces", { name: "Crash test" });
  expect(ws.status).toBe(201);
  workspaceId = ws.body.id;
  synthesisSpaces.push(...(await Promise.all(CASES.map((_, i) => synthesisSpace(`Crash synthesis ${i + 1}`)))));
}, START_TIMEOUT + 120_000);

afterAll(async () => {
  await crashable?.dispose();
}, 60_000);

describe("a crash never loses nor doubles an approved pending action, whatever its tool", () => {
  it.each(CASES.map((c, i) => ({ ...c, index: i })))("crash $name", async ({ hook, attempts, index }) => {
    const space = synthesisSpaces[index]!;
    const actions: { tool: (typeof TOOL_CASES)[number]; env: CaseEnv; prepared: Awaited<ReturnType<(typeof TOOL_CASES)[number]["setup"]>>; id: string }[] = [];
    for (const tool of TOOL_CASES) {
      const env: CaseEnv = tool.tool === "run_synthesis" ? { api, ...space } : { api, workspaceId };
      const prepared = await tool.setup(env);
      actions.push({ tool, env, prepared, id: await pend(env, tool.tool, prepared.input) });
    }
    if (hook) await arm({ at: hook, arrivals: actions.length });
    for (const a of actions) {
      const approved = await api("POST", `/api/pending-actions/${a.id}/approve`, {});
      expect(approved.status, JSON.stringify(approved.body)).toBe(200);
      expect(approved.body.status).toBe("approved");
    }
    // With the hook the runtime kills itself once all nine are at the point (what is left of the group goes with
    // it); without it, the whole group is killed right after the last approval answered.
    if (hook) await runtime.exited(90_000);
    await runtime.crash();
    await arm(null);
    await runtime.start();

    for (const a of actions) {
      const row = await waitFor(async () => {
        const r = await rowOf(a.env.workspaceId, a.id);
        return r && (r.status === "executed" || r.status === "failed") ? r : null;
      }, 90_000, 200);
      expect({ tool: a.tool.tool, status: row.status, error: row.error }).toEqual({ tool: a.tool.tool, status: "executed", error: undefined });
      expect(row.executed_at).toBeTruthy();
      if (attempts !== null) expect({ tool: a.tool.tool, attempts: row.attempts }).toEqual({ tool: a.tool.tool, attempts });
      await a.tool.verify(a.env, a.id, row as PendingActionItem, a.prepared);
      const shown = await api("GET", `/api/pending-actions/${a.id}`);
      expect(shown.body).toMatchObject({ status: "executed", result: row.result, error: null });
    }
  }, 300_000);
});
