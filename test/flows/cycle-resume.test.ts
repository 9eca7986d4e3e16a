/**
 * A research cycle whose worker dies between two synthesis chunks and is resumed by the task sweeper (found by review):
 * a night with more than 20 new sources is synthesized in chunks of 20, each a step of the task. Before the
 * workspace's first completed cycle, "new" means "cited by no insight yet", so the resumed attempt, reading the list
 * again, saw the sources of the finished chunk 0 drop out and the rest move into chunk 0, whose step it took as done:
 * those were never synthesized, yet the digest listed them. The night's list is now a step of its own, and the
 * cycle's retry (a task of its own) takes its earlier attempt's list, so it finds the same chunks done.
 */
import { describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { waitFor } from "../support/multipart";
import { sourceWith } from "../support/sources";
import { setAccount, topUp } from "../support/billing";
import { firstAttemptDies } from "../support/tasks";
import { dynamoClient } from "../../core/db/client";
import { Config } from "../../core/config";
import { allOf } from "../../core/insight";
import { cycleOf, cycleTaskId, runNightlyCycles, utcDate } from "../../core/cycle";
import { readTask, taskRunner } from "../../core/task";
import { tryLock } from "../../core/agent";
import { sweepTasks } from "../../core/task/sweeper";
import { TaskSettings } from "../../core/task/settings";
import { dropLocalExecution } from "../../local/tasks";
import type { CycleChanges } from "../../core/cycle/digest";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";

const DAY = 86_400_000;
const night = (k: number) => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) + k * DAY + 2 * 3_600_000);

/** How many new sources the night has: more than one chunk of 20. */
const SOURCES = 25;

/** The digest mailed to `to` for `date`, decoded (the .eml outbox). */
async function digestOf(to: string, date: string): Promise<string | undefined> {
  const dir = Config.mailOutboxDir();
  for (const name of (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(".eml"))) {
    const [head, body] = (await readFile(join(dir, name), "utf8")).split("\r\n\r\n");
    if (head!.includes(`To: ${to}`) && head!.includes(`Subject: Research cycle ${date}`)) return Buffer.from(body!.replace(/\r\n/g, ""), "base64").toString("utf8");
  }
  return undefined;
}

type Ws = Awaited<ReturnType<typeof newWorkspace>>;

/**
 * A Power workspace with research cycles and the digest on, and SOURCES notes of as many people saying the same two
 * things (each chunk's synthesis finds both themes, citing its sources); no insight yet.
 */
async function nightOfManySources(name: string): Promise<{ ws: Ws; ids: string[] }> {
  const ws = await newWorkspace(name);
  const wsId = ws.workspace.id;
  await setAccount(ws.owner.id, { plan: "power", status: "active" });
  await topUp(ws.owner.id, 200);
  const ids: string[] = [];
  for (let k = 1; k <= SOURCES; k += 5) {
    const batch = Array.from({ length: Math.min(5, SOURCES - k + 1) }, (_, n) => k + n);
    ids.push(...(await Promise.all(batch.map((j) => sourceWith(ws.owner.token, wsId, [`Note ${j}: exporting my records to PDF crashes the app.`, `Signing in takes me three tries every time (${j}).`], `note-${j}.md`)))));
  }
  const on = await call("PATCH", `/api/workspaces/${wsId}/settings`, { token: ws.owner.token, body: { researchCycleEnabled: true, overnightCycleNotifyEmail: true, researchProgram: { goals: ["Why do veterans stop using the app?"] } } });
  expect(on.status, on.text).toBe(200);
  expect(await allOf(wsId)).toEqual([]);
  return { ws, ids };
}

/**
 * Hold the worker of the task at its first write to the task after chunk 0's step landed (the progress after chunk 0):
 * `atHold` resolves once it waits there; `release(fail)` lets it go on, or fails the write (a worker that died).
 */
function holdAfterChunk0(taskId: string) {
  const name = `holdAfterChunk0-${Math.random()}`;
  let chunk0Stored = false;
  let reached!: () => void;
  const atHold = new Promise<void>((r) => (reached = r));
  let release!: (fail: boolean) => void;
  const released = new Promise<boolean>((r) => (release = r));
  dynamoClient().middlewareStack.add(
    (next, context) => async (args) => {
      const input = JSON.stringify(args.input);
      if (!/^Update/.test(context.commandName ?? "") || !input.includes(taskId)) return next(args);
      if (chunk0Stored) {
        reached();
        if (await released) throw Object.assign(new Error("the worker died"), { name: "WorkerDied" });
        return next(args);
      }
      const out = await next(args);
      if (input.includes("synthesis#0")) chunk0Stored = true;
      return out;
    },
    { step: "initialize", name },
  );
  return { atHold, release, chunk0Stored: () => chunk0Stored, remove: () => dynamoClient().middlewareStack.remove(name) };
}

/** The task once it ended and the night's record took its outcome. */
const ended = (workspaceId: string, date: string, attempt: number) =>
  waitFor(async () => {
    const t = await readTask(workspaceId, cycleTaskId(workspaceId, date, attempt));
    const record = await cycleOf(workspaceId, date);
    return t && ["completed", "failed", "cancelled"].includes(t.status) && record && (record.task_id !== t.id || record.status !== "running") ? t : null;
  }, 120_000, 100);

