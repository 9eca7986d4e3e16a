import { createConversions, Entity } from "electrodb";
import type { SlimIndex } from "../db/slim-index";
import { SLIM_LIST_ATTRIBUTES, slimKeysOf, type SlimKeys } from "../db/table";
import { STORED_STATUSES } from "./status";

/**
 * Value of `sweep` while a row is in the sweeper's sparse index (approved or executing): its partition there is
 * `pa#due`. ElectroDB writes an index key only from attributes, so the constant partition is an attribute too.
 */
export const DUE = "due" as const;

/**
 * Lambda event filter (FilterCriteria pattern) on the table stream for the executor's consumer: only writes that
 * leave a pending action approved. The claim (→ executing) and the final flips do not match, so they never
 * re-trigger it; a deferral (executing → approved with a retry time) does, and the executor skips the row until then. Read by the stack (stacks/PendingActions.ts), the consumer and the embedded stream reader; kept
 * here, beside the attributes it names, so the stacks need not import the executor.
 */
export const APPROVED_STREAM_FILTER = {
  dynamodb: { NewImage: { __edb_e__: { S: ["pending_action"] }, status: { S: ["approved"] } } },
};

/**
 * A pending action (spec 01 Pending action; DESIGN.md 6.2): a gated write the agent attempted, waiting for a member.
 * Stored snake_case like every item; the wire form is camelCase (core/pending-action/index.ts `toView`).
 *
 * Indexes:
 * - byWorkspace: the workspace partition (`ws#<id>`, sk `pa#<id>`), for lists and strongly consistent reads.
 * - byId (gsi1): look-up by id alone (the `/{pa_id}` routes).
 * - byBatch (gsi2): the rows of a batch `{missionId}:{toolName}`, oldest first (batch approve).
 * - listed (gsi4, slim): the workspace's rows newest first (`wspa#<ws>`, sk `pa#<created_at>#<id>`), each entry only
 *   id, status and created_at (`GET /api/pending-actions` counts and orders them without reading rows of up to
 *   4 x 64 KiB; core/pending-action/listing.ts).
 * - due (gsi3, SPARSE): only rows an executor still owes, i.e. approved or executing, in one partition `pa#due`,
 *   sorted by when the sweeper should next look at them (`due_at`: approved_at + grace, the lease's expiry, or the
 *   retry time of a deferred row).
 *   Approve and claim set `sweep` and `due_at` together with the status; the final flips remove both, which
 *   removes the row from the index. The sweeper Queries it; nothing Scans.
 */
