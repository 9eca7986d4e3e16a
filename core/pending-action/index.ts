import { randomUUID } from "node:crypto";
import { createWriteTransaction, type EntityItem } from "electrodb";
import { AppError, Errors, type FieldError } from "../error";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { Config } from "../config";
import { isConditionalFailure } from "../db/errors";
import { locateFresh, requireMember, requireResourceMember, requireResourceById } from "../workspace";
import { fitResponse } from "../response-size";
import type { GatedTool, Preview, ToolContext } from "../agent/tools/types";
import { DUE, type PendingActionEntity } from "./pending-action.entity";
import { listedActions, newestFirst } from "./listing";
import { storedStatusesOf, wireStatus, type StoredStatus } from "./status";
import {
  MAX_JSON_BYTES,
  type ApproveInput,
  type BatchApproveInput,
  type BatchApproveResult,
  type ListPendingActionsQuery,
  type PendingAction as PendingActionView,
} from "./schema";

export * from "./schema";
export { wireStatus, type StoredStatus } from "./status";

export type PendingActionItem = EntityItem<PendingActionEntity>;

/**
 * How long an approved row waits for its stream-driven execution before the sweeper re-drives it (DESIGN.md 6.2:
 * "re-drives approved rows older than 30 s"). Env `PENDING_ACTION_SWEEP_GRACE_SECONDS` overrides it (tests).
 */
export const sweepGraceMs = (): number => Config.pendingActionSweepGraceSeconds() * 1000;

const asObject = (v: unknown): Record<string, unknown> | null =>
  v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : null;

/** The wire form (spec 01 "Pending action (camelCase)"); `executing` shows as `approved`. */
export const toView = (i: PendingActionItem): PendingActionView => ({
  id: i.id,
  workspaceId: i.workspace_id,
  missionId: i.mission_id ?? null,
  sessionId: i.session_id ?? null,
  batchId: i.batch_id,
  toolName: i.tool_name,
  toolInput: asObject(i.tool_input) ?? {},
  preview: asObject(i.preview) ?? {},
  status: wireStatus(i.status),
  userEdits: asObject(i.user_edits),
  result: asObject(i.result),
  error: i.error ?? null,
  createdAt: i.created_at,
  resolvedAt: i.resolved_at ?? null,
  executedAt: i.executed_at ?? null,
});

/** Size of a value as stored JSON, in UTF-8 bytes. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value ?? null), "utf8");

/** @throws AppError VALIDATION_ERROR (422) when `value` is larger than MAX_JSON_BYTES as JSON. */
function assertJsonSize(loc: (string | number)[], value: unknown): void {
  const bytes = jsonBytes(value);
  if (bytes > MAX_JSON_BYTES) {
    throw Errors.validation([{ loc, msg: `At most ${MAX_JSON_BYTES} bytes of JSON (got ${bytes})`, type: "too_big" }]);
  }
}

/**
 * Hold a gated tool call as a pending action (DESIGN.md 6.1: a gated tool never runs inside the agent loop). Called
 * by the agent loop when the model calls a gated tool. The caller's membership was checked before the loop started
 * (ToolContext), so it is not checked again here.
 *
 * batchId is `${missionId ?? conversationId ?? "adhoc"}:${toolName}`: a mission's writes of one tool form one batch
 * (spec 01); a chat without a mission batches per conversation, so one approval covers what one conversation asked
 * for; a run with neither falls into the shared `adhoc` batch of that tool (only direct calls do that, and approving
 * such a batch across workspaces is refused as INVARIANT_VIOLATION rather than acted on).
 *
 * @param input the raw arguments the model passed; stored as `toolInput` as given.
 * @returns the new row's id and the tool's preview.
 * @throws AppError VALIDATION_ERROR (422) when the input fails `tool.input`, is not an object, or the input or
 *   preview is larger than MAX_JSON_BYTES; whatever `tool.preview` throws (e.g. NOT_FOUND for a missing target).
 */
