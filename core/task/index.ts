/**
 * Background tasks (spec 02 "Background task", "Background tasks" endpoints, "Task progress stream"; DESIGN.md 6.5):
 * spawn, list, get, status, cancel, and the writes of the worker and the sweeper. A task is an item in its workspace's
 * partition plus one workflow execution per attempt (core/task/runner.ts); the worker (core/task/worker.ts) writes
 * phase, progress and heartbeat on the item; every write that moves it is conditioned on the status it read (the
 * state table of core/task/status.ts) and, for the worker's, on its attempt, so a cancel racing a completion, a
 * timeout racing a late worker or two sweepers racing each other all end with exactly one winner.
 */
import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { v5 as uuidv5 } from "uuid";
import pRetry from "p-retry";
import { serviceLog } from "../log";
import { AppError, Errors } from "../error";
import { db, type EntityName } from "../db/service";
import { getAll } from "../db/bulk";
import { asWrite, commitWrites, type WriteItem } from "../db/agent-write";
import { isConditionalFailure } from "../db/errors";
import { fitResponse } from "../response-size";
import { locateFresh, requireMember, requireResourceById } from "../workspace";
import { requireActiveSubscription } from "../billing";
import { planFeatureRequired, planOf } from "../billing/gates";
import { payerOf, startCharge } from "../billing/charge";
import { release } from "../billing/ledger";
import * as Chat from "../chat";
import { settleCycle } from "../cycle/marker";
import { TASK_DUE, TASK_OUTCOME, type TaskEntity } from "./task.entity";
import { canTransition, fromStatusesOf, isTerminal, type TaskStatus } from "./status";
import { TaskSettings } from "./settings";
import { listedTasks, newestFirst } from "./listing";
import { taskRunner } from "./runner";
import {
  PHASES,
  TASK_TIMEOUT_SECONDS,
  type ListTasksQuery,
  type SpawnTaskInput,
  type Task as TaskView,
  type TaskProgress,
  type TaskType,
} from "./schema";

export * from "./schema";
export { isTerminal, TERMINAL_STATUSES } from "./status";
export { setTaskRunner, taskRunner, type TaskExecutionInput, type TaskRunner } from "./runner";

export type TaskItem = EntityItem<TaskEntity>;

const log = () => serviceLog();

/** Namespace of ids derived from a task (its agent run: reserved at spawn, settled by the worker, charged once). */
const TASK_NAMESPACE = "5d1c7b0e-3f4a-4e8b-9c2d-7a6b5e4f3d21";
/** The id of the task's own agent run (core/agent recordRun), the same in every attempt. */
export const runIdOf = (taskId: string): string => uuidv5(`${taskId}:run`, TASK_NAMESPACE);
/** The id of the `salt`-th thing a task creates (a validation kit's documents): a resumed attempt finds its own. */
export const taskItemId = (taskId: string, salt: string): string => uuidv5(`${taskId}:${salt}`, TASK_NAMESPACE);

/**
 * How a task type is charged (spec 02 Credits; DESIGN.md 6.3): `task` types run one recorded agent run of their own
 * (reserved at spawn under `runIdOf`, so an account that cannot carry it gets 402 before anything is created, and
 * settled by the worker); `operation` types run a core operation that reserves and settles its own run (the spawn's
 * reservation only proves the account can carry one and is given back when the operation starts); a research cycle
 * is the system's and its operations charge themselves.
 */
export const CHARGED_AS: Readonly<Record<TaskType, "task" | "operation" | "none">> = {
  research: "task",
  fs_research: "task",
  validation_kit: "task",
  synthesis: "operation",
  recommendation: "operation",
  drafting: "operation",
  research_cycle: "none",
};

const asObject = (v: unknown): Record<string, unknown> => (v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : {});

/** The canonical record (spec 02 Background task). */
export const toView = (t: TaskItem): TaskView => ({
  id: t.id,
  workspace_id: t.workspace_id,
  conversation_id: t.conversation_id ?? null,
  task_type: t.task_type,
  prompt: t.prompt,
  target_document_id: t.target_document_id ?? null,
  status: t.status,
  result_summary: t.result_summary ?? null,
  result_data: asObject(t.result_data),
  error: t.error ?? null,
  created_at: t.created_at,
  started_at: t.started_at ?? null,
  completed_at: t.completed_at ?? null,
  progress_pct: t.progress_pct,
  phase: t.phase,
  message: t.message,
  heartbeat_at: t.heartbeat_at ?? null,
  timeout_seconds: t.timeout_seconds,
  created_by: t.created_by,
});

