/**
 * Overnight research cycles (issue #23 point 3; spec 02 Limits: "Overnight research cycles run nightly at 02:00 UTC";
 * spec 01 workspace settings researchCycleEnabled and overnightCycleNotifyEmail; DESIGN.md 6.5). One handler, run at
 * 02:00 UTC by EventBridge Scheduler in AWS (stacks/Tasks.ts) and by `croner` on the embedded runtime
 * (local/tasks.ts): every workspace with research cycles enabled whose plan in effect has overnight cycles gets one
 * cycle, recorded as a task (`research_cycle`, core/cycle/work.ts does its work). At most one per workspace and night:
 * the night's record and the cycle's task are created in one transaction, conditioned on the record being absent. A
 * failed cycle is retried once the same night, CYCLE_RETRY_DELAY_MINUTES later, by the task sweeper.
 */
import pRetry from "p-retry";
import { AppError } from "../error";
import { serviceLog } from "../log";
import { db } from "../db/service";
import { asWrite } from "../db/agent-write";
import { isConditionalFailure } from "../db/errors";
import { deletionBegun, settingsOf, workspacesWithCycles } from "../workspace";
import { planOf } from "../billing/gates";
import { payerOf } from "../billing/charge";
import { createTask, isTerminal, readTask } from "../task";
import { TaskSettings } from "../task/settings";
import { CYCLE_RETRY, CYCLE_WATCH } from "./cycle.entity";
import { cycleOf, cycleTaskId, MAX_CYCLE_ATTEMPTS, settleCycle, type CycleItem } from "./marker";

export { cycleOf, cycleTaskId, type CycleItem } from "./marker";
export type { CycleChanges } from "./digest";

const log = () => serviceLog();

/** The cron expression of the nightly run, UTC (EventBridge Scheduler form; croner gets the 5-field form). */
export const CYCLE_SCHEDULE = "cron(0 2 * * ? *)";
export const CYCLE_CRON = "0 2 * * *";

/** The UTC night of a time, YYYY-MM-DD (a cycle started at 02:00 UTC belongs to that date). */
export const utcDate = (at: Date): string => at.toISOString().slice(0, 10);


/**
 * A running record's place in the sweeper's watch: looked at once its task's heartbeat window has passed
 * (TaskSettings.staleMs, the window after which the task sweeper looks at the task itself).
 */
const watchFrom = (now: number) => ({ retry: CYCLE_WATCH, retry_at: new Date(now + TaskSettings.staleMs()).toISOString() });

/** What one nightly run did, by workspace outcome. */
export interface CycleRunReport {
  date: string;
  /** Cycles started (their tasks created). */
  started: string[];
  /** Workspaces whose cycle had already run (or started) this night. */
  already: string[];
  /** Workspaces skipped: cycles disabled meanwhile, or the plan in effect has no overnight cycles. */
  skipped: { workspace_id: string; reason: string }[];
  errors: { workspace_id: string; error: unknown }[];
}

/** The cycle task's prompt: the night and the research program's goals. */
const promptOf = (date: string, goals: string[]) => `Overnight research cycle of ${date}${goals.length ? `. Research program goals: ${goals.join("; ")}` : ""}`;

/**
 * Start one workspace's cycle for a night (attempt 1): the night's record and its task, in one transaction
 * conditioned on the record being absent. @returns started, already (the night has one), or a skip reason.
 */
export async function startCycle(workspaceId: string, now: Date): Promise<"started" | "already" | { skip: string }> {
  const date = utcDate(now);
  const settings = await settingsOf(workspaceId);
  if (!settings.researchCycleEnabled) return { skip: "research cycles are disabled" };
  // Its settings item outlives the first passes of a long deletion: a workspace being deleted starts no paid work.
  if (await deletionBegun(workspaceId)) return { skip: "the workspace is being deleted" };
  const owner = await payerOf(workspaceId);
  const { plan, limits } = await planOf({ userId: owner, workspaceId });
  if (!limits.has_overnight_cycles) return { skip: `the plan in effect (${plan}) has no overnight cycles` };
  if (await cycleOf(workspaceId, date)) return "already";
  const taskId = cycleTaskId(workspaceId, date, 1);
  // The night is the schedule's; the cutoff is the moment the sources are read (the same instant when the schedule fires).
  const record = db().entities.researchCycle.create({ workspace_id: workspaceId, date, status: "running", attempts: 1, task_id: taskId, cutoff_at: new Date().toISOString(), ...watchFrom(Date.now()) });
  const task = await createTask(
    { id: taskId, workspaceId, userId: owner, taskType: "research_cycle", prompt: promptOf(date, settings.researchProgram?.goals ?? []), cycleDate: date },
    { entities: ["researchCycle"], writes: [asWrite(record)] },
  );
  return task ? "started" : "already";
}