export const buildPendingActionEntity = () => new Entity({
  model: { entity: "pending_action", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    mission_id: { type: "string" },
    session_id: { type: "string" },
    conversation_id: { type: "string" },
    batch_id: { type: "string", required: true },
    tool_name: { type: "string", required: true },
    /** The raw arguments the agent passed (validated against the tool's input on create). */
    tool_input: { type: "any", required: true },
    preview: { type: "any", required: true },
    status: { type: STORED_STATUSES, required: true, default: "pending" },
    user_edits: { type: "any" },
    result: { type: "any" },
    error: { type: "string" },
    /** The member the agent acted for. */
    created_by: { type: "string", required: true },
    /** The member who approved or rejected it; execution runs as them. */
    resolved_by: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    resolved_at: { type: "string" },
    executed_at: { type: "string" },
    /** `DUE` while approved or executing (the sparse index's partition), absent otherwise. */
    sweep: { type: [DUE] as const },
    /** ISO time from which the sweeper re-drives the row; present only while approved or executing. */
    due_at: { type: "string" },
    /** The executor holding the row while executing, and until when (epoch ms). */
    lease_owner: { type: "string" },
    lease_expires_at: { type: "number" },
    /** How many times an executor claimed the row. */
    attempts: { type: "number", required: true, default: 0 },
    /**
     * How many of those claims ended deferred: a transient failure put the row back to approved, to be retried at
     * `retry_at`. `attempts - retries` is how many executions were interrupted (a crash, a lost lease).
     */
    retries: { type: "number", required: true, default: 0 },
    /** ISO time before which a deferred row is not executed again (present while it waits). */
    retry_at: { type: "string" },
    /** The transient failure that deferred the row last (not shown on the wire: the row is still approved). */
    last_error: { type: "string" },
    /**
     * Model use (tokens, USD) of the action's run so far over attempts that did not settle: written as each model call
     * of the executing attempt ends (core/billing/charge.ts `Delivery.keepUse`, while it holds the lease) and by its
     * deferral, so an attempt that died or was deferred leaves it (`Delivery.carried`): the next attempt's charge
     * starts from it, so the run's one settle charges all of it; the credit sweeper settles it as failed when the
     * action ends failed with the hold open. Not shown on the wire.
     */
    spent: {
      type: "map",
      properties: {
        tokens: { type: "number", required: true },
        cost_usd: { type: "number", required: true },
      },
    },
    /**
     * What the run that did the action's work owes (core/billing/charge.ts `OwedCharge`: the payer's user id, the run
     * id, the credits its settle charges, its tokens and USD cost), written by the flip to executed when that run had
     * not settled yet (its tool commits inside the run). A crash before the settle leaves the run's hold open; the
     * credit sweeper settles it for this amount instead of releasing it. Not shown on the wire. `run` is what the
     * run's agent-run record needs (`OwedRun`: its key time, who asked, agent type, tool, engine, model, latency ms),
     * so that the sweeper's settle also writes the record the run would have; absent on charges recorded before it.
     */
    charge: {
      type: "map",
      properties: {
        user_id: { type: "string", required: true },
        run_id: { type: "string", required: true },
        credits: { type: "number", required: true },
        tokens: { type: "number", required: true },
        cost_usd: { type: "number", required: true },
        run: {
          type: "map",
          properties: {
            executed_at: { type: "string", required: true },
            requested_by: { type: "string", required: true },
            agent_type: { type: "string", required: true },
            tool_name: { type: "string", required: true },
            engine: { type: "string", required: true },
            model_id: { type: "string" },
            latency_ms: { type: "number", required: true },
          },
        },
      },
    },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["id"], template: "pa#${id}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "pa#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "pending_action", casing: "none" },
    },
    byBatch: {
      index: "gsi2",
      pk: { field: "gsi2pk", composite: ["batch_id"], template: "pabatch#${batch_id}", casing: "none" },
      sk: { field: "gsi2sk", composite: ["created_at", "id"], template: "${created_at}#${id}", casing: "none" },
    },
    listed: {
      index: "gsi4",
      // The index's INCLUDE projection (core/db/table.ts); ElectroDB reads its identifiers from it to recognise rows.
      projection: SLIM_LIST_ATTRIBUTES,
      pk: { field: "gsi4pk", composite: ["workspace_id"], template: "wspa#${workspace_id}", casing: "none" },
      sk: { field: "gsi4sk", composite: ["created_at", "id"], template: "pa#${created_at}#${id}", casing: "none" },
    },
    due: {
      index: "gsi3",
      // Sparse: ElectroDB writes the keys only when this holds, and deletes them when a write makes it false.
      condition: (attr) => (attr.status === "approved" || attr.status === "executing") && attr.sweep === DUE && typeof attr.due_at === "string",
      pk: { field: "gsi3pk", composite: ["sweep"], template: "pa#${sweep}", casing: "none" },
      sk: { field: "gsi3sk", composite: ["due_at"], template: "due#${due_at}", casing: "none" },
    },
  },
});
export type PendingActionEntity = ReturnType<typeof buildPendingActionEntity>;

let conversions: ReturnType<typeof createConversions> | undefined;

/** The keys of a row's `listed` (gsi4) entry, built by ElectroDB from the index above, for the backfill of older rows. */
const listKeysOf = (workspaceId: string, row: { created_at: string; id: string }): SlimKeys =>
  slimKeysOf((conversions ??= createConversions(buildPendingActionEntity() as never)).byAccessPattern.listed.fromComposite.toKeys({ workspace_id: workspaceId, ...row }));

/**
 * The pending actions' slim list for core/db/slim-index.ts: the partition's `pa#` items of entity `pending_action`,
 * each keyed as `listed` writes it (every row is listed); the backfill reads back id, created_at and status. The
 * workspace's mark is the raw item `ws#<ws>` / `paindex`.
 */
export const PENDING_ACTION_LIST_INDEX: SlimIndex<"gsi4"> = {
  index: "gsi4",
  markSk: "paindex",
  skPrefix: "pa#",
  entity: "pending_action",
  attributes: ["id", "created_at", "status"],
  keysOf: (workspaceId, row) => {
    if (typeof row.id !== "string" || typeof row.created_at !== "string") return undefined;
    return listKeysOf(workspaceId, { created_at: row.created_at, id: row.id });
  },
};