export async function createPending(ctx: ToolContext, tool: GatedTool, input: unknown): Promise<{ id: string; preview: Preview }> {
  const raw = asObject(input);
  if (!raw) throw Errors.validation([{ loc: ["toolInput"], msg: "Tool input must be an object", type: "object" }]);
  const parsed = tool.input.safeParse(raw);
  if (!parsed.success) {
    throw Errors.validation(
      parsed.error.issues.map((i) => ({ loc: ["toolInput", ...i.path.map((p) => (typeof p === "symbol" ? String(p) : p))], msg: i.message, type: i.code })),
      `Invalid input for ${tool.name}`,
    );
  }
  assertJsonSize(["toolInput"], raw);
  const preview = await tool.preview(ctx, parsed.data);
  assertJsonSize(["preview"], preview);
  const id = randomUUID();
  await db()
    .entities.pendingAction.create({
      id,
      workspace_id: ctx.workspaceId,
      ...(ctx.missionId ? { mission_id: ctx.missionId } : {}),
      ...(ctx.sessionId ? { session_id: ctx.sessionId } : {}),
      ...(ctx.conversationId ? { conversation_id: ctx.conversationId } : {}),
      batch_id: `${ctx.missionId ?? ctx.conversationId ?? "adhoc"}:${tool.name}`,
      tool_name: tool.name,
      tool_input: raw,
      preview,
      status: "pending",
      created_by: ctx.userId,
    })
    .go();
  return { id, preview };
}

/**
 * A pending action fetched by id alone (gsi1), read again strongly consistent from its workspace partition.
 * @throws AppError NOT_FOUND (404) for an unknown id and for a row of a workspace the caller is not a member of.
 */
export async function requirePendingAction(userId: string, id: string): Promise<PendingActionItem> {
  // One round trip once the container knows the id's workspace (core/workspace requireResourceById).
  return requireResourceById<PendingActionItem>(userId, {
    kind: "pending_action",
    id,
    what: "Pending action",
    entity: db().entities.pendingAction,
    locate: async () => {
      const { data } = await db().entities.pendingAction.query.byId({ id }).go({ limit: 1, attributes: ["workspace_id"] });
      return data[0] && { workspace_id: data[0].workspace_id, id };
    },
  });
}


/**
 * `GET /api/pending-actions` (spec 01 Pending actions): the workspace's pending actions, newest first, optionally of
 * one status (`approved` includes rows being executed), paginated like the other lists (limit default 200, max 500).
 * A page ends early when it would weigh more than 5 MB (`fitResponse`, as the other lists: a row may carry 64 KiB
 * each of toolInput, preview and userEdits plus a result): `total` counts every match, and the next page starts at
 * `offset` plus the items given.
 * @returns `{items, total}`, total counting every match.
 * @throws AppError FORBIDDEN (403) for a non-member; NOT_FOUND (404) for an unknown workspace.
 */
export async function list(userId: string, q: ListPendingActionsQuery): Promise<{ items: PendingActionView[]; total: number }> {
  await requireMember(userId, q.workspace_id);
  const wanted = q.status ? storedStatusesOf(q.status) : undefined;
  // Counted and ordered on the slim index (ids and times only); only the page's rows are read whole.
  const keys = await listedActions(q.workspace_id, wanted);
  const page = keys.slice(q.offset, q.offset + q.limit);
  if (!page.length) return { items: [], total: keys.length };
  const rows = (await getAll(page.map((k) => ({ workspace_id: q.workspace_id, id: k.id })), (k) => db().entities.pendingAction.get(k).go({ consistent: true }))) as PendingActionItem[];
  // A row whose status moved off the filter since the index (eventually consistent) was read is left out of the page.
  const shown = wanted ? rows.filter((r) => wanted.includes(r.status)) : rows;
  return { items: fitResponse(shown.sort(newestFirst).map(toView)), total: keys.length };
}

/**
 * `GET /api/pending-actions/{pa_id}`.
 * @throws AppError NOT_FOUND (404): unknown id, or a workspace the caller is not a member of.
 */
export async function get(userId: string, id: string): Promise<PendingActionView> {
  return toView(await requirePendingAction(userId, id));
}