/** One progress event, and the body of `GET /api/tasks/{task_id}/status` (spec 02: the same shape). */
export const toProgress = (t: Pick<TaskItem, "id" | "status" | "task_type" | "progress_pct" | "phase" | "message" | "started_at" | "completed_at" | "heartbeat_at" | "error" | "result_data">): TaskProgress => ({
  id: t.id,
  status: t.status,
  task_type: t.task_type,
  progress_pct: t.progress_pct,
  phase: t.phase,
  message: t.message,
  started_at: t.started_at ?? null,
  completed_at: t.completed_at ?? null,
  heartbeat_at: t.heartbeat_at ?? null,
  error: t.error ?? null,
  result_data: asObject(t.result_data),
});

const key = (t: { workspace_id: string; id: string }) => ({ workspace_id: t.workspace_id, id: t.id });

/** A task by workspace and id, strongly consistent; null when it does not exist. */
export async function readTask(workspaceId: string, taskId: string): Promise<TaskItem | null> {
  const { data } = await db().entities.task.get({ workspace_id: workspaceId, id: taskId }).go({ consistent: true });
  return data;
}

/** Find a task by id alone (gsi1, eventually consistent: only its workspace is taken from it). */
export async function locateTask(taskId: string): Promise<{ workspace_id: string; created_by: string } | null> {
  const { data } = await db().entities.task.query.byId({ id: taskId }).go({ limit: 1, attributes: ["workspace_id", "created_by"] });
  return data[0] ? { workspace_id: data[0].workspace_id, created_by: data[0].created_by } : null;
}

/**
 * `locateTask`, asked again briefly (`locateFresh`) while the id index does not know the id yet (as
 * `requireResourceById` does for `/status` and `/{id}`): gsi1 lags its table, and a progress stream opened right
 * after the spawn must not answer 404 for the id the spawn just gave. An unknown id pays the wait before its 404.
 */
export async function locateTaskFresh(taskId: string): Promise<{ workspace_id: string; created_by: string } | null> {
  return (await locateFresh(async () => (await locateTask(taskId)) ?? undefined)) ?? null;
}

/**
 * A task fetched by id alone, for a member of its workspace (docs/decisions.md "404 or 403": a non-member gets the 404
 * of an id that does not exist).
 * @throws AppError NOT_FOUND (404).
 */
export async function requireTask(userId: string, taskId: string): Promise<TaskItem> {
  // One round trip once the container knows the id's workspace (core/workspace requireResourceById).
  return requireResourceById<TaskItem>(userId, {
    kind: "task",
    id: taskId,
    what: "Task",
    entity: db().entities.task,
    locate: async () => {
      const found = await locateTask(taskId);
      return found ? { workspace_id: found.workspace_id, id: taskId } : undefined;
    },
  });
}

/** When the sweeper should next look at a task that was just written (pending or running), ISO. */
const dueFrom = (now: number) => new Date(now + TaskSettings.staleMs()).toISOString();

/**
 * `require_feature` for file-store research (spec 02 feature flags: has_fs_researcher, Power only), answered like the
 * route gates (403 FORBIDDEN with the feature, the plan and the plan that has it).
 */
async function requireFsResearcher(userId: string, workspaceId: string): Promise<void> {
  const { plan, limits } = await planOf({ userId, workspaceId });
  if (limits.has_fs_researcher) return;
  throw planFeatureRequired("has_fs_researcher", plan, "fs researcher");
}

/** The conversation must be the caller's, in the workspace (conversations are private, spec 01). @throws 422. */
async function requireOwnConversation(userId: string, workspaceId: string, conversationId: string): Promise<void> {
  const { data } = await db().entities.conversation.get({ workspace_id: workspaceId, id: conversationId }).go({ consistent: true });
  if (!data || data.user_id !== userId) throw Errors.unknownIds("conversation", "conversation_id", [conversationId]);
}

/** The target document must be one of the workspace's (docs/decisions.md "Provenance within the tenant"). @throws 422. */
async function requireWorkspaceDocument(workspaceId: string, documentId: string): Promise<void> {
  const { data } = await db().entities.document.get({ workspace_id: workspaceId, id: documentId }).go({ consistent: true, attributes: ["id"] });
  if (!data) throw Errors.unknownIds("document", "target_document_id", [documentId]);
}

