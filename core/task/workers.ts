/**
 * This process's running task workers, by task id (core/task/worker.ts registers each): the embedded runtime's
 * StopExecution aborts one at once (in AWS a stopped execution's worker learns it at its next write). Kept apart from
 * the worker so the local runner can stop workers without loading what they run.
 */

/** The task is no longer this attempt's to write (cancelled, failed, or resumed by another attempt): stop quietly. */
export class TaskSuperseded extends Error {
  override name = "TaskSuperseded";
}

const active = new Map<string, { attempt: number; controller: AbortController }>();

/** Register the worker of a task's attempt; @returns its unregistration. */
export function registerWorker(taskId: string, attempt: number, controller: AbortController): () => void {
  const entry = { attempt, controller };
  active.set(taskId, entry);
  return () => {
    if (active.get(taskId) === entry) active.delete(taskId);
  };
}

/**
 * Abort the worker of a task's attempt if it runs in this process (the embedded runtime's StopExecution, and a dying
 * process's). @returns true when there was one.
 */
export function abortWorker(taskId: string, attempt: number, reason: Error = new TaskSuperseded("The execution was stopped")): boolean {
  const worker = active.get(taskId);
  if (!worker || worker.attempt !== attempt) return false;
  worker.controller.abort(reason);
  return true;
}