type Decision = "approve" | "reject";

/**
 * The attributes one resolution writes (spec 01 Pending action status): resolvedAt and the member; approve also
 * persists userEdits and enters the sweeper's index, due once the stream has had its grace period.
 */
function resolution(decision: Decision, userId: string, userEdits: Record<string, unknown> | null | undefined) {
  const now = Date.now();
  const common = { resolved_at: new Date(now).toISOString(), resolved_by: userId };
  if (decision === "reject") return { ...common, status: "rejected" as const };
  return {
    ...common,
    status: "approved" as const,
    ...(userEdits ? { user_edits: userEdits } : {}),
    sweep: DUE,
    due_at: new Date(now + sweepGraceMs()).toISOString(),
  };
}

const notPending = (status: StoredStatus) =>
  new AppError("INVALID_STATE", `The pending action is ${wireStatus(status)}, not pending`, { status: wireStatus(status) });

/** One conditional write pending → approved | rejected. @throws AppError INVALID_STATE (409) when no longer pending. */
async function resolveOne(item: PendingActionItem, decision: Decision, userId: string, userEdits?: Record<string, unknown> | null): Promise<PendingActionItem> {
  if (item.status !== "pending") throw notPending(item.status);
  try {
    const { data } = await db()
      .entities.pendingAction.patch({ workspace_id: item.workspace_id, id: item.id })
      .set(resolution(decision, userId, userEdits))
      .where((attr, op) => op.eq(attr.status, "pending"))
      .go({ response: "all_new" });
    return data as PendingActionItem;
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    // Another session resolved it between our read and our write.
    const { data: now } = await db().entities.pendingAction.get({ workspace_id: item.workspace_id, id: item.id }).go({ consistent: true });
    throw notPending(now?.status ?? "rejected");
  }
}

/**
 * `POST /api/pending-actions/{pa_id}/approve`: pending → approved, resolvedAt set, userEdits persisted (shallow-merged
 * into toolInput only at execution). Execution is not awaited: the approved row itself carries it (DESIGN.md 6.2).
 * @returns the row, status `approved`.
 * @throws AppError NOT_FOUND (404); INVALID_STATE (409) when the row is not pending (also when a concurrent approve or
 *   reject won); VALIDATION_ERROR (422) when userEdits is larger than MAX_JSON_BYTES.
 */
export async function approve(userId: string, id: string, input: ApproveInput): Promise<PendingActionView> {
  if (input.userEdits) assertJsonSize(["body", "userEdits"], input.userEdits);
  const item = await requirePendingAction(userId, id);
  return toView(await resolveOne(item, "approve", userId, input.userEdits));
}

/**
 * `POST /api/pending-actions/{pa_id}/reject`: pending → rejected, resolvedAt set; the tool never runs; the row stays.
 * @throws AppError NOT_FOUND (404); INVALID_STATE (409) when the row is not pending.
 */
export async function reject(userId: string, id: string): Promise<PendingActionView> {
  const item = await requirePendingAction(userId, id);
  return toView(await resolveOne(item, "reject", userId));
}

/** DynamoDB's limit of items in one transaction. */
export const MAX_TRANSACTION_ITEMS = 100;

/**
 * What one transaction's items may weigh together, bytes: DynamoDB refuses a TransactWriteItems whose items exceed 4 MB
 * in all (a ValidationException, not a cancellation), so 100 rows with large edits go in several. The estimate (each
 * row as read plus its edits, as JSON) leaves room for attribute names and DynamoDB's own encoding.
 */
export const MAX_TRANSACTION_BYTES = 3_000_000;

/** `items` in order, cut into runs of at most MAX_TRANSACTION_ITEMS whose `bytesOf` add up to at most MAX_TRANSACTION_BYTES. */
export function transactionChunks<T>(items: readonly T[], bytesOf: (item: T) => number): T[][] {
  const chunks: T[][] = [];
  let chunk: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = bytesOf(item);
    if (chunk.length && (chunk.length >= MAX_TRANSACTION_ITEMS || bytes + size > MAX_TRANSACTION_BYTES)) {
      chunks.push(chunk);
      chunk = [];
      bytes = 0;
    }
    chunk.push(item);
    bytes += size;
  }
  if (chunk.length) chunks.push(chunk);
  return chunks;
}