/** The first phase and message of a task that has not started. */
const WAITING = { phase: "pending", progress_pct: 0, message: "Waiting for the runner to start it" };

/** What `createTask` needs. */
export interface NewTask {
  id?: string;
  workspaceId: string;
  userId: string;
  conversationId?: string;
  taskType: TaskType;
  prompt: string;
  targetDocumentId?: string;
  cycleDate?: string;
}

/** The stored item of a new task (pending, attempt 1, in the sweeper's index). */
function newTaskItem(fields: NewTask) {
  const now = Date.now();
  return {
    id: fields.id ?? randomUUID(),
    workspace_id: fields.workspaceId,
    ...(fields.conversationId ? { conversation_id: fields.conversationId } : {}),
    task_type: fields.taskType,
    prompt: fields.prompt,
    ...(fields.targetDocumentId ? { target_document_id: fields.targetDocumentId } : {}),
    status: "pending" as const,
    ...WAITING,
    timeout_seconds: TASK_TIMEOUT_SECONDS[fields.taskType],
    created_by: fields.userId,
    attempt: 1,
    ...(fields.cycleDate ? { cycle_date: fields.cycleDate } : {}),
    sweep: TASK_DUE,
    due_at: dueFrom(now),
    created_at: new Date(now).toISOString(),
  };
}

/** Start the first execution of a task just created; should that fail, the sweeper starts it (the item is durable). */
async function startFirst(item: { workspace_id: string; id: string; timeout_seconds: number }): Promise<void> {
  try {
    await taskRunner().start({ workspace_id: item.workspace_id, task_id: item.id, attempt: 1, timeout_seconds: item.timeout_seconds });
  } catch (err) {
    log().error("task execution did not start; the sweeper will start it", { task_id: item.id, error: err as Error });
  }
}

/**
 * Create a task and start its first execution (internal: spawn and the research cycles). The task is durable before
 * its execution starts: should the start fail, the sweeper starts it (core/task/sweeper.ts).
 * @param alongside writes that must commit with the task's creation in one transaction (a research cycle's night
 *   record); when that transaction is refused (another writer got there first) nothing is created and null returned
 */
export async function createTask(fields: NewTask, alongside?: { entities: EntityName[]; writes: WriteItem[] }): Promise<TaskItem | null> {
  const item = newTaskItem(fields);
  if (alongside) {
    const refused = await commitWrites(["task", ...alongside.entities], [asWrite(db().entities.task.create(item)), ...alongside.writes]);
    if (refused) return null;
  } else {
    await db().entities.task.create(item).go();
  }
  await startFirst(item);
  // The task as created (pending): its runner may already have claimed it by now.
  return item as TaskItem;
}

/**
 * `POST /api/tasks/spawn` (spec 02 Background tasks): a task of the workspace, status pending, its execution started.
 * Checks, in order: membership (403), an active subscription (402), the plan's `has_fs_researcher` for fs_research
 * (403 FORBIDDEN), the conversation is the caller's in this workspace and the target document is the
 * workspace's (422 naming the id), and the account can carry the task's run (402: reserved here, see CHARGED_AS).
 * @returns the task (201).
 */
export async function spawn(userId: string, input: SpawnTaskInput): Promise<TaskView> {
  await requireMember(userId, input.workspace_id);
  await requireActiveSubscription(input.workspace_id);
  if (input.task_type === "fs_research") await requireFsResearcher(userId, input.workspace_id);
  await requireOwnConversation(userId, input.workspace_id, input.conversation_id);
  if (input.target_document_id) await requireWorkspaceDocument(input.workspace_id, input.target_document_id);
  const id = randomUUID();
  // Reserved before the task exists: an account that cannot carry its run is refused (402) with nothing created.
  const charge = await startCharge({ workspaceId: input.workspace_id, runId: runIdOf(id), engine: engineOf() });
  try {
    const item = await createTask({
      id,
      workspaceId: input.workspace_id,
      userId,
      conversationId: input.conversation_id,
      taskType: input.task_type,
      prompt: input.prompt,
      targetDocumentId: input.target_document_id,
    });
    if (!item) throw Errors.notFound("Task");
    return toView(item);
  } catch (err) {
    await charge.release();
    throw err;
  }
}