/** Every one of `ids` is cited by an insight, the night's changes list them all and every insight, and so does the digest. */
async function expectAllSynthesized(ws: Ws, ids: string[], date: string, changes: CycleChanges) {
  const wsId = ws.workspace.id;
  const insights = await allOf(wsId);
  const cited = new Set(insights.flatMap((i) => i.source_ids ?? []));
  expect(ids.filter((id) => !cited.has(id))).toEqual([]);
  expect(changes.new_sources.map((s) => s.id).sort()).toEqual([...ids].sort());
  expect(changes.insights_created.map((i) => i.id).sort()).toEqual(insights.map((i) => i.id).sort());
  expect(await cycleOf(wsId, date)).toMatchObject({ status: "completed", changes });
  const digest = await waitFor(() => digestOf(ws.owner.email, date), 10_000);
  for (const id of ids) expect(digest).toContain(`${Config.appUrl()}/workspaces/${wsId}/research/${id}`);
  for (const i of changes.insights_created) expect(digest).toContain(`${Config.appUrl()}/workspaces/${wsId}/insights/${i.id}`);
}

describe("a night of more than one synthesis chunk, before the workspace's first completed cycle", () => {
  it("a worker that dies after chunk 0 is resumed: every one of the night's sources is synthesized, and the digest lists them all", async () => {
    const { ws, ids } = await nightOfManySources("Cycle resumed mid-synthesis");
    const wsId = ws.workspace.id;
    const date = utcDate(night(1));
    const taskId = cycleTaskId(wsId, date, 1);
    // The first attempt's worker dies once chunk 0's step is on the task: its next write to the task never lands, and
    // its execution is dropped, as kill -9 would leave it.
    const hold = holdAfterChunk0(taskId);
    firstAttemptDies(async (i, run) => {
      await hold.atHold;
      dropLocalExecution(i);
      hold.release(true);
      await run.catch(() => undefined);
    });
    try {
      expect((await runNightlyCycles({ now: night(1), workspaceIds: [wsId] })).started).toEqual([wsId]);
      await waitFor(async () => !(await taskRunner().isRunning({ task_id: taskId, attempt: 1 })) && hold.chunk0Stored(), 120_000, 50);
    } finally {
      hold.remove();
    }
    const stuck = (await readTask(wsId, taskId))!;
    expect(stuck).toMatchObject({ status: "running", attempt: 1 });
    expect(Object.keys(stuck.checkpoint as Record<string, unknown>).filter((k) => k.startsWith("synthesis#"))).toEqual(["synthesis#0"]);
    // Chunk 0 synthesized 20 sources; 5 are left.
    const citedAfterChunk0 = new Set((await allOf(wsId)).flatMap((i) => i.source_ids ?? []));
    expect(ids.filter((id) => !citedAfterChunk0.has(id))).toHaveLength(SOURCES - 20);

    // The sweeper resumes the task (attempt 2 of the same task).
    expect(await sweepTasks({ workspaceId: wsId, now: Date.now() + TaskSettings.staleMs() + 1000 })).toMatchObject({ resumed: 1, errors: [] });
    const done = await ended(wsId, date, 1);
    expect(done, JSON.stringify(done)).toMatchObject({ status: "completed", attempt: 2 });
    await expectAllSynthesized(ws, ids, date, (done.result_data as { changes: CycleChanges }).changes);
  }, 300_000);

  it("a cycle that fails after chunk 0 is retried on the same list: chunk 0 taken as done, the rest synthesized, the digest lists them all", async () => {
    const { ws, ids } = await nightOfManySources("Cycle retried mid-synthesis");
    const wsId = ws.workspace.id;
    const date = utcDate(night(1));
    // After chunk 0, another synthesis holds the workspace's lock: chunk 1 is refused (409) and the cycle fails.
    const hold = holdAfterChunk0(cycleTaskId(wsId, date, 1));
    let unlock: (() => Promise<void>) | null = null;
    try {
      expect((await runNightlyCycles({ now: night(1), workspaceIds: [wsId] })).started).toEqual([wsId]);
      await hold.atHold;
      unlock = await tryLock(`ws#${wsId}`, "synthesis", 600);
      expect(unlock).not.toBeNull();
      hold.release(false);
      expect(await ended(wsId, date, 1)).toMatchObject({ status: "failed", error: expect.stringContaining("synthesis is already running") });
    } finally {
      hold.remove();
      await unlock?.();
    }
    const insightsOfChunk0 = (await allOf(wsId)).map((i) => i.id).sort();
    expect(insightsOfChunk0.length).toBeGreaterThan(0);
    const record = (await cycleOf(wsId, date))!;
    expect(record).toMatchObject({ status: "failed", attempts: 1, retry: "retry" });
    expect((await sweepTasks({ workspaceId: wsId, now: Date.parse(record.retry_at!) + 1000 })).cycles.retried).toBe(1);
    const retried = await ended(wsId, date, 2);
    expect(retried, JSON.stringify(retried)).toMatchObject({ status: "completed" });
    const changes = (retried.result_data as { changes: CycleChanges }).changes;
    // Chunk 0's insights come from the first attempt's step (not synthesized again): the night created them.
    expect(changes.insights_created.map((i) => i.id)).toEqual(expect.arrayContaining(insightsOfChunk0));
    await expectAllSynthesized(ws, ids, date, changes);
  }, 300_000);
});
