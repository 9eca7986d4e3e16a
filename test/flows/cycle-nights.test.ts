/**
 * Overnight research cycles at the edges of a night (found by review, 2026-11-28):
 * - a source still processing when a night's cutoff is read is taken in by the next night (by when its processing
 *   completed; it was skipped by every night, being created before their cutoffs);
 * - a workspace whose cycle fails to start (DynamoDB refusing a read) is tried again by the run itself, and the
 *   scheduled handler fails when a start still failed, so its retry starts it (it was logged and lost for the night).
 * - a digest that cannot be sent leaves the night's cycle completed (it failed it, and the retry synthesized again);
 * The handler runs every enabled workspace of its table, so that part runs in a table of its own.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { uploadResearch, waitFor } from "../support/multipart";
import { sourceWith } from "../support/sources";
import { setAccount, topUp } from "../support/billing";
import { dynamoClient } from "../../core/db/client";
import { ensureTable } from "../../local/dynamodb";
import { cycleOf, cycleTaskId, runNightlyCycles, START_RETRIES, utcDate } from "../../core/cycle";
import { readTask } from "../../core/task";
import { handler } from "../../functions/events/task-cycles";
import type { CycleChanges } from "../../core/cycle/digest";
import { beginWorkspaceDeletion } from "../../core/workspace/deletion";

const DAY = 86_400_000;
const night = (k: number) => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) + k * DAY + 2 * 3_600_000);

/** A Power workspace with 3 research sources and cycles enabled. */
async function enabled(name: string) {
  const ws = await newWorkspace(name);
  await setAccount(ws.owner.id, { plan: "power", status: "active" });
  await topUp(ws.owner.id, 200);
  for (const k of [1, 2, 3]) await sourceWith(ws.owner.token, ws.workspace.id, [`Note ${k}: exporting my records to PDF crashes the app.`, `Signing in takes me three tries every time (${k}).`], `note-${k}.md`);
  const on = await call("PATCH", `/api/workspaces/${ws.workspace.id}/settings`, { token: ws.owner.token, body: { researchCycleEnabled: true, researchProgram: { goals: ["Why does export crash?"] } } });
  expect(on.status, on.text).toBe(200);
  return ws;
}

/** A night's cycle task once it has ended. */
const ended = (workspaceId: string, date: string) =>
  waitFor(async () => {
    const t = await readTask(workspaceId, cycleTaskId(workspaceId, date, 1));
    const record = await cycleOf(workspaceId, date);
    return t && ["completed", "failed", "cancelled"].includes(t.status) && record && record.status !== "running" ? t : null;
  }, 120_000, 100);

/** Middleware on the shared DynamoDB client for the duration of `body`; removed after. */
type Middleware = (next: (args: { input: unknown }) => Promise<unknown>, context: { commandName?: string }) => (args: { input: unknown }) => Promise<unknown>;
async function withMiddleware<T>(name: string, mw: Middleware, body: () => Promise<T>): Promise<T> {
  dynamoClient().middlewareStack.add(mw as never, { step: "initialize", name });
  try {
    return await body();
  } finally {
    dynamoClient().middlewareStack.remove(name);
  }
}

describe("a source still processing at a night's cutoff", () => {
  it("is taken in by the next night, by when its processing completed", async () => {
    const ws = await enabled("Late source");
    const wsId = ws.workspace.id;
    // The next source's completion is held until after night 1 has run (a long transcription, say). The hold sits at
    // the completion's write, so the write's time is moved to when it lands.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holding = false;
    const late = await withMiddleware(
      "holdCompletion",
      (next, context) => async (args) => {
        const input = args.input as { Key?: { pk?: string } };
        if (!holding && /^Update/.test(context.commandName ?? "") && input.Key?.pk === `ws#${wsId}` && JSON.stringify(args.input).includes("processed_at") && JSON.stringify(args.input).includes('"completed"')) {
          holding = true;
          await held;
          // The completion lands now, as a long extraction's would: its time is when it is written.
          const values = (args.input as { ExpressionAttributeValues?: Record<string, unknown> }).ExpressionAttributeValues ?? {};
          for (const k of Object.keys(values)) if (k.includes("processed_at")) values[k] = new Date().toISOString();
        }
        return next(args);
      },
      async () => {
        const res = await uploadResearch(ws.owner.token, wsId, { name: "late.md", data: Buffer.from("Uploading a long recording fails at 90 percent, every time.\n") }, "text/markdown");
        expect(res.status, res.text).toBe(201);
        await waitFor(async () => holding, 30_000, 20);
        const d1 = utcDate(night(1));
        expect((await runNightlyCycles({ now: night(1), workspaceIds: [wsId] })).started).toEqual([wsId]);
        const first = await ended(wsId, d1);
        expect(first.status).toBe("completed");
        const changes = (first.result_data as { changes: CycleChanges }).changes;
        // Still processing at the cutoff: not tonight's.
        expect(changes.new_sources.map((s) => s.id)).not.toContain(res.body.id);
        expect(changes.new_sources).toHaveLength(3);
        release();
        await waitFor(async () => (await call("GET", `/api/research/sources/${res.body.id}`, { token: ws.owner.token })).body.processing_status === "completed", 30_000);
        return res.body.id as string;
      },
    );
    const d2 = utcDate(night(2));
    expect((await runNightlyCycles({ now: night(2), workspaceIds: [wsId] })).started).toEqual([wsId]);
    const second = await ended(wsId, d2);
    expect(second.status).toBe("completed");
    expect((second.result_data as { changes: CycleChanges }).changes.new_sources.map((s) => s.id)).toEqual([late]);
  }, 240_000);
});