/**
 * The engine a task's own run is reserved as at spawn (core/billing/charge.ts `reservationFor`): the configured AI
 * engine, which the agent loop and the operations run on (TaskSettings.engine).
 */
export const engineOf = (): string => TaskSettings.engine();

/**
 * `GET /api/tasks` (spec 02): the workspace's tasks, newest first, optionally of one status; limit default 20, max 100.
 * Counting and ordering need every matching task, but only its id and creation time: those come from the tasks' slim
 * index (core/task/listing.ts; its entries hold no result, so the count reads a few hundred bytes per task, not the
 * task), and the page's tasks are then read whole, by key and strongly consistently, in one batch get.
 * The index is eventually consistent: a task spawned a moment ago may be missing from the list (and from `total`), or
 * counted under the status it just left, typically for well under a second; a task read for the page shows its
 * current state. A page ends early when it would weigh more than 5 MB (`fitResponse`).
 * @returns `{tasks, total}`, total counting every match. @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function list(userId: string, q: ListTasksQuery): Promise<{ tasks: TaskView[]; total: number }> {
  await requireMember(userId, q.workspace_id);
  const keys = await listedTasks(q.workspace_id, q.status);
  const page = keys.slice(q.offset, q.offset + q.limit);
  if (!page.length) return { tasks: [], total: keys.length };
  // A task deleted between the two reads is left out of the page; so is one whose status moved off the filter since
  // the index (eventually consistent) was read: a `status=running` page never shows a completed task.
  const tasks = (await getAll(page.map((k) => ({ workspace_id: q.workspace_id, id: k.id })), (k) => db().entities.task.get(k).go({ consistent: true }))) as TaskItem[];
  const shown = q.status ? tasks.filter((t) => t.status === q.status) : tasks;
  // A task may carry 100 KB of result, 10,000 characters of prompt and more: a page of 100 can pass Lambda's 6 MB
  // answer. It ends early instead (`fitResponse`), as the other lists do: the next page starts at offset + its tasks.
  return { tasks: fitResponse(shown.sort(newestFirst).map(toView)), total: keys.length };
}

/** `GET /api/tasks/{task_id}`: the canonical record. @throws AppError NOT_FOUND (404). */
export async function get(userId: string, taskId: string): Promise<TaskView> {
  return toView(await requireTask(userId, taskId));
}

/** `GET /api/tasks/{task_id}/status`: the progress payload (spec 02: the same shape as one progress event). */
export async function status(userId: string, taskId: string): Promise<TaskProgress> {
  return toProgress(await requireTask(userId, taskId));
}

/** The fields the outcome message's write removes: the task leaves the sweeper's index. */
const UNLISTED = ["sweep", "due_at"] as const;

/**
 * What a terminal write sets besides the status: the task moves to the sweeper's outcome partition, due once its end's
 * own write of the outcome message (with its retries) is long over; that write, when it lands, takes it out
 * (`writeOutcome`). So a message whose write failed, or whose writer stopped right after the end, is written later.
 */
const owingOutcome = () => ({ sweep: TASK_OUTCOME, due_at: new Date(Date.now() + TaskSettings.staleMs()).toISOString() });

/**
 * `POST /api/tasks/{task_id}/cancel` (spec 02): pending or running → cancelled, one conditional write on the status
 * read, then the execution is stopped (DESIGN.md 6.5). A completion (or failure) that lands first wins: the cancel
 * then answers 409 with the task's status. A task that moved from pending to running meanwhile is cancelled as
 * running.
 * @returns the task, status cancelled.
 * @throws AppError NOT_FOUND (404); INVALID_STATE (409) for a completed, failed or cancelled task.
 */