/**
 * `POST /api/pending-actions/batch/{batch_id}/approve` (spec 01 batch rules). The batch's rows come from the batch
 * index, asked again briefly while it shows none (it lags the table); the caller's membership is checked once,
 * against the first (oldest) row. A listed row the index does not show yet is read strongly consistent from that
 * row's workspace and counts as in the batch when its batch_id is this one. Each listed row that is pending is
 * approved (or rejected when `exclude`) in transactions of at most 100 rows, each row's write conditioned on it
 * still being pending. When a transaction is cancelled, its rows are written one by one with the same condition:
 * a row that was pending when listed but resolved by another session before the write counts as `skipped`. Rows
 * already non-pending when listed are left alone and counted nowhere; rows not listed stay pending. Execution of the
 * approved rows is not awaited.
 *
 * A store failure other than a cancellation (throttling past the SDK's retries, a dropped connection) after some rows
 * were resolved cannot be a 200 (the request did not do what it was asked) nor a bare 500 (those rows are resolved,
 * and approved ones are executing): it is a 503 carrying what was done ({@link partialBatch}). Its retry finds those
 * rows non-pending and, as the batch rules say, counts them nowhere: the two answers together count every row once.
 * @returns `{batchId, approved, rejected, skipped}`.
 * @throws AppError NOT_FOUND (404) for an empty or unknown batch, or one of a workspace the caller is not in;
 *   VALIDATION_ERROR (422) when an item names a row outside the batch, names a row twice, or its userEdits is too
 *   large; INVARIANT_VIOLATION (500) when the batch's rows span more than one workspace; SERVICE_UNAVAILABLE (503,
 *   retryable) when the store failed after this request resolved some rows, with the counts so far and the rows left.
 */
