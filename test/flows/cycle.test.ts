/**
 * Overnight research cycles end to end (issue #23 point 3): a Power workspace with real research (two VA interview
 * notes and the app-store reviews of ../shared/realdata) enables cycles under spec 01's rule; the nightly run (the
 * handler EventBridge Scheduler and croner both call) synthesizes what is new since the last cycle, merges what matches
 * existing insights, flags contradictions and stale sources through the entropy scanner, records the cycle as a task,
 * and mails every member a digest of what changed, with links (the .eml outbox). A second run the same night does
 * nothing; a cycle that fails is retried once the same night by the task sweeper; a lapsed plan has no cycle.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { call, newUser, newWorkspace } from "../support/api";
import { realFile, uploadResearch, waitFor } from "../support/multipart";
import { sourceWith } from "../support/sources";
import { setAccount, topUp } from "../support/billing";
import { expectEnvelope } from "../http/_helpers";
import { Config } from "../../core/config";
import { tryLock } from "../../core/agent";
import { workspacesWithCycles } from "../../core/workspace";
import { cycleOf, cycleTaskId, runNightlyCycles, utcDate } from "../../core/cycle";
import { readTask } from "../../core/task";
import { allOf } from "../../core/insight";
import { db } from "../../core/db/service";
import { sweepTasks } from "../../core/task/sweeper";
import type { CycleChanges } from "../../core/cycle/digest";

type Ws = Awaited<ReturnType<typeof newWorkspace>>;
const DAY = 86_400_000;
/** Night k after today, at 02:00 UTC (the schedule's firing time). */
const night = (k: number) => new Date(Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate()) + k * DAY + 2 * 3_600_000);

let ws: Ws;
let member: Awaited<ReturnType<typeof newUser>>;
const settings = (body: Record<string, unknown>, token = ws.owner.token) => call("PATCH", `/api/workspaces/${ws.workspace.id}/settings`, { token, body });

async function upload(path: string, type: string, sourceType: string): Promise<string> {
  const res = await uploadResearch(ws.owner.token, ws.workspace.id, await realFile(path), type, sourceType);
  expect(res.status, res.text).toBe(201);
  const id = res.body.id as string;
  await waitFor(async () => (await call("GET", `/api/research/sources/${id}`, { token: ws.owner.token })).body.processing_status === "completed", 60_000);
  return id;
}

/** The night's cycle task once it ended and its night's record took the outcome (written just after the task's). */
const cycleTask = (date: string, attempt = 1) =>
  waitFor(async () => {
    const t = await readTask(ws.workspace.id, cycleTaskId(ws.workspace.id, date, attempt));
    const record = await cycleOf(ws.workspace.id, date);
    const settled = record && (record.task_id !== t?.id || record.status !== "running");
    return t && ["completed", "failed", "cancelled"].includes(t.status) && settled ? t : null;
  }, 120_000, 100);

/**
 * Night `k`'s cycle fails on its first attempt (the shared workspace `ws`): a source is added (`quote`, in `file`), another synthesis holds the
 * workspace's lock while the night runs, then lets go. @returns the night's date, its task and its failed record.
 */
async function failedNight(k: number, quote: string, file: string) {
  await sourceWith(ws.owner.token, ws.workspace.id, [quote], file);
  const date = utcDate(night(k));
  const hold = await tryLock(`ws#${ws.workspace.id}`, "synthesis", 600);
  await runNightlyCycles({ now: night(k), workspaceIds: [ws.workspace.id] });
  const task = await cycleTask(date);
  await hold!();
  return { date, task, record: (await cycleOf(ws.workspace.id, date))! };
}

