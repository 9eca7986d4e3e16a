/**
 * Exactly-once execution across crashes (DESIGN.md 6.2; spec 01 Pending action status, whose "an approved row can
 * be left without a result if the process restarts" ours must not do). The embedded runtime (`local/start.ts`) runs
 * as a child process on a data directory of its own (DynamoDB Local persists there), with a 2 s executor lease and a
 * 1 s sweep. For each point of failure a pending create_insight is approved over HTTP and the child is killed:
 * - before execution: `kill -9` of the whole process group right after approve answers;
 * - after the claim, and after the tool's write but before the flip to executed: the executor's own test hook
 *   (`R2D_CRASH_AT`) SIGKILLs the child there.
 * The runtime is then started again without the hook, and the row must end executed with its result stored and
 * exactly one insight tagged with its id: never none, never two.
 */
import { randomUUID } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatedTool } from "../../core/agent/tools";
import { idFor } from "../../core/db/agent-write";
import { db } from "../../core/db/service";
import { createPending } from "../../core/pending-action";
import { waitFor } from "../support/multipart";
import { RuntimeProcess, START_TIMEOUT } from "../support/runtime-process";

let runtime: RuntimeProcess;
let token: string;
let userId: string;
let workspaceId: string;

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${runtime.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { "content-type": "application/json" } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
};

/** A pending create_insight made in this process, as the agent loop makes it, against the child's DynamoDB. */
async function pend(): Promise<string> {
  const ctx = { userId, workspaceId, missionId: randomUUID(), sessionId: null, attachmentIds: [] };
  const { id } = await createPending(ctx, gatedTool("create_insight")!, {
    insight_type: "pain_point",
    title: `Crash-proof finding ${randomUUID().slice(0, 6)}`,
    description: "Users lose their work when the app restarts.",
  });
  return id;
}

const rowOf = async (id: string) => (await db().entities.pendingAction.get({ workspace_id: workspaceId, id }).go({ consistent: true })).data;
async function insightsOf(paId: string) {
  const { data } = await db().entities.insight.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true });
  return data.filter((i) => i.pending_action_id === paId);
}

beforeAll(async () => {
  runtime = await RuntimeProcess.start("r2d-crash", {
    TABLE_NAME: "r2d-crash",
    BUCKET_NAME: "r2d-crash-uploads",
    PENDING_ACTION_LEASE_SECONDS: "2",
    PENDING_ACTION_SWEEP_INTERVAL_SECONDS: "1",
    R2D_CRASH_AT: "",
  });
  // This process talks to the child's DynamoDB Local (its fixed port survives restarts) for createPending and checks.
  const running = JSON.parse(await readFile(join(runtime.opts.dataDir, "runtime.json"), "utf8")) as { dynamoEndpoint: string; tableName: string };
  process.env.DYNAMODB_ENDPOINT = running.dynamoEndpoint;
  process.env.TABLE_NAME = running.tableName;

  token = await runtime.token({ email: `crash-${randomUUID().slice(0, 8)}@example.com`, name: "Crash Tester" });
  const me = await api("GET", "/api/auth/me");
  expect(me.status).toBe(200);
  userId = me.body.id;
  const ws = await api("POST", "/api/workspaces", { name: "Crash test" });
  expect(ws.status).toBe(201);
  workspaceId = ws.body.id;
}, START_TIMEOUT + 30_000);

afterAll(() => runtime?.dispose(), 60_000);

describe("a crash never loses nor doubles an approved pending action", () => {
  const points = [
    { name: "before execution", hook: undefined },
    { name: "after the claim", hook: "after-claim" },
    { name: "after the tool's write, before the flip to executed", hook: "after-execute" },
  ] as const;

  it.each(points)("crash $name", async ({ hook }) => {
    if (hook) {
      // Restart with the hook armed (the runtime of the previous case runs without it).
      runtime.child!.kill("SIGTERM");
      await runtime.exited(30_000);
      runtime.killGroup();
      await runtime.start({ R2D_CRASH_AT: hook });
    }
    const id = await pend();
    const approved = await api("POST", `/api/pending-actions/${id}/approve`, {});
    expect(approved.status).toBe(200);
    expect(approved.body.status).toBe("approved");

    // With a hook the executor kills its own process there (what is left of the group goes with it); without one,
    // the whole group is killed right after approve answered.
    if (hook) await runtime.exited(60_000);
    await runtime.crash();

    await runtime.start();
    const row = await waitFor(async () => {
      const r = await rowOf(id);
      return r && (r.status === "executed" || r.status === "failed") ? r : null;
    }, 60_000, 200);
    expect(row).toMatchObject({ status: "executed", result: { insight_id: idFor(id, "insight") } });
    expect(row.executed_at).toBeTruthy();
    if (hook) expect(row.attempts).toBe(2); // claimed by the run that died, then by the one after the restart
    const insights = await insightsOf(id);
    expect(insights).toHaveLength(1);
    expect(insights[0]!.id).toBe(idFor(id, "insight"));

    const shown = await api("GET", `/api/pending-actions/${id}`);
    expect(shown.body).toMatchObject({ status: "executed", result: { insight_id: idFor(id, "insight") }, error: null });
  }, 240_000);
});
