import { createConversions, Entity } from "electrodb";
import { SLIM_LIST_ATTRIBUTES, slimKeysOf, type SlimKeys } from "../db/table";
import type { SlimIndex } from "../db/slim-index";
import { TaskStatus, TaskType } from "./schema";

/**
 * Value of `sweep` while a task is owed work (pending or running): its partition in the sweeper's sparse index is
 * `task#due`. ElectroDB writes an index key only from attributes, so the constant partition is an attribute too.
 */
export const TASK_DUE = "due" as const;
/**
 * Value of `sweep` while an ended task still owes its conversation the outcome message (docs/decisions.md "Outcome in
 * the conversation"): its partition in the same sparse index is `task#outcome`, sorted by when the sweeper writes the
 * message if the end's own write of it did not land. The message's write removes it.
 */
export const TASK_OUTCOME = "outcome" as const;

/**
 * A background task (spec 02 Background task; DESIGN.md 6.5): an item in its workspace's partition, driven by one
 * workflow execution per attempt (Step Functions in AWS, the local runner of the same definition on the embedded
 * runtime). The worker writes phase, progress, message and heartbeat on it; every write that moves it is conditioned
 * on the status it read (core/task/status.ts) and, for the worker's, on its attempt.
 *
 * Indexes:
 * - byWorkspace: the workspace partition (`ws#<id>`, sk `task#<id>`), for strongly consistent reads by key.
 * - byId (gsi1): look-up by id alone (the `/api/tasks/{task_id}` routes).
 * - listed (gsi4, slim): the workspace's tasks newest first (`wstasks#<ws>`, sk `task#<created_at>#<id>`), each entry
 *   carrying only `SLIM_LIST_ATTRIBUTES` (id, status, created_at and ElectroDB's identifiers), so `GET /api/tasks`
 *   counts and orders them without reading their results (a task keeps up to 100 KB). Eventually consistent.
 * - due (gsi3, SPARSE): only pending and running tasks, in one partition `task#due`, sorted by when the sweeper
 *   should look at them (`due_at`: the heartbeat's or the spawn's time plus the staleness bound). Every worker write
 *   moves `due_at` on; the terminal writes move the task to the partition `task#outcome` (`sweep` = TASK_OUTCOME,
 *   `due_at` = when the sweeper writes its outcome message if nothing else did), and the outcome message's write (or,
 *   for a task without a conversation, its end) removes `sweep` and `due_at`, which removes the task from the index.
 */