export async function cancel(userId: string, taskId: string): Promise<TaskView> {
  let task = await requireTask(userId, taskId);
  for (let tries = 0; tries < 3; tries++) {
    if (!canTransition(task.status, "cancelled")) {
      throw new AppError("INVALID_STATE", `The task is ${task.status}; only pending or running tasks can be cancelled`, { status: task.status });
    }
    const seen = task.status;
    let cancelled: TaskItem;
    try {
      const { data } = await db()
        .entities.task.patch(key(task))
        .set({ status: "cancelled", completed_at: new Date().toISOString(), message: "Cancelled", ...owingOutcome() })
        .add({ revision: 1 })
        .where((attr, op) => op.eq(attr.status, seen))
        .go({ response: "all_new" });
      cancelled = data as TaskItem;
    } catch (err) {
      if (!isConditionalFailure(err)) throw err;
      const again = await readTask(task.workspace_id, task.id);
      if (!again) throw Errors.notFound("Task");
      task = again;
      continue;
    }
    // The task is cancelled: the answer says so whatever follows (a 500 here would send the client's retry to a 409).
    // What follows is logged when it fails and caught up later: a research cycle's night record by the sweeper's
    // watch of running cycles (core/cycle `watchRunningCycles`, which settles a record whose task has ended) or by
    // `settleEndedCycle` when the stopped worker's late write lands; the spawn's hold by the credit sweeper.
    await stopExecution(cancelled, "Cancelled by a member of the workspace");
    try {
      await afterTerminal(cancelled, { working: seen === "running" });
    } catch (err) {
      log().error("after the task's cancel, its outcome could not be recorded everywhere; the sweepers catch up", { task_id: cancelled.id, error: err as Error });
    }
    return toView(cancelled);
  }
  throw new AppError("CONFLICT", "The task kept changing while it was cancelled; try again");
}

