import { failTask } from "../../core/task";
import { timedOutError } from "../../core/task/schema";
import type { TaskExecutionInput } from "../../core/task/runner";

/** The state a failed Run hands the Fail state: the execution's input with the caught error. */
export interface FailedTaskState extends TaskExecutionInput {
  error?: { Error: string; Cause?: string };
}

/** Error names whose messages are written for people (AppError, the worker's own timeout). */
const USER_FACING = new Set(["AppError", "TaskTimedOut"]);

/**
 * The reason a task failed, as a person reads it. Step Functions puts a Lambda error's JSON ({errorType,
 * errorMessage}) in Cause; the local runner puts the message itself. The Run state's timeout (States.Timeout) and the
 * worker's own deadline both read "Task timed out after Ns" (spec 02).
 */
export function reasonOf(state: Pick<FailedTaskState, "error" | "timeout_seconds">): string {
  const error = state.error;
  if (!error) return "The task failed for an unknown reason";
  if (error.Error === "States.Timeout") return timedOutError(state.timeout_seconds);
  let message = error.Cause ?? "";
  try {
    const parsed = JSON.parse(message) as { errorMessage?: string };
    if (parsed && typeof parsed.errorMessage === "string") message = parsed.errorMessage;
  } catch {
    // Cause was the message itself
  }
  if (USER_FACING.has(error.Error) && message) return message;
  if (error.Error.startsWith("Lambda.") || error.Error === "States.TaskFailed") return `The task's worker could not run (${error.Error}); spawn the task again`;
  return `The task failed unexpectedly (${error.Error}); spawn it again, and report it if it happens again`;
}

/**
 * Fail state: running -> failed with the reason, for this execution's attempt only (a superseded one writes nothing).
 * A task still pending was never claimed by this attempt (Lambda's faults outlasted the Run state's retries, or the
 * worker failed before its claim, e.g. a throttled read): it is left pending, and the sweeper starts it again and fails
 * it only once TASK_MAX_ATTEMPTS attempts never started it (docs/decisions.md "Background tasks": pending → failed).
 */
export async function handler(state: FailedTaskState): Promise<{ failed: boolean }> {
  const failed = await failTask(state.workspace_id, state.task_id, reasonOf(state), state.attempt, { onlyRunning: true });
  return { failed: failed !== null };
}
