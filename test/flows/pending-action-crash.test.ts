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
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../local/dynamodb";
import { devIdp } from "../../local/idp";
import { gatedTool } from "../../core/agent/tools";
import { idFor } from "../../core/db/agent-write";
import { db } from "../../core/db/service";
import { createPending } from "../../core/pending-action";
import { waitFor } from "../support/multipart";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const START_TIMEOUT = 90_000;

let dataDir: string;
let port: number;
let dynamoPort: number;
let child: ChildProcess | undefined;
let output = "";
let token: string;
let userId: string;
let workspaceId: string;

/** Start the embedded runtime as a child process group; resolves once it prints that it is running. */
async function startRuntime(env: Record<string, string> = {}): Promise<void> {
  output = "";
  const proc = spawn(join(ROOT, "node_modules/.bin/tsx"), ["local/start.ts", "--port", String(port), "--data", dataDir], {
    cwd: ROOT,
    // Its own process group: a kill -9 of the group also takes the DynamoDB Local JVM the runtime started.
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      DYNAMODB_PORT: String(dynamoPort),
      TABLE_NAME: "r2d-crash",
      BUCKET_NAME: "r2d-crash-uploads",
      PENDING_ACTION_LEASE_SECONDS: "2",
      PENDING_ACTION_SWEEP_INTERVAL_SECONDS: "1",
      R2D_CRASH_AT: "",
      ...env,
    },
  });
  child = proc;
  proc.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  proc.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`runtime did not start within ${START_TIMEOUT} ms:\n${output}`)), START_TIMEOUT);
    const onData = () => {
      if (!output.includes("is running at")) return;
      clearTimeout(timer);
      resolve();
    };
    proc.stdout!.on("data", onData);
    proc.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`runtime exited at start (${code ?? signal}):\n${output}`));
    });
  });
}

/** Kill the child's whole process group with SIGKILL (the runtime, tsx and DynamoDB Local), if still there. */
function killGroup(): void {
  if (!child?.pid) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

/** Resolves when the current child has exited (it is not restarted). */
const exited = (proc: ChildProcess, timeoutMs: number) =>
  new Promise<NodeJS.Signals | number | null>((resolve, reject) => {
    if (proc.exitCode !== null || proc.signalCode !== null) return resolve(proc.signalCode ?? proc.exitCode);
    const timer = setTimeout(() => reject(new Error(`runtime still running after ${timeoutMs} ms:\n${output}`)), timeoutMs);
    proc.once("exit", (code, signal) => {
      clearTimeout(timer);
      resolve(signal ?? code);
    });
  });

/** Kill -9 everything of the current child and wait until it is gone (the JVM's port is free again). */
async function crashRuntime(): Promise<void> {
  const proc = child!;
  killGroup();
  await exited(proc, 30_000);
  await waitFor(async () => {
    try {
      await fetch(`http://127.0.0.1:${dynamoPort}`);
      return false;
    } catch {
      return true;
    }
  }, 30_000, 100);
}

const base = () => `http://127.0.0.1:${port}`;
const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`${base()}${path}`, {
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
  dataDir = await mkdtemp(join(tmpdir(), "r2d-crash-"));
  [port, dynamoPort] = await Promise.all([freePort(), freePort()]);
  await startRuntime();
  // This process talks to the child's DynamoDB Local (its fixed port survives restarts) for createPending and checks.
  const runtime = JSON.parse(await readFile(join(dataDir, "runtime.json"), "utf8")) as { dynamoEndpoint: string; tableName: string };
  process.env.DYNAMODB_ENDPOINT = runtime.dynamoEndpoint;
  process.env.TABLE_NAME = runtime.tableName;

  const idp = await devIdp(dataDir);
  token = await idp.sign({ email: `crash-${randomUUID().slice(0, 8)}@example.com`, name: "Crash Tester" });
  const me = await api("GET", "/api/auth/me");
  expect(me.status).toBe(200);
  userId = me.body.id;
  const ws = await api("POST", "/api/workspaces", { name: "Crash test" });
  expect(ws.status).toBe(201);
  workspaceId = ws.body.id;
}, START_TIMEOUT + 30_000);

afterAll(async () => {
  const proc = child;
  killGroup();
  if (proc) await exited(proc, 30_000).catch(() => undefined);
  if (dataDir) await rm(dataDir, { recursive: true, force: true });
}, 60_000);

describe("a crash never loses nor doubles an approved pending action", () => {
  const points = [
    { name: "before execution", hook: undefined },
    { name: "after the claim", hook: "after-claim" },
    { name: "after the tool's write, before the flip to executed", hook: "after-execute" },
  ] as const;

  it.each(points)("crash $name", async ({ hook }) => {
    if (hook) {
      // Restart with the hook armed (the runtime of the previous case runs without it).
      const proc = child!;
      proc.kill("SIGTERM");
      await exited(proc, 30_000);
      killGroup();
      await startRuntime({ R2D_CRASH_AT: hook });
    }
    const id = await pend();
    const approved = await api("POST", `/api/pending-actions/${id}/approve`, {});
    expect(approved.status).toBe(200);
    expect(approved.body.status).toBe("approved");

    // With a hook the executor kills its own process there (what is left of the group goes with it); without one,
    // the whole group is killed right after approve answered.
    if (hook) await exited(child!, 60_000);
    await crashRuntime();

    await startRuntime();
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