/** How many times the nightly run tries a workspace's start again after a failure (backoff 0.2 s to 2 s). */
export const START_RETRIES = 3;

/**
 * The nightly run (02:00 UTC): a cycle for every workspace with research cycles enabled (the settings' sparse index)
 * whose plan in effect has overnight cycles. Run twice the same night, it starts nothing the second time.
 * @param opts.now the run's clock (default now); `workspaceIds` limits the run to those workspaces (tests share a table)
 */
export async function runNightlyCycles(opts: { now?: Date; workspaceIds?: string[] } = {}): Promise<CycleRunReport> {
  const now = opts.now ?? new Date();
  const ids = opts.workspaceIds ?? (await workspacesWithCycles());
  const report: CycleRunReport = { date: utcDate(now), started: [], already: [], skipped: [], errors: [] };
  const queue = [...ids];
  const worker = async () => {
    for (let ws = queue.shift(); ws; ws = queue.shift()) {
      try {
        // A failure to start (a throttled or refused write) is tried again at once, a few times: the night's record
        // does not exist yet, so nothing else would start it (the handler's own retry is the last resort).
        const outcome = await pRetry(() => startCycle(ws, now), {
          retries: START_RETRIES,
          factor: 2,
          minTimeout: 200,
          maxTimeout: 2_000,
          randomize: true,
          shouldRetry: ({ error }) => !(error instanceof AppError && error.status < 500),
        });
        if (outcome === "started") report.started.push(ws);
        else if (outcome === "already") report.already.push(ws);
        else report.skipped.push({ workspace_id: ws, reason: outcome.skip });
      } catch (err) {
        report.errors.push({ workspace_id: ws, error: err });
      }
    }
  };
  // A few at a time: each starts one execution; the work itself runs in the executions.
  await Promise.all(Array.from({ length: 4 }, worker));
  return report;
}

/** What one retry pass did. */
export interface CycleRetryReport {
  due: number;
  retried: number;
  /** Retries dropped: the night is over, or the record changed meanwhile. */
  dropped: number;
  /** Running records whose task had ended without them: they took its outcome now. */
  settled: number;
  errors: unknown[];
}

/**
 * Retry the failed cycles owed their one retry (the records' sparse index, `retry_at` passed), run with the task
 * sweeper. The retry's task is created with the record's move to attempt 2 in one transaction conditioned on the
 * record as read, so two sweepers retry once. A retry due after its night ended is dropped (a cycle is a night's).
 * The same pass watches the running cycles (`watchRunningCycles`; with `all`, every one whatever its time).
 * @param opts.workspaceId limits the pass to one workspace (tests share a table)
 */
export async function retryFailedCycles(opts: { now?: Date; workspaceId?: string; all?: boolean } = {}): Promise<CycleRetryReport> {
  const now = opts.now ?? new Date();
  const { data } = await db()
    .entities.researchCycle.query.retries({ retry: CYCLE_RETRY })
    .lte({ retry_at: now.toISOString() })
    .where((attr, op) => (opts.workspaceId ? op.eq(attr.workspace_id, opts.workspaceId) : ""))
    .go({ limit: 100 });
  const report: CycleRetryReport = { due: data.length, retried: 0, dropped: 0, settled: 0, errors: [] };
  for (const seen of data as CycleItem[]) {
    try {
      report[(await retryOne(seen, now)) ? "retried" : "dropped"]++;
    } catch (err) {
      report.errors.push(err);
    }
  }
  const watched = await watchRunningCycles({ now, workspaceId: opts.workspaceId, all: opts.all });
  report.settled = watched.settled;
  report.errors.push(...watched.errors);
  return report;
}

