/**
 * The task sweeper (DESIGN.md 6.5; the pattern of core/pipeline/recovery.ts): the durable record drives the work. Every
 * pending or running task sits in the sparse `due` index (gsi3, `task#due`) with the time its heartbeat (or its spawn)
 * goes stale; this Queries the entries due by now (never Scans) and, for each:
 *
 * - an execution of its attempt is still running (Step Functions' DescribeExecution in AWS, the local runner's own
 *   record on the embedded runtime): looked at again later (the task's timeout ends a hung one);
 * - pending, its execution gone or never started: a new attempt starts it;
 * - running, its heartbeat stale and its execution gone (the worker died: a crash, a killed process): a new attempt
 *   resumes it, skipping the steps the dead attempt finished (their results are on the task);
 * - either, past TASK_MAX_ATTEMPTS attempts: failed with the reason, never left pending or running.
 *
 * Each new attempt is one conditional write on the attempt read, so two sweepers resume a task once. The same pass
 * writes the outcome message of an ended task whose end did not (the index's `task#outcome` partition, core/task
 * `writeOutcome`: once, whoever writes it) and retries the research cycles owed their retry (core/cycle).
 */
import { db } from "../db/service";
import { retryFailedCycles, type CycleRetryReport } from "../cycle";
import { serviceLog } from "../log";
import { TASK_DUE, TASK_OUTCOME } from "./task.entity";
import { failTask, leaveOutcomePartition, nextAttempt, postpone, readTask, writeOutcome, type TaskItem } from "./index";
import { taskRunner } from "./runner";
import { TaskSettings } from "./settings";

/** What one sweep did, by outcome (counts of tasks). */
export interface TaskSweepReport {
  /** Tasks the sparse index returned as due. */
  due: number;
  /** An execution of the task's attempt was still running: looked at again later. */
  running: number;
  /** A new attempt started (a pending task's execution never ran, or a dead worker's task resumed). */
  resumed: number;
  /** Failed with the reason: attempts used up. */
  failed: number;
  /** Nothing to do: the task moved on meanwhile (finished, or its heartbeat is fresh again). */
  skipped: number;
  /** Ended tasks owing their conversation the outcome message: written now, found written, or given up. */
  outcomes: { due: number; written: number; found: number; dropped: number };
  cycles: Omit<CycleRetryReport, "errors">;
  errors: unknown[];
}

/**
 * How long after its end a task's outcome message is still written by the sweeper, ms: past it the message is given
 * up (logged), so an entry that can never be written (a table that keeps refusing it) does not stay in every sweep.
 */
export const OUTCOME_WINDOW_MS = 24 * 60 * 60 * 1000;

/** Why a task whose attempts are used up failed. */
export const exhaustedError = (task: Pick<TaskItem, "status" | "attempt">, staleSeconds: number): string =>
  task.status === "pending"
    ? `The task runner did not start the task after ${task.attempt} attempts`
    : `The worker stopped responding (no heartbeat for ${staleSeconds}s) ${task.attempt} times; the task was not resumed again`;

/**
 * Sweep the due tasks (and the research cycles owed a retry).
 * @param opts.now the sweep's clock (default now); `all` looks at every pending or running task whatever its due time
 *   (the embedded runtime at start-up: nothing of a previous process runs any more); `workspaceId` limits the sweep to
 *   one workspace (tests share a table)
 */
export async function sweepTasks(opts: { now?: number; all?: boolean; workspaceId?: string; limit?: number } = {}): Promise<TaskSweepReport> {
  const now = opts.now ?? Date.now();
  const query = db().entities.task.query.due({ sweep: TASK_DUE });
  const { data } = await (opts.all ? query : query.lte({ due_at: new Date(now).toISOString() }))
    .where((attr, op) => (opts.workspaceId ? op.eq(attr.workspace_id, opts.workspaceId) : ""))
    .go({ limit: opts.limit ?? 200 });
  const report: TaskSweepReport = {
    due: data.length, running: 0, resumed: 0, failed: 0, skipped: 0,
    outcomes: { due: 0, written: 0, found: 0, dropped: 0 },
    cycles: { due: 0, retried: 0, dropped: 0, settled: 0 }, errors: [],
  };
  for (const seen of data as TaskItem[]) {
    try {
      report[await recover(seen, now, opts.all ?? false)]++;
    } catch (err) {
      report.errors.push(err);
    }
  }
  // Ended tasks whose outcome message is still owed: only those in the partition, so the cost follows the failures.
  const owed = db().entities.task.query.due({ sweep: TASK_OUTCOME });
  const { data: ended } = await (opts.all ? owed : owed.lte({ due_at: new Date(now).toISOString() }))
    .where((attr, op) => (opts.workspaceId ? op.eq(attr.workspace_id, opts.workspaceId) : ""))
    .go({ limit: opts.limit ?? 200 });
  report.outcomes.due = ended.length;
  for (const seen of ended as TaskItem[]) {
    try {
      const outcome = await owedOutcome(seen, now);
      if (outcome) report.outcomes[outcome]++;
    } catch (err) {
      report.errors.push(err);
    }
  }
  const { errors, ...cycles } = await retryFailedCycles({ now: new Date(now), workspaceId: opts.workspaceId, all: opts.all });
  report.cycles = cycles;
  report.errors.push(...errors);
  return report;
}

/**
 * An ended task's outcome message, if still owed (decided on the item: the index may lag): written (`writeOutcome`,
 * which finds one written before), or given up once the task ended more than OUTCOME_WINDOW_MS ago.
 */
async function owedOutcome(seen: TaskItem, now: number): Promise<"written" | "found" | "dropped" | undefined> {
  const task = await readTask(seen.workspace_id, seen.id);
  if (!task || task.sweep !== TASK_OUTCOME) return undefined;
  if (now - Date.parse(task.completed_at ?? task.created_at) > OUTCOME_WINDOW_MS) {
    serviceLog().warn("the task's outcome message was not written within the window; given up", { task_id: task.id });
    await leaveOutcomePartition(task);
    return "dropped";
  }
  const done = await writeOutcome(task);
  return done === "none" ? "dropped" : done;
}

type Outcome = "running" | "resumed" | "failed" | "skipped";

async function recover(seen: TaskItem, now: number, all: boolean): Promise<Outcome> {
  // The index entry may be stale by now (eventually consistent GSI): decide on the item itself.
  const task = await readTask(seen.workspace_id, seen.id);
  if (!task || task.sweep !== TASK_DUE || (task.status !== "pending" && task.status !== "running")) return "skipped";
  const staleMs = TaskSettings.staleMs();
  const lastSign = Date.parse(task.heartbeat_at ?? task.created_at);
  if (!all && now - lastSign < staleMs) return "skipped";
  if (await taskRunner().isRunning({ task_id: task.id, attempt: task.attempt })) {
    await postpone(task);
    return "running";
  }
  if (task.attempt >= TaskSettings.maxAttempts()) {
    return (await failTask(task.workspace_id, task.id, exhaustedError(task, Math.round(staleMs / 1000)), task.attempt)) ? "failed" : "skipped";
  }
  return (await nextAttempt(task)) ? "resumed" : "skipped";
}