export const buildTaskEntity = () => new Entity({
  model: { entity: "task", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    /** The spawner's conversation the outcome is added to; absent for a research cycle (the system spawns it). */
    conversation_id: { type: "string" },
    task_type: { type: TaskType.options, required: true },
    prompt: { type: "string", required: true },
    target_document_id: { type: "string" },
    status: { type: TaskStatus.options, required: true, default: "pending" },
    phase: { type: "string", required: true, default: "pending" },
    progress_pct: { type: "number", required: true, default: 0 },
    message: { type: "string", required: true, default: "" },
    result_summary: { type: "string" },
    result_data: { type: "any" },
    error: { type: "string" },
    /** The task type's timeout when it was spawned (spec 02), seconds; the execution's Task state reads it. */
    timeout_seconds: { type: "number", required: true },
    /** The member the task runs as: who spawned it (a research cycle: the workspace owner). */
    created_by: { type: "string", required: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    started_at: { type: "string" },
    completed_at: { type: "string" },
    heartbeat_at: { type: "string" },
    /**
     * +1 on every write: the order of the item's images, so the progress stream never sends an older state after a
     * newer one (the live channel may deliver, after the stream's first read, images written before it).
     */
    revision: { type: "number", required: true, default: 0 },
    /** The current execution's attempt (1 at spawn; the sweeper's resumption adds one). Worker writes are conditioned on it. */
    attempt: { type: "number", required: true, default: 1 },
    /**
     * The last attempt whose worker claimed the task (`claimAttempt`): an attempt is claimed once, so a Run state
     * retried after its worker started (a Lambda fault whose invocation may have run) never runs a second worker of it.
     */
    claimed_attempt: { type: "number" },
    /** Steps an earlier attempt finished, by name, with what they produced: a resumed task does not do them twice. */
    checkpoint: { type: "any" },
    /** The night (UTC date, YYYY-MM-DD) of a research cycle task (core/cycle). */
    cycle_date: { type: "string" },
    /**
     * `TASK_DUE` while pending or running, `TASK_OUTCOME` while ended and owing its conversation the outcome message
     * (the sparse index's partition), absent otherwise.
     */
    sweep: { type: [TASK_DUE, TASK_OUTCOME] as const },
    /** ISO time from which the sweeper looks at the task; present only while in the sweeper's index (`sweep`). */
    due_at: { type: "string" },
    /** The id of the outcome message written to the task's conversation (`once`'s mark: it is written once). */
    outcome_message_id: { type: "string" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["id"], template: "task#${id}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "task#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "task", casing: "none" },
    },
    listed: {
      index: "gsi4",
      // The index's INCLUDE projection (core/db/table.ts); ElectroDB reads its identifiers from it to recognise tasks.
      projection: SLIM_LIST_ATTRIBUTES,
      pk: { field: "gsi4pk", composite: ["workspace_id"], template: "wstasks#${workspace_id}", casing: "none" },
      sk: { field: "gsi4sk", composite: ["created_at", "id"], template: "task#${created_at}#${id}", casing: "none" },
    },
    due: {
      index: "gsi3",
      // Sparse: ElectroDB writes the keys only when this holds, and deletes them when a write makes it false.
      condition: (attr) =>
        typeof attr.due_at === "string" && ((attr.sweep === TASK_DUE && (attr.status === "pending" || attr.status === "running")) || attr.sweep === TASK_OUTCOME),
      pk: { field: "gsi3pk", composite: ["sweep"], template: "task#${sweep}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["due_at"], template: "due#${due_at}", casing: "none" },
    },
  },
});
export type TaskEntity = ReturnType<typeof buildTaskEntity>;

let taskConversions: ReturnType<typeof createConversions> | undefined;

/**
 * The keys of a task's `listed` (gsi4) entry, built by ElectroDB from the index above (its conversions), for the
 * backfill of tasks written before the index (`TASK_LIST_INDEX`, core/db/slim-index.ts): the templates are written once.
 */
const taskListKeysOf = (workspaceId: string, task: { created_at: string; id: string }): SlimKeys =>
  slimKeysOf((taskConversions ??= createConversions(buildTaskEntity() as never)).byAccessPattern.listed.fromComposite.toKeys({ workspace_id: workspaceId, ...task }));

/**
 * The tasks' slim list for core/db/slim-index.ts: the partition's `task#` items of entity `task`, each keyed as
 * `listed` writes it (every task is listed); the backfill reads back id, created_at and status. The workspace's mark
 * is the raw item `ws#<ws>` / `taskindex`.
 */
export const TASK_LIST_INDEX: SlimIndex<"gsi4"> = {
  index: "gsi4",
  markSk: "taskindex",
  skPrefix: "task#",
  entity: "task",
  attributes: ["id", "created_at", "status"],
  keysOf: (workspaceId, t) => {
    if (typeof t.id !== "string" || typeof t.created_at !== "string") return undefined;
    return taskListKeysOf(workspaceId, { created_at: t.created_at, id: t.id });
  },
};

/**
 * A member who opened a task's progress stream (spec 02 Task progress stream: "membership is re-checked on every
 * reconnect, giving 403 FORBIDDEN when lost"). A caller who is not a member of the task's workspace gets the 404 of
 * an unknown id (docs/decisions.md "404 or 403"), unless this item says they watched the task as a member before:
 * then they lost their membership, and the spec's 403 tells them so without telling an outsider anything.
 * Kept 30 days (TTL).
 */
export const buildTaskWatcherEntity = () => new Entity({
  model: { entity: "task_watcher", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    task_id: { type: "string", required: true },
    user_id: { type: "string", required: true },
    ttl: { type: "number", required: true },
  },
  indexes: {
    byTask: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["task_id", "user_id"], template: "taskwatch#${task_id}#${user_id}", casing: "none" },
    },
  },
});
export type TaskWatcherEntity = ReturnType<typeof buildTaskWatcherEntity>;
