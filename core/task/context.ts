/** What the task worker hands a task type's work, and what the work returns (core/task/work.ts, core/cycle/work.ts). */
import type { ProgressUpdate, TaskItem } from "./index";

/** What a task type's work returns: the result the task keeps, and its final phase (default `complete`). */
export interface WorkResult {
  summary: string;
  data: Record<string, unknown>;
  phase?: string;
}

/** What the worker hands a task type's work. */
export interface WorkContext {
  /** The task as its attempt claimed it. */
  task: TaskItem;
  /** Aborts on the task's timeout, its cancellation, or another attempt taking it over. */
  signal: AbortSignal;
  /** Write phase, progress and message (and the heartbeat). @throws the abort's reason when the task is no longer this attempt's. */
  report(update: ProgressUpdate): Promise<void>;
  /** Run a step once across attempts: an earlier attempt's result (kept on the task) is returned instead of running it again. */
  step<T>(name: string, fn: () => Promise<T>): Promise<T>;
}

