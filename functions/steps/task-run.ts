import { runTask, type RunOutcome } from "../../core/task/worker";
import type { TaskExecutionInput } from "../../core/task/runner";

/**
 * Run state of the task state machine (functions/steps/task.asl.ts): one attempt of a task, worked to its end.
 * A failure is thrown for the state machine's Catch (functions/steps/task-fail.ts writes it).
 */
export async function handler(input: TaskExecutionInput): Promise<RunOutcome> {
  return runTask(input);
}