describe("a workspace whose deletion has begun", () => {
  it("starts no cycle: its settings item outlives the deletion's first passes, but no paid work starts", async () => {
    const ws = await enabled("Deleted at night");
    expect(await beginWorkspaceDeletion(ws.owner.id, ws.workspace.id)).toBe(true);
    const report = await runNightlyCycles({ now: night(0), workspaceIds: [ws.workspace.id] });
    expect(report.skipped).toEqual([{ workspace_id: ws.workspace.id, reason: "the workspace is being deleted" }]);
    expect(await cycleOf(ws.workspace.id, utcDate(night(0)))).toBeNull();
    expect(await readTask(ws.workspace.id, cycleTaskId(ws.workspace.id, utcDate(night(0)), 1))).toBeNull();
  });
});

describe("a digest that cannot be sent", () => {
  it("does not fail the night's cycle: its synthesis stands, and no retry runs it again", async () => {
    const ws = await enabled("Digest fails");
    const wsId = ws.workspace.id;
    expect((await call("PATCH", `/api/workspaces/${wsId}/settings`, { token: ws.owner.token, body: { overnightCycleNotifyEmail: true } })).status).toBe(200);
    // The outbox is a file, not a directory: every message of the digest fails to be written.
    const dir = await mkdtemp(join(tmpdir(), "r2d-outbox-"));
    const blocked = join(dir, "not-a-directory");
    await writeFile(blocked, "x");
    const saved = process.env.MAIL_OUTBOX_DIR;
    process.env.MAIL_OUTBOX_DIR = blocked;
    try {
      const d = utcDate(night(1));
      expect((await runNightlyCycles({ now: night(1), workspaceIds: [wsId] })).started).toEqual([wsId]);
      const task = await ended(wsId, d);
      expect(task.status, task.error).toBe("completed");
      const data = task.result_data as { changes: CycleChanges; digest: { sent_to: string[] } };
      expect(data.changes.new_sources).toHaveLength(3);
      expect(data.digest.sent_to).toEqual([]);
      expect(await cycleOf(wsId, d)).toMatchObject({ status: "completed", attempts: 1, digest_sent_at: expect.any(String) });
    } finally {
      if (saved === undefined) delete process.env.MAIL_OUTBOX_DIR;
      else process.env.MAIL_OUTBOX_DIR = saved;
      await rm(dir, { recursive: true, force: true });
    }
  }, 240_000);
});

describe("a cycle that fails to start", () => {
  it("is tried again by the run; past its retries the handler fails, and its retry starts only what had not started", async () => {
    const saved = process.env.TABLE_NAME;
    const table = `r2d-cycle-start-${randomUUID().slice(0, 8)}`;
    await ensureTable(inject("dynamoEndpoint"), table);
    process.env.TABLE_NAME = table;
    try {
      const [a, b] = [await enabled("Start fails"), await enabled("Start stumbles")];
      const today = utcDate(new Date());
      // Reads of tonight's record fail: a's every time the run tries, b's once.
      const failures = new Map([[a.workspace.id, START_RETRIES + 1], [b.workspace.id, 1]]);
      const refuse: Middleware = (next, context) => async (args) => {
        const key = (args.input as { Key?: { pk?: string; sk?: string } }).Key;
        const ws = key?.pk?.slice(3);
        if (/^Get/.test(context.commandName ?? "") && key?.sk === `cycle#${today}` && ws && (failures.get(ws) ?? 0) > 0) {
          failures.set(ws, failures.get(ws)! - 1);
          throw Object.assign(new Error("Rate of requests exceeds the allowed throughput."), { name: "ThrottlingException", $metadata: { httpStatusCode: 400 } });
        }
        return next(args);
      };
      await expect(withMiddleware("refuseCycleRead", refuse, () => handler())).rejects.toThrow("1 research cycle did not start");
      expect(await cycleOf(a.workspace.id, today)).toBeNull();
      expect(await cycleOf(b.workspace.id, today)).not.toBeNull();
      // The invocation's retry: a starts, b had started.
      expect(await handler()).toMatchObject({ started: 1, already: 1, errors: 0 });
      expect(await cycleOf(a.workspace.id, today)).not.toBeNull();
      // Both cycles run to their end before the table goes away.
      for (const ws of [a, b]) await ended(ws.workspace.id, today);
    } finally {
      process.env.TABLE_NAME = saved;
    }
  }, 240_000);
});