/**
 * The running cycles due a look (the sparse index's `cycle#watch` partition, `retry_at` passed; every one with `all`,
 * the embedded runtime at start-up): a record whose task has ended takes the task's outcome (`settleCycle`), as the
 * task's end would have written it had its writer not stopped between the two writes; one whose task still runs is
 * looked at again a heartbeat window later. The task sweeper ends every task (a dead worker's is resumed or failed),
 * so no record stays running.
 * @param opts.workspaceId limits the pass to one workspace (tests share a table)
 * @returns the records settled now, and the errors of the ones that could not be looked at (tried on the next pass)
 */
export async function watchRunningCycles(opts: { now?: Date; workspaceId?: string; all?: boolean } = {}): Promise<{ settled: number; errors: unknown[] }> {
  const now = opts.now ?? new Date();
  const query = db().entities.researchCycle.query.retries({ retry: CYCLE_WATCH });
  const { data } = await (opts.all ? query : query.lte({ retry_at: now.toISOString() }))
    .where((attr, op) => (opts.workspaceId ? op.eq(attr.workspace_id, opts.workspaceId) : ""))
    .go({ limit: 100 });
  const out = { settled: 0, errors: [] as unknown[] };
  for (const seen of data as CycleItem[]) {
    try {
      // The index entry may be stale (eventually consistent GSI): decide on the record and the task themselves.
      const record = await cycleOf(seen.workspace_id, seen.date);
      if (!record || record.status !== "running" || record.retry !== CYCLE_WATCH) continue;
      const task = await readTask(record.workspace_id, record.task_id);
      if (task && isTerminal(task.status)) {
        await settleCycle(task);
        out.settled++;
        continue;
      }
      await db()
        .entities.researchCycle.patch({ workspace_id: record.workspace_id, date: record.date })
        // The status goes with the index's keys: ElectroDB evaluates the sparse index's condition on what the write sets.
        .set({ status: "running", ...watchFrom(now.getTime()) })
        .where((attr, op) => `${op.eq(attr.status, "running")} AND ${op.eq(attr.task_id, record.task_id)}`)
        .go()
        .catch((err: unknown) => {
          if (!isConditionalFailure(err)) throw err;
        });
    } catch (err) {
      out.errors.push(err);
    }
  }
  return out;
}

async function retryOne(seen: CycleItem, now: Date): Promise<boolean> {
  const record = await cycleOf(seen.workspace_id, seen.date);
  if (!record || record.status !== "failed" || record.retry !== CYCLE_RETRY) return false;
  const key = { workspace_id: record.workspace_id, date: record.date };
  // A cycle is a night's: a retry due after its date ended (the sweeper was down) is dropped.
  const nightEnds = Date.parse(`${record.date}T00:00:00.000Z`) + 86_400_000;
  const settings = await settingsOf(record.workspace_id);
  // Cycles turned off since the failure, or the workspace being deleted: the retry is dropped, not run and charged.
  if (record.attempts >= MAX_CYCLE_ATTEMPTS || now.getTime() >= nightEnds || !settings.researchCycleEnabled || (await deletionBegun(record.workspace_id))) {
    try {
      await db().entities.researchCycle.patch(key).remove(["retry", "retry_at"]).where((attr, op) => op.eq(attr.attempts, record.attempts)).go();
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
    }
    return false;
  }
  const attempt = record.attempts + 1;
  const taskId = cycleTaskId(record.workspace_id, record.date, attempt);
  const moved = db()
    .entities.researchCycle.patch(key)
    .set({ status: "running", attempts: attempt, task_id: taskId, ...watchFrom(now.getTime()) })
    .remove(["error", "finished_at"])
    .where((attr, op) => `${op.eq(attr.status, "failed")} AND ${op.eq(attr.attempts, record.attempts)}`);
  const task = await createTask(
    { id: taskId, workspaceId: record.workspace_id, userId: await payerOf(record.workspace_id), taskType: "research_cycle", prompt: `${promptOf(record.date, settings.researchProgram?.goals ?? [])} (retry)`, cycleDate: record.date },
    { entities: ["researchCycle"], writes: [asWrite(moved)] },
  );
  if (task) log().info("research cycle retried", { workspace_id: record.workspace_id, date: record.date, task_id: taskId });
  return task !== null;
}
