/**
 * The task worker (DESIGN.md 6.5): what one execution's Run state does for an attempt. It claims the attempt, runs the
 * task type's work (core/task/work.ts) with a heartbeat every TASK_HEARTBEAT_SECONDS, phase and progress as it goes,
 * and the task's timeout (spec 02: validation_kit 240 s, fs_research 600 s, others 300 s) as an abort of everything
 * the work does (model calls and recorded runs read the scope's signal, core/context.ts); then completes it.
 *
 * A failure is thrown for the state machine to catch (its Fail state writes it, functions/steps/task-fail.ts): that way
 * an error, the worker's own deadline and the Run state's timeout (States.Timeout) end the task through one write.
 * A task that was cancelled, failed or taken over by another attempt meanwhile refuses the worker's next write; the
 * worker then stops and writes nothing (`TaskSuperseded`, which the Fail state ignores).
 */
import { serviceLog } from "../log";
import { jsonBytes } from "../json-object";
import { withAbortSignal } from "../context";
import { CHARGED_AS, claimAttempt, completeTask, releaseSpawnReservation, writeProgress, type ProgressUpdate, type TaskItem } from "./index";
import { timedOutError } from "./schema";
import { TaskSettings } from "./settings";
import type { TaskExecutionInput } from "./runner";
import { WORK } from "./work";
import type { WorkContext } from "./context";
import { registerWorker, TaskSuperseded } from "./workers";

export { abortWorker, TaskSuperseded } from "./workers";

const log = () => serviceLog();

/**
 * The most a task's checkpoint holds, in bytes of JSON: with a result of up to 100 KB, a 10,000-character prompt and
 * the task's other fields, well under DynamoDB's 400 KB item. A step whose value would pass it is not checkpointed.
 */
export const CHECKPOINT_MAX_BYTES = 200 * 1024;

/** The task ran past its timeout (the worker's own deadline; Step Functions' is States.Timeout). */
export class TaskTimedOut extends Error {
  override name = "TaskTimedOut";
  constructor(readonly seconds: number) {
    super(timedOutError(seconds));
  }
}

/** What an execution's Run state returns (the state machine's output). */
export interface RunOutcome {
  task_id: string;
  attempt: number;
  outcome: "completed" | "superseded";
}

/**
 * Run one attempt of a task (the Run state of functions/steps/task.asl.ts).
 * @returns completed, or superseded when the attempt was no longer the task's to run (nothing was written)
 * @throws TaskTimedOut past the task's timeout; the work's error (AppError with a message for people, or a defect)
 */
export async function runTask(input: TaskExecutionInput): Promise<RunOutcome> {
  const done = (outcome: RunOutcome["outcome"]): RunOutcome => ({ task_id: input.task_id, attempt: input.attempt, outcome });
  const claimed = await claimAttempt(input.workspace_id, input.task_id, input.attempt);
  if (!claimed) return done("superseded");
  const controller = new AbortController();
  const { signal } = controller;
  const unregister = registerWorker(claimed.id, input.attempt, controller);
  const deadline = setTimeout(() => controller.abort(new TaskTimedOut(claimed.timeout_seconds)), claimed.timeout_seconds * 1000);
  const checkpoint: Record<string, unknown> = { ...((claimed.checkpoint as Record<string, unknown> | undefined) ?? {}) };
  // One write at a time: a heartbeat never overtakes the progress write before it (the item shows the latest).
  let writing: Promise<unknown> = Promise.resolve();
  const write = (update: ProgressUpdate): Promise<void> => {
    const next = writing.then(async () => {
      if (signal.aborted) return;
      if (!(await writeProgress(claimed.workspace_id, claimed.id, input.attempt, update))) controller.abort(new TaskSuperseded("The task was cancelled, failed or resumed elsewhere"));
    });
    writing = next.catch(() => undefined);
    return next;
  };
  const beat = setInterval(() => {
    write({}).catch((err: unknown) => log().warn("task heartbeat failed", { task_id: claimed.id, error: err as Error }));
  }, TaskSettings.heartbeatMs());
  /** A step was not checkpointed (over the budget): neither are the steps after it, in this attempt. */
  let unkept = false;
  const ctx: WorkContext = {
    task: claimed,
    signal,
    async report(update) {
      signal.throwIfAborted();
      await write(update);
      signal.throwIfAborted();
    },
    async step(name, fn) {
      if (Object.hasOwn(checkpoint, name)) return checkpoint[name] as never;
      const value = await fn();
      const next = { ...checkpoint, [name]: value ?? null };
      if (unkept || jsonBytes(next) > CHECKPOINT_MAX_BYTES) {
        // Kept, the checkpoint would push the task past DynamoDB's 400 KB item and fail every write of it, so the
        // task itself: the step is not checkpointed, and a resumed attempt runs it again. Nor is any step after it:
        // a later step may rest on this one's value (a cycle's chunks on its list of sources), and a resumed attempt
        // must not take a later step's value beside a new run of this one.
        if (!unkept) log().warn("a task step's value is not checkpointed, nor the steps after it: the checkpoint would pass its budget", { task_id: claimed.id, step: name, bytes: jsonBytes(next) });
        unkept = true;
        return value;
      }
      checkpoint[name] = value ?? null;
      await ctx.report({ checkpoint: next });
      return value;
    },
  };
  try {
    const result = await withAbortSignal(signal, () => WORK[claimed.task_type](ctx));
    signal.throwIfAborted();
    await writing;
    const completed = await completeTask(claimed.workspace_id, claimed.id, input.attempt, result, result.phase);
    if (!completed) await releaseAfterStop(claimed);
    return done(completed ? "completed" : "superseded");
  } catch (err) {
    const reason: unknown = signal.aborted ? signal.reason : err;
    if (reason instanceof TaskSuperseded) {
      await releaseAfterStop(claimed);
      return done("superseded");
    }
    throw reason;
  } finally {
    clearTimeout(deadline);
    clearInterval(beat);
    unregister();
  }
}

/**
 * A first attempt's worker that stopped because its task ended (or moved on) under it: the task's own run has settled
 * by now if it started (`recordRun` settles before it rethrows), and no other attempt uses the spawn's run id, so the
 * spawn's reservation goes back if nothing took it (a cancel of a running task leaves that to the worker, core/task
 * `releaseAtEnd`, so the cancelled run's minimum charge comes from its hold). Logged on failure: the credit sweeper
 * releases a stale hold.
 */
async function releaseAfterStop(task: TaskItem): Promise<void> {
  if (task.attempt !== 1 || CHARGED_AS[task.task_type] !== "task") return;
  try {
    await releaseSpawnReservation(task);
  } catch (err) {
    log().warn("the task's spawn reservation could not be given back; the credit sweeper releases it", { task_id: task.id, error: err as Error });
  }
}

export type { TaskItem };