export async function batchApprove(userId: string, batchId: string, input: BatchApproveInput): Promise<BatchApproveResult> {
  // The batch index (gsi2) is eventually consistent: a batch whose rows were all written a moment ago can be missing
  // from it for a few hundred ms, so an empty answer is asked again (`locateFresh`) before it is a 404.
  const rows =
    (await locateFresh(async () => {
      const { data } = await db().entities.pendingAction.query.byBatch({ batch_id: batchId }).go({ pages: "all" });
      return data.length ? data : undefined;
    })) ?? [];
  if (rows.length === 0) throw Errors.notFound("Batch");
  const first = rows[0]!;
  await requireResourceMember(userId, first.workspace_id, "Batch");
  const workspaces = new Set(rows.map((r) => r.workspace_id));
  if (workspaces.size > 1) throw new AppError("INVARIANT_VIOLATION", `Batch ${batchId} spans ${workspaces.size} workspaces`);

  // The listed rows as they are now, strongly consistent, from the workspace the caller was checked against: they
  // give the status "at listing", and a listed row the lagging index does not show yet is in the batch when its own
  // batch_id says so (a row of another workspace is not read at all, so stays "not in batch").
  const current = await consistentRows(first.workspace_id, input.items.map((i) => i.pendingActionId));
  const inBatch = new Set(rows.map((r) => r.id));
  for (const row of current.values()) if (row.batch_id === batchId) inBatch.add(row.id);
  const seen = new Set<string>();
  const problems: FieldError[] = [];
  input.items.forEach((item, i) => {
    const loc = ["body", "items", i, "pendingActionId"];
    if (!inBatch.has(item.pendingActionId)) problems.push({ loc, msg: `Pending action ${item.pendingActionId} is not in batch ${batchId}`, type: "not_in_batch" });
    else if (seen.has(item.pendingActionId)) problems.push({ loc, msg: `Pending action ${item.pendingActionId} is listed twice`, type: "duplicate" });
    seen.add(item.pendingActionId);
    if (item.userEdits && jsonBytes(item.userEdits) > MAX_JSON_BYTES) {
      problems.push({ loc: ["body", "items", i, "userEdits"], msg: `At most ${MAX_JSON_BYTES} bytes of JSON`, type: "too_big" });
    }
  });
  if (problems.length) throw Errors.validation(problems);

  const todo = input.items.filter((i) => current.get(i.pendingActionId)?.status === "pending");

  const counts = { approved: 0, rejected: 0, skipped: 0 };
  const count = (item: (typeof todo)[number]) => (item.exclude ? counts.rejected++ : counts.approved++);
  const keyOf = (item: (typeof todo)[number]) => ({ workspace_id: first.workspace_id, id: item.pendingActionId });
  const setOf = (item: (typeof todo)[number]) => resolution(item.exclude ? "reject" : "approve", userId, item.userEdits);
  // Rows of `todo` (in order: chunks and the row-by-row redo keep it) this request has finished, written or skipped.
  let finished = 0;
  try {
    for (const chunk of transactionChunks(todo, (item) => jsonBytes(current.get(item.pendingActionId)) + jsonBytes(item.userEdits))) {
      const tx = await createWriteTransaction(db().pick("pendingAction"), ({ pendingAction }) =>
        chunk.map((item) => pendingAction.patch(keyOf(item)).set(setOf(item)).where((attr, op) => op.eq(attr.status, "pending")).commit()),
      ).go();
      if (!tx.canceled) {
        chunk.forEach(count);
        finished += chunk.length;
        continue;
      }
      // Cancelled (a row's condition failed, or a conflicting transaction): nothing of the chunk was written, so each
      // row is written on its own; the ones whose condition fails were resolved by someone else meanwhile.
      for (const item of chunk) {
        try {
          await db().entities.pendingAction.patch(keyOf(item)).set(setOf(item)).where((attr, op) => op.eq(attr.status, "pending")).go();
          count(item);
        } catch (err) {
          if (!isConditionalFailure(err)) throw err;
          counts.skipped++;
        }
        finished++;
      }
    }
  } catch (err) {
    // Nothing done yet: the failure is the whole answer, and a retry starts afresh.
    if (finished === 0) throw err;
    throw partialBatch(batchId, counts, todo.slice(finished).map((i) => i.pendingActionId), err);
  }
  return { batchId, ...counts };
}

/**
 * The 503 of a batch approval the store interrupted after some rows were resolved (see {@link batchApprove}): the
 * envelope carries `batchId` and the `approved`, `rejected` and `skipped` counts of the rows this request finished,
 * and `remainingIds`, the listed rows it did not finish (in the request's order). A remaining row is still pending
 * unless the write that failed went through after all (its outcome is unknown to us); the retry of the same items
 * resolves those still pending and counts the others nowhere.
 */
function partialBatch(batchId: string, counts: Omit<BatchApproveResult, "batchId">, remainingIds: string[], cause: unknown): AppError {
  const done = `${counts.approved} approved, ${counts.rejected} rejected, ${counts.skipped} skipped`;
  const error = new AppError(
    "SERVICE_UNAVAILABLE",
    `The batch was interrupted by a store failure after ${done}; ${remainingIds.length} listed rows were left (remainingIds). ` +
      "Retry the same request to resolve the rest (rows already resolved are counted nowhere then)",
    { retryable: true, batchId, ...counts, remainingIds },
  );
  // The store's own error, for the log line the 5xx gets (functions/lib/http).
  return Object.assign(error, { cause });
}

/** The named rows of one workspace, read strongly consistent (BatchGetItem, unprocessed keys asked again), by id. */
async function consistentRows(workspaceId: string, ids: string[]): Promise<Map<string, PendingActionItem>> {
  const keys = [...new Set(ids)].map((id) => ({ workspace_id: workspaceId, id }));
  const rows = await getAll(keys, (k) => db().entities.pendingAction.get(k).go({ consistent: true }));
  return new Map(rows.map((row) => [row.id, row]));
}