/** The digests in the outbox addressed to `to`, decoded. */
async function digestsTo(to: string): Promise<{ subject: string; text: string }[]> {
  const dir = Config.mailOutboxDir();
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(".eml"));
  const out: { subject: string; text: string }[] = [];
  for (const name of names) {
    const eml = await readFile(join(dir, name), "utf8");
    const [head, body] = eml.split("\r\n\r\n");
    if (!head!.includes(`To: ${to}`) || !/Subject: Research cycle/.test(head!)) continue;
    out.push({ subject: /Subject: (.*)/.exec(head!)![1]!, text: Buffer.from(body!.replace(/\r\n/g, ""), "base64").toString("utf8") });
  }
  return out;
}

beforeAll(async () => {
  ws = await newWorkspace("VA research cycles");
  member = await newUser();
  await call("POST", `/api/workspaces/${ws.workspace.id}/members`, { token: ws.owner.token, body: { email: member.email, role: "member" } });
  await topUp(ws.owner.id, 200);
}, 60_000);

describe("enabling follows spec 01's rule", () => {
  it("403 without the Power plan, 3 sources and a research program with goals; then the nightly schedule finds it", async () => {
    const trial = await settings({ researchCycleEnabled: true });
    expect(trial.status).toBe(403);
    await setAccount(ws.owner.id, { plan: "power", status: "active" });
    const few = await settings({ researchCycleEnabled: true });
    expectEnvelope(few, 403, "FORBIDDEN");
    expect(few.body.unmet_requirements).toEqual(["at least 3 research sources (it has 0)", "a research program with goals"]);
    await upload("va-mobile-app/interview-notes/2023-07-retention-study-participant-10.md", "text/markdown", "interview");
    await upload("va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md", "text/markdown", "interview");
    await upload("va-mobile-app/app-store-reviews-2024-05-partial.csv", "text/csv", "feedback");
    const noProgram = await settings({ researchCycleEnabled: true });
    expect(noProgram.body.unmet_requirements).toEqual(["a research program with goals"]);
    expect(await workspacesWithCycles()).not.toContain(ws.workspace.id);
    const on = await settings({ researchCycleEnabled: true, overnightCycleNotifyEmail: true, researchProgram: { goals: ["Why do veterans stop using the app?", "What makes sign-in hard?"] } });
    expect(on.status, on.text).toBe(200);
    expect(on.body).toMatchObject({ researchCycleEnabled: true, overnightCycleNotifyEmail: true });
    expect(await workspacesWithCycles()).toContain(ws.workspace.id);
    // A member cannot change it (owner or admin).
    expectEnvelope(await settings({ researchCycleEnabled: false }, member.token), 403, "FORBIDDEN");
  }, 120_000);
});