/** Stop the execution of the task's attempt; a failure is logged (the worker stops on its own at its next write). */
async function stopExecution(task: TaskItem, cause: string): Promise<void> {
  try {
    await taskRunner().stop({ task_id: task.id, attempt: task.attempt }, cause);
  } catch (err) {
    log().warn("task execution could not be stopped; its worker stops at its next write", { task_id: task.id, error: err as Error });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The worker's writes (core/task/worker.ts, functions/steps/task-*.ts): each conditioned on the attempt it belongs to.

/**
 * The runner starts an attempt: pending → running (first start: started_at, the type's first phase), or running →
 * running for a resumed attempt (the sweeper moved `attempt` on; started_at is kept). Conditioned on the attempt, the
 * status read and the attempt not claimed already (`claimed_attempt`), so a duplicate, retried or superseded
 * execution gets null and writes nothing: a Run retried after a Lambda fault never runs a second worker of the attempt.
 */
export async function claimAttempt(workspaceId: string, taskId: string, attempt: number): Promise<TaskItem | null> {
  const task = await readTask(workspaceId, taskId);
  if (!task || task.attempt !== attempt || task.claimed_attempt === attempt || !canTransition(task.status, "running")) return null;
  const now = Date.now();
  const iso = new Date(now).toISOString();
  const first = task.status === "pending";
  try {
    const { data } = await db()
      .entities.task.patch(key(task))
      .set({
        status: "running",
        claimed_attempt: attempt,
        heartbeat_at: iso,
        due_at: dueFrom(now),
        sweep: TASK_DUE,
        ...(first ? { started_at: iso, ...firstPhase(task.task_type) } : { message: `Resumed (attempt ${attempt})` }),
      })
      .add({ revision: 1 })
      .where((attr, op) => `${op.eq(attr.status, task.status)} AND ${op.eq(attr.attempt, attempt)} AND (${op.notExists(attr.claimed_attempt)} OR ${op.ne(attr.claimed_attempt, attempt)})`)
      .go({ response: "all_new" });
    return data as TaskItem;
  } catch (err) {
    if (isConditionalFailure(err)) return null;
    throw err;
  }
}

/** The phase a task reports when its runner starts (spec 02 Phases by task type). */
function firstPhase(type: TaskType): { phase: string; progress_pct: number; message: string } {
  if (type === "validation_kit") return { phase: "assumption_map", progress_pct: PHASES.validation_kit.assumption_map, message: "Mapping the assumptions" };
  if (type === "fs_research") return { phase: "starting", progress_pct: PHASES.fs_research.starting, message: "Starting the research" };
  return { phase: "running", progress_pct: 1, message: "Started" };
}

/** What a worker reports: any of phase, progress and message, and the steps it has finished. */
export interface ProgressUpdate {
  phase?: string;
  progress_pct?: number;
  message?: string;
  checkpoint?: Record<string, unknown>;
}

/**
 * A worker's progress and heartbeat: running → running, conditioned on the attempt (a cancelled, failed or superseded
 * task refuses it). @returns false when refused: the worker must stop, writing nothing more.
 */
export async function writeProgress(workspaceId: string, taskId: string, attempt: number, update: ProgressUpdate = {}): Promise<boolean> {
  const now = Date.now();
  try {
    await db()
      .entities.task.patch({ workspace_id: workspaceId, id: taskId })
      .set({
        heartbeat_at: new Date(now).toISOString(),
        due_at: dueFrom(now),
        sweep: TASK_DUE,
        status: "running",
        ...(update.phase !== undefined ? { phase: update.phase } : {}),
        ...(update.progress_pct !== undefined ? { progress_pct: Math.max(0, Math.min(100, Math.round(update.progress_pct))) } : {}),
        ...(update.message !== undefined ? { message: update.message.slice(0, 1000) } : {}),
        ...(update.checkpoint !== undefined ? { checkpoint: update.checkpoint } : {}),
      })
      .add({ revision: 1 })
      .where((attr, op) => `${op.eq(attr.status, "running")} AND ${op.eq(attr.attempt, attempt)}`)
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** Largest result the item keeps, in bytes of JSON (the item must stay well under DynamoDB's 400 KB). */
const MAX_RESULT_BYTES = 100_000;
const storableResult = (data: Record<string, unknown>): Record<string, unknown> => {
  const json = JSON.stringify(data);
  return Buffer.byteLength(json) <= MAX_RESULT_BYTES ? data : { truncated: true, preview: json.slice(0, MAX_RESULT_BYTES / 2) };
};

/**
 * The worker finished: running → completed with the result, conditioned on the attempt (a cancel or a timeout that
 * landed first wins, and this returns null). Moves to the sweeper's outcome partition until its message is written.
 */
export async function completeTask(workspaceId: string, taskId: string, attempt: number, result: { summary: string; data: Record<string, unknown> }, phase = "complete"): Promise<TaskItem | null> {
  try {
    const { data } = await db()
      .entities.task.patch({ workspace_id: workspaceId, id: taskId })
      .set({
        status: "completed",
        phase,
        progress_pct: 100,
        message: "Completed",
        result_summary: result.summary.slice(0, 4000),
        result_data: storableResult(result.data),
        completed_at: new Date().toISOString(),
        ...owingOutcome(),
      })
      // A completed task resumes no step: its checkpoint goes, so it and the result never share the 400 KB item.
      // (A failed one keeps it: a research cycle's retry takes the chunks its earlier attempts synthesized.)
      .remove(["checkpoint"])
      .add({ revision: 1 })
      .where((attr, op) => `${op.eq(attr.status, "running")} AND ${op.eq(attr.attempt, attempt)}`)
      .go({ response: "all_new" });
    const done = data as TaskItem;
    await afterTerminal(done);
    return done;
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    await settleEndedCycle(workspaceId, taskId);
    return null;
  }
}

/**
 * The task failed (an error, its timeout, a runner that never started it, a worker that stopped): pending or running
 * → failed with `error`. With `attempt`, only that attempt's failure is written (a superseded execution's is not).
 * @param opts.onlyRunning fail it only if running (the Fail state: a pending task was never claimed by the attempt, and
 *   is left to the sweeper, which fails it only after TASK_MAX_ATTEMPTS attempts)
 * @returns the failed task, or null when it had already ended (or moved to another attempt, or was left pending).
 */
export async function failTask(workspaceId: string, taskId: string, error: string, attempt?: number, opts: { onlyRunning?: boolean } = {}): Promise<TaskItem | null> {
  const from = opts.onlyRunning ? (["running"] as TaskStatus[]) : fromStatusesOf("failed");
  try {
    const { data } = await db()
      .entities.task.patch({ workspace_id: workspaceId, id: taskId })
      .set({ status: "failed", error: error.slice(0, 2000), message: "Failed", completed_at: new Date().toISOString(), ...owingOutcome() })
      .add({ revision: 1 })
      .where((attr, op) => [`(${from.map((s) => op.eq(attr.status, s)).join(" OR ")})`, ...(attempt !== undefined ? [op.eq(attr.attempt, attempt)] : [])].join(" AND "))
      .go({ response: "all_new" });
    const failed = data as TaskItem;
    await afterTerminal(failed);
    return failed;
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    await settleEndedCycle(workspaceId, taskId);
    return null;
  }
}

/**
 * A task that had ended already when its completion or failure was written again: if it is a research cycle's, its
 * night record takes the outcome now, in case the first writer ended the task and then failed (or stopped) before the
 * record did. That writer's error reaches Fail (Step Functions' Catch), whose write lands here, so the record is not
 * left `running` with its retry never owed. Idempotent: `settleCycle` writes only a record still running this task.
 */
async function settleEndedCycle(workspaceId: string, taskId: string): Promise<void> {
  const task = await readTask(workspaceId, taskId);
  if (task?.cycle_date && isTerminal(task.status)) await settleCycle(task);
}

/**
 * A new attempt of a pending or running task whose execution is gone (the sweeper): `attempt` moves on, conditioned on
 * the one read, so two sweepers cannot both resume it; then its execution starts.
 * @returns the task with its new attempt, or null when another writer got there first.
 */
export async function nextAttempt(task: TaskItem): Promise<TaskItem | null> {
  const now = Date.now();
  try {
    const { data } = await db()
      .entities.task.patch(key(task))
      // The status goes with the index's keys: ElectroDB evaluates the sparse index's condition on what the write sets.
      .set({ status: task.status, attempt: task.attempt + 1, due_at: dueFrom(now), sweep: TASK_DUE, message: task.status === "running" ? "The worker stopped; resuming" : "Starting again" })
      .add({ revision: 1 })
      .where((attr, op) => `${op.eq(attr.status, task.status)} AND ${op.eq(attr.attempt, task.attempt)}`)
      .go({ response: "all_new" });
    const next = data as TaskItem;
    await taskRunner().start({ workspace_id: next.workspace_id, task_id: next.id, attempt: next.attempt, timeout_seconds: next.timeout_seconds });
    return next;
  } catch (err) {
    if (isConditionalFailure(err)) return null;
    throw err;
  }
}

/** Look at a task again later (the sweeper: its execution still runs). */
export async function postpone(task: TaskItem): Promise<void> {
  try {
    await db().entities.task.patch(key(task)).set({ status: task.status, due_at: dueFrom(Date.now()), sweep: TASK_DUE }).add({ revision: 1 }).where((attr, op) => `${op.eq(attr.status, task.status)} AND ${op.eq(attr.attempt, task.attempt)}`).go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

/**
 * Give back the spawn's reservation of a task's run (`runIdOf`, core/billing ledger `release`), if it is still held:
 * the ledger releases a run once, and a run that settled (its worker's recorded run) has no hold left, so this is a
 * no-op then and never charges twice. A settle that arrives after it charges the run from the spendable balance.
 * Nothing for a type whose spawn reserves nothing (a research cycle).
 */
export async function releaseSpawnReservation(task: Pick<TaskItem, "id" | "workspace_id" | "task_type">): Promise<void> {
  if (CHARGED_AS[task.task_type] === "none") return;
  await release(await payerOf(task.workspace_id), runIdOf(task.id));
}

/**
 * The spawn's reservation of a task that ended goes back (`releaseSpawnReservation`): a task cancelled or failed
 * before its run started, or whose operation refused to start, would otherwise hold it until the credit sweeper's
 * stale-hold bound. Except while a worker of the first attempt may still be inside the task's own run (a running
 * `task`-type task just cancelled): that run settles the hold itself (a cancelled run's minimum charge, spec 02
 * Credits), and the worker gives back what is left once it stops (core/task/worker.ts). A failure is logged: the
 * credit sweeper releases a stale hold.
 */
async function releaseAtEnd(task: TaskItem, working: boolean): Promise<void> {
  if (working && CHARGED_AS[task.task_type] === "task" && task.attempt === 1) return;
  try {
    await releaseSpawnReservation(task);
  } catch (err) {
    log().warn("the task's spawn reservation could not be given back; the credit sweeper releases it", { task_id: task.id, error: err as Error });
  }
}

/**
 * What follows a task's end, once: the spawn's reservation goes back if its run never took it (`releaseAtEnd`), a
 * research cycle's night record learns its outcome (core/cycle), and the task's conversation gets a message saying
 * how it ended (`writeOutcome`). None undoes the end; a failure of the reservation's release or of the message is
 * logged (the credit sweeper releases a stale hold; the task sweeper writes the message, core/task/sweeper.ts).
 * @param opts.working the task was running when it ended by another writer than its worker (a cancel)
 */
async function afterTerminal(task: TaskItem, opts: { working?: boolean } = {}): Promise<void> {
  await releaseAtEnd(task, opts.working ?? false);
  if (task.cycle_date) await settleCycle(task);
  try {
    await writeOutcome(task);
  } catch (err) {
    log().warn("the task's outcome could not be added to its conversation; the task sweeper adds it later", { task_id: task.id, error: err as Error });
  }
}

/** Tries of the outcome message's write after the first, backing off (p-retry: 0.2 s, 0.4 s, 0.8 s). */
const OUTCOME_RETRIES = 3;

/** The id of a task's outcome message: derived from the task, so every writer of it writes the same message. */
export const outcomeMessageIdOf = (taskId: string): string => taskItemId(taskId, "outcome-message");

/** What `writeOutcome` did: wrote the message; found it written before; or nothing to write (see there). */
export type OutcomeWrite = "written" | "found" | "none";

/**
 * The ended task's message in its conversation (docs/decisions.md "Outcome in the conversation"), written once: under
 * an id derived from the task, in one transaction with the task's mark (`outcome_message_id`, conditioned on its
 * absence), which also takes the task out of the sweeper's outcome partition. A writer that tries again after a
 * failure it could not see through (a lost response, a stop before it knew) finds the mark and writes nothing. Tried
 * OUTCOME_RETRIES more times on a failure, backing off. A task without a conversation, or whose conversation is gone (or
 * cannot take the message), only leaves the partition: there is nothing to write to.
 * @returns written, found (written before), or none (nothing to write to)
 * @throws the write's error once the retries are spent (the task stays in the partition; the sweeper tries again)
 */
export async function writeOutcome(task: TaskItem): Promise<OutcomeWrite> {
  if (!task.conversation_id) {
    await leaveOutcomePartition(task);
    return "none";
  }
  const id = outcomeMessageIdOf(task.id);
  const guard = asWrite(db().entities.task.patch(key(task)).set({ outcome_message_id: id }).remove([...UNLISTED]).add({ revision: 1 }).where((attr, op) => op.notExists(attr.outcome_message_id)));
  const conversation = { id: task.conversation_id, workspace_id: task.workspace_id, user_id: task.created_by };
  const message = { role: "assistant" as const, content: outcomeMessage(task), inferred_intent: `task_${task.status}`, execution_metadata: { task_id: task.id, task_type: task.task_type, status: task.status } };
  // Not tried again: a refused guard (an earlier try, or writer, wrote it), a conversation gone, a message refused.
  const final = (err: unknown) => err instanceof Chat.AlreadyAppended || (err instanceof AppError && (err.code === "NOT_FOUND" || err.code === "VALIDATION_ERROR"));
  try {
    await pRetry(() => Chat.appendMessage(conversation, message, { once: { id, entity: "task", guard } }), {
      retries: OUTCOME_RETRIES,
      minTimeout: 200,
      factor: 2,
      shouldRetry: ({ error }) => !final(error),
    });
    return "written";
  } catch (err) {
    if (err instanceof Chat.AlreadyAppended) return "found";
    if (!final(err)) throw err;
    log().warn("the task's outcome message has nowhere to go; it is not written", { task_id: task.id, error: err as Error });
    await leaveOutcomePartition(task);
    return "none";
  }
}

/** An ended task leaves the sweeper's outcome partition with no message written (none is owed, or none can be). */
export async function leaveOutcomePartition(task: Pick<TaskItem, "workspace_id" | "id">): Promise<void> {
  try {
    await db().entities.task.patch(key(task)).remove([...UNLISTED]).add({ revision: 1 }).where((attr, op) => op.eq(attr.sweep, TASK_OUTCOME as typeof TASK_DUE | typeof TASK_OUTCOME)).go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

const TYPE_NAMES: Record<TaskType, string> = {
  validation_kit: "validation kit",
  fs_research: "file-store research",
  research: "research",
  synthesis: "synthesis",
  recommendation: "recommendations",
  drafting: "drafting",
  research_cycle: "research cycle",
};

/** The conversation's line about a task's end. */
function outcomeMessage(task: TaskItem): string {
  const what = `The background ${TYPE_NAMES[task.task_type]} task [task ${task.id}]`;
  if (task.status === "completed") return `${what} completed. ${task.result_summary ?? ""}`.trim();
  if (task.status === "failed") return `${what} failed: ${task.error ?? "no reason was recorded"}`;
  return `${what} was cancelled.`;
}

export { isTerminal as isTerminalStatus };
export type { TaskStatus };
