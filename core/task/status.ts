import * as z from "zod";
import { stateTable } from "../state-table";

/**
 * Background task status machine (spec 02 "States and transitions → Background task"), as ONE table
 * `from → allowed to[]` (DESIGN.md section 4.7). Every write that moves a task is a conditional write on the status it
 * read (core/task/index.ts); this module is the single source of the pairs.
 *
 * The spec's moves: spawn → pending; pending → running (the runner starts); running → completed (finishes); running
 * → failed (errors or runner timeout); pending → cancelled; running → cancelled. Completed and failed tasks cannot be
 * cancelled; completed, failed and cancelled are terminal. Two moves beyond the spec's (docs/decisions.md
 * "Background tasks"):
 * - running → running: the worker's progress, phase and heartbeat writes, and a new attempt taking over a task whose
 *   worker died (the sweeper resumes it); each is conditioned on the attempt that writes it.
 * - pending → failed: the runner never started it (its execution could not be started, attempt after attempt).
 */
export const TaskStatus = z.enum(["pending", "running", "completed", "failed", "cancelled"]).meta({ id: "TaskStatus" });
export type TaskStatus = z.infer<typeof TaskStatus>;

/** New tasks start here (spawn answers 201 with it). */
export const INITIAL_TASK_STATUS: TaskStatus = "pending";

export const TASK_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  pending: ["running", "cancelled", "failed"],
  running: ["running", "completed", "failed", "cancelled"],
  completed: [],
  failed: [],
  cancelled: [],
};

/** Statuses after which nothing moves a task again; the progress stream closes on them (spec 02). */
export const TERMINAL_STATUSES: readonly TaskStatus[] = ["completed", "failed", "cancelled"];
export const isTerminal = (status: string): boolean => (TERMINAL_STATUSES as readonly string[]).includes(status);

const table = stateTable(TASK_TRANSITIONS);

/** The states reachable from `from` in one step, in table order; none for terminal and unknown states. */
export const validTransitions = table.validTransitions;
/** True when the table allows `from -> to`. */
export const canTransition = table.canTransition;
/** @throws AppError INVALID_TRANSITION (422) unless `from -> to` is allowed (a defect guard: callers check first). */
export const assertTransition = table.assertTransition;

/** The statuses a write moving a task to `to` may find it in: the guard of that write's condition. */
export const fromStatusesOf = (to: TaskStatus): TaskStatus[] =>
  (Object.keys(TASK_TRANSITIONS) as TaskStatus[]).filter((from) => TASK_TRANSITIONS[from].includes(to));