describe("the nightly run", () => {
  it("night 1: every source is new; synthesized, scanned, recorded as a task, and the members get a digest with links", async () => {
    const date = utcDate(night(1));
    const report = await runNightlyCycles({ now: night(1), workspaceIds: [ws.workspace.id] });
    expect(report).toMatchObject({ date, started: [ws.workspace.id], already: [], skipped: [], errors: [] });
    const task = await cycleTask(date);
    expect(task, JSON.stringify(task)).toMatchObject({ status: "completed", task_type: "research_cycle", created_by: ws.owner.id, cycle_date: date });
    const changes = (task.result_data as { changes: CycleChanges }).changes;
    expect(changes.new_sources).toHaveLength(3);
    expect(changes.insights_created.length).toBeGreaterThan(0);
    expect(changes.scanned).toBe(true);
    expect(await cycleOf(ws.workspace.id, date)).toMatchObject({ status: "completed", attempts: 1, digest_sent_at: expect.any(String), changes });
    // Listed with the workspace's tasks (a research cycle, spawned by no conversation).
    const tasks = await call("GET", "/api/tasks", { token: member.token, query: { workspace_id: ws.workspace.id } });
    expect(tasks.body.tasks).toEqual([expect.objectContaining({ id: task.id, task_type: "research_cycle", conversation_id: null, status: "completed" })]);
    // The digest: to each member, what changed, each item with its link.
    for (const to of [ws.owner.email, member.email]) {
      const [digest, ...more] = await digestsTo(to);
      expect(more).toEqual([]);
      expect(digest!.subject).toBe(`Research cycle ${date} for VA research cycles: ${changes.insights_created.length} new insight${changes.insights_created.length === 1 ? "" : "s"}${changes.issues.length ? `, ${changes.issues.length} issue${changes.issues.length === 1 ? "" : "s"}` : ""}`);
      for (const s of changes.new_sources) expect(digest!.text).toContain(`${Config.appUrl()}/workspaces/${ws.workspace.id}/research/${s.id}`);
      for (const i of changes.insights_created) {
        expect(digest!.text).toContain(i.title);
        expect(digest!.text).toContain(`${Config.appUrl()}/workspaces/${ws.workspace.id}/insights/${i.id}`);
      }
      expect(digest!.text).toContain(`${Config.appUrl()}/workspaces/${ws.workspace.id}/tasks/${task.id}`);
      expect(digest!.text).toContain("Why do veterans stop using the app?");
    }
  }, 180_000);

  it("run twice the same night (a schedule delivered twice): the second starts nothing, and no second digest goes out", async () => {
    const again = await runNightlyCycles({ now: new Date(night(1).getTime() + 3_600_000), workspaceIds: [ws.workspace.id] });
    expect(again).toMatchObject({ started: [], already: [ws.workspace.id] });
    const tasks = await call("GET", "/api/tasks", { token: ws.owner.token, query: { workspace_id: ws.workspace.id, status: "completed" } });
    expect(tasks.body.total).toBe(1);
    expect(await digestsTo(member.email)).toHaveLength(1);
  });

  it("night 2: only the source added since night 1 is new; what matches an existing insight is merged into it", async () => {
    const added = await upload("va-mobile-app/P16-home-screen-evaluative-research-2024-04.transcript.vtt", "text/vtt", "interview");
    const date = utcDate(night(2));
    expect((await runNightlyCycles({ now: night(2), workspaceIds: [ws.workspace.id] })).started).toEqual([ws.workspace.id]);
    const task = await cycleTask(date);
    expect(task, JSON.stringify(task)).toMatchObject({ status: "completed" });
    const changes = (task.result_data as { changes: CycleChanges; since: string }).changes;
    expect(changes.new_sources.map((s) => s.id)).toEqual([added]);
    expect((task.result_data as { since: string | null }).since).toBe((await cycleOf(ws.workspace.id, utcDate(night(1))))!.cutoff_at);
    expect(changes.insights_created.length + changes.insights_merged.length).toBeGreaterThan(0);
    const [latest] = (await digestsTo(ws.owner.email)).filter((d) => d.subject.includes(date));
    expect(latest!.text).toContain("P16-home-screen-evaluative-research-2024-04.transcript.vtt");
  }, 180_000);

  it("night 3: a cycle that fails is retried the same night, once, by the sweeper; a second failure stays failed", async () => {
    await sourceWith(ws.owner.token, ws.workspace.id, ["Exporting my records to PDF crashes the app on my tablet."], "crash.md");
    const date = utcDate(night(3));
    // Another synthesis holds the workspace's lock: the cycle's synthesis is refused (409) and the cycle fails.
    const release = await tryLock(`ws#${ws.workspace.id}`, "synthesis", 600);
    expect(release).not.toBeNull();
    await runNightlyCycles({ now: night(3), workspaceIds: [ws.workspace.id] });
    const failed = await cycleTask(date);
    expect(failed).toMatchObject({ status: "failed", error: expect.stringContaining("synthesis is already running") });
    const record = (await cycleOf(ws.workspace.id, date))!;
    expect(record).toMatchObject({ status: "failed", attempts: 1, retry: "retry" });
    // Not before its time (CYCLE_RETRY_DELAY_MINUTES); then the retry's task (attempt 2), once, even with two sweeps.
    expect((await sweepTasks({ workspaceId: ws.workspace.id })).cycles.retried).toBe(0);
    await release!();
    const due = Date.parse(record.retry_at!) + 1000;
    const [a, b] = await Promise.all([sweepTasks({ workspaceId: ws.workspace.id, now: due }), sweepTasks({ workspaceId: ws.workspace.id, now: due })]);
    expect(a.cycles.retried + b.cycles.retried).toBe(1);
    const retried = await cycleTask(date, 2);
    expect(retried, JSON.stringify(retried)).toMatchObject({ status: "completed" });
    expect(await cycleOf(ws.workspace.id, date)).toMatchObject({ status: "completed", attempts: 2, task_id: retried.id });

    // Night 4: it fails again on its retry too: no third run.
    await sourceWith(ws.owner.token, ws.workspace.id, ["The app logs me out whenever I switch to another app."], "logout.md");
    const d4 = utcDate(night(4));
    const hold = await tryLock(`ws#${ws.workspace.id}`, "synthesis", 600);
    await runNightlyCycles({ now: night(4), workspaceIds: [ws.workspace.id] });
    await cycleTask(d4);
    const r4 = (await cycleOf(ws.workspace.id, d4))!;
    await sweepTasks({ workspaceId: ws.workspace.id, now: Date.parse(r4.retry_at!) + 1000 });
    expect(await cycleTask(d4, 2)).toMatchObject({ status: "failed" });
    expect(await cycleOf(ws.workspace.id, d4)).toMatchObject({ status: "failed", attempts: 2 });
    expect((await cycleOf(ws.workspace.id, d4))!.retry).toBeUndefined();
    expect((await sweepTasks({ workspaceId: ws.workspace.id, now: night(4).getTime() + 3_600_000 })).cycles.retried).toBe(0);
    await hold!();

    // Night 5: a retry that comes due after its night ended (the sweeper was down) is dropped, not run the next day.
    const { date: d5 } = await failedNight(5, "Refilling a prescription in the app never confirms the order.", "refill.md");
    const late = await sweepTasks({ workspaceId: ws.workspace.id, now: night(6).getTime() });
    expect(late.cycles).toMatchObject({ retried: 0, dropped: 1 });
    expect(await cycleOf(ws.workspace.id, d5)).toMatchObject({ status: "failed", attempts: 1 });
  }, 240_000);

  it("a cycle's retry takes the chunk its first attempt synthesized as done: not synthesized (or charged) again", async () => {
    const { date, task: first } = await failedNight(6, "Searching my medication history shows nothing older than a year.", "history.md");
    // As if the first attempt had synthesized its one chunk and failed after it: its checkpoint keeps the chunk.
    const since = (await cycleOf(ws.workspace.id, utcDate(night(3))))!.cutoff_at;
    const { data: all } = await db().entities.researchSource.query.byWorkspace({ workspace_id: ws.workspace.id }).go({ pages: "all" });
    const source_ids = all.filter((s) => s.processing_status === "completed" && (s.processed_at ?? s.created_at) > since).sort((a, b) => a.created_at.localeCompare(b.created_at)).map((s) => s.id);
    expect(source_ids).toHaveLength(3);
    const seeded = { id: "insight-of-the-first-attempt", title: "Medication history is cut at a year", severity: "high" };
    await db().entities.task.patch({ workspace_id: ws.workspace.id, id: first.id }).set({ checkpoint: { "synthesis#0": { source_ids, created: [seeded], merged: [] } } }).go();
    const insightsBefore = (await allOf(ws.workspace.id)).map((i) => i.id).sort();
    const record = (await cycleOf(ws.workspace.id, date))!;
    await sweepTasks({ workspaceId: ws.workspace.id, now: Date.parse(record.retry_at!) + 1000 });
    const retried = await cycleTask(date, 2);
    expect(retried).toMatchObject({ status: "completed" });
    const changes = (retried.result_data as { changes: CycleChanges }).changes;
    expect(changes.new_sources.map((s) => s.id)).toEqual(source_ids);
    expect(changes.insights_created).toEqual([seeded]);
    expect((await allOf(ws.workspace.id)).map((i) => i.id).sort()).toEqual(insightsBefore);
  }, 180_000);

  it("a failed cycle whose workspace turned its cycles off meanwhile is not retried (nor charged): its retry is dropped", async () => {
    const { date, record } = await failedNight(10, "Booking a video visit fails when my camera permission is off.", "camera.md");
    expect(record).toMatchObject({ status: "failed", attempts: 1, retry: "retry" });
    const off = await call("PATCH", `/api/workspaces/${ws.workspace.id}/settings`, { token: ws.owner.token, body: { researchCycleEnabled: false } });
    expect(off.status, off.text).toBe(200);
    const sweep = await sweepTasks({ workspaceId: ws.workspace.id, now: Date.parse(record.retry_at!) + 1000 });
    expect(sweep.cycles).toMatchObject({ retried: 0, dropped: 1 });
    expect(await cycleOf(ws.workspace.id, date)).toMatchObject({ status: "failed", attempts: 1 });
    expect((await cycleOf(ws.workspace.id, date))!.retry).toBeUndefined();
    const on = await call("PATCH", `/api/workspaces/${ws.workspace.id}/settings`, { token: ws.owner.token, body: { researchCycleEnabled: true } });
    expect(on.status, on.text).toBe(200);
  }, 180_000);

  it("the next night reuses what a failed night synthesized: a backlog is not synthesized (nor charged) again every night", async () => {
    // Night 10 failed (above). As if its attempt had synthesized its one chunk before failing: its checkpoint keeps it.
    const failed = (await cycleOf(ws.workspace.id, utcDate(night(10))))!;
    expect(failed.status).toBe("failed");
    const first = await readTask(ws.workspace.id, cycleTaskId(ws.workspace.id, failed.date, 1));
    const listed = (first!.checkpoint as { sources: string[] }).sources;
    expect(listed).toHaveLength(1);
    const seeded = { id: "insight-of-the-failed-night", title: "Video visits fail without camera permission", severity: "high" };
    await db().entities.task.patch({ workspace_id: ws.workspace.id, id: first!.id }).set({ checkpoint: { sources: listed, "synthesis#0": { source_ids: listed, created: [seeded], merged: [] } } }).go();
    const insightsBefore = (await allOf(ws.workspace.id)).map((i) => i.id).sort();

    await runNightlyCycles({ now: night(11), workspaceIds: [ws.workspace.id] });
    const task = await cycleTask(utcDate(night(11)));
    expect(task, JSON.stringify(task)).toMatchObject({ status: "completed" });
    const changes = (task.result_data as { changes: CycleChanges }).changes;
    expect(changes.new_sources.map((s) => s.id)).toEqual(listed);
    expect(changes.insights_created).toEqual([seeded]);
    // Nothing synthesized again: no insight created or changed by the night.
    expect((await allOf(ws.workspace.id)).map((i) => i.id).sort()).toEqual(insightsBefore);
    expect(changes.insights_merged).toEqual([]);
  }, 180_000);

  it("a plan that lapsed has no cycle; cycles disabled leave the schedule's index", async () => {
    await setAccount(ws.owner.id, { plan: "power", status: "cancelled", period_end: new Date(Date.now() - DAY).toISOString() });
    const report = await runNightlyCycles({ now: night(7), workspaceIds: [ws.workspace.id] });
    expect(report.skipped).toEqual([{ workspace_id: ws.workspace.id, reason: "the plan in effect (trial) has no overnight cycles" }]);
    expect(await cycleOf(ws.workspace.id, utcDate(night(7)))).toBeNull();
    await setAccount(ws.owner.id, { plan: "power", status: "active" });
    expect((await settings({ researchCycleEnabled: false })).status).toBe(200);
    expect(await workspacesWithCycles()).not.toContain(ws.workspace.id);
    expect((await runNightlyCycles({ now: night(8), workspaceIds: [ws.workspace.id] })).skipped).toEqual([{ workspace_id: ws.workspace.id, reason: "research cycles are disabled" }]);
  });
});
