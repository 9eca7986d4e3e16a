/**
 * A night's research cycle record (core/cycle/cycle.entity.ts) as its task's end writes it: the lower half of
 * core/cycle, which core/task calls when a cycle's task ends (core/cycle/index.ts spawns cycles through core/task, so
 * this half imports nothing of core/task and no import runs in a circle).
 */
import type { EntityItem } from "electrodb";
import { v5 as uuidv5 } from "uuid";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { CYCLE_RETRY, type CycleEntity } from "./cycle.entity";

export type CycleItem = EntityItem<CycleEntity>;

const CYCLE_NAMESPACE = "a3f6c2d8-91b4-4e57-8c0a-6d2e1f9b7c45";
/** The task of a night's cycle attempt: the same for every writer, so a second creation is refused, never doubled. */
export const cycleTaskId = (workspaceId: string, date: string, attempt: number): string => uuidv5(`${workspaceId}:${date}:${attempt}`, CYCLE_NAMESPACE);

/** How long after a failed cycle its one retry runs, ms (`CYCLE_RETRY_DELAY_MINUTES`, default 15; the same night). */
export const cycleRetryDelayMs = (): number => {
  const minutes = Number(process.env.CYCLE_RETRY_DELAY_MINUTES ?? NaN);
  return (Number.isFinite(minutes) && minutes >= 0 ? minutes : 15) * 60_000;
};

/** A night's cycles run at most this many times: the first run and one retry (docs/decisions.md). */
export const MAX_CYCLE_ATTEMPTS = 2;

/** The night's record of a workspace, strongly consistent; null when the night has none. */
export async function cycleOf(workspaceId: string, date: string): Promise<CycleItem | null> {
  const { data } = await db().entities.researchCycle.get({ workspace_id: workspaceId, date }).go({ consistent: true });
  return data;
}

/**
 * A cycle's task ended: its night's record takes the outcome, if the record still names this task (a retry's task
 * replaced an earlier one). Completed: the changes are kept for the digest. Failed: the record is owed one retry
 * (`retry_at`, the sparse index) while it has had fewer than MAX_CYCLE_ATTEMPTS runs. Cancelled by a member: failed,
 * and not retried (a person decided). Either way the record leaves the sweeper's watch of running cycles. Called by
 * the task's end (core/task) and, should that writer have stopped before it, by the sweeper (`watchRunningCycles`).
 */
export async function settleCycle(task: { id: string; workspace_id: string; cycle_date?: string; status: string; error?: string; result_data?: unknown }): Promise<void> {
  if (!task.cycle_date) return;
  const record = await cycleOf(task.workspace_id, task.cycle_date);
  if (!record || record.task_id !== task.id || record.status !== "running") return;
  const now = new Date();
  const completed = task.status === "completed";
  const retry = !completed && task.status === "failed" && record.attempts < MAX_CYCLE_ATTEMPTS;
  const changes = (task.result_data as { changes?: unknown } | undefined)?.changes;
  try {
    await db()
      .entities.researchCycle.patch({ workspace_id: task.workspace_id, date: task.cycle_date })
      .set({
        status: completed ? "completed" : "failed",
        finished_at: now.toISOString(),
        ...(completed && changes !== undefined ? { changes } : {}),
        ...(!completed ? { error: (task.status === "cancelled" ? "Cancelled by a member of the workspace" : task.error ?? "The cycle failed").slice(0, 2000) } : {}),
        ...(retry ? { retry: CYCLE_RETRY, retry_at: new Date(now.getTime() + cycleRetryDelayMs()).toISOString() } : {}),
      })
      // Out of the sweeper's watch (the index's keys go with the attributes); a retry's set moves it to `cycle#retry`.
      .remove(retry ? [] : ["retry", "retry_at"])
      .where((attr, op) => `${op.eq(attr.task_id, task.id)} AND ${op.eq(attr.status, "running")}`)
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}
