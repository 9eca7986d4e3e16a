import { jsonObject } from "../json-object";
import * as z from "zod";
import { PendingActionStatus } from "./status";

export { PendingActionStatus };

/**
 * Largest JSON (UTF-8 bytes) of each free-form field of a pending action: toolInput, preview, userEdits (422 above
 * it) and result (kept as a truncated marker above it). Four of them stay far below DynamoDB's 400 KB item limit.
 */
export const MAX_JSON_BYTES = 64 * 1024;

/**
 * Spec 01 "Bodies are camelCase on the wire; snake_case input is also accepted": rename the snake_case keys listed in
 * `aliases` to their camelCase names before validation (a camelCase key given as well wins).
 */
const acceptSnake = <T extends z.ZodType>(aliases: Record<string, string>, schema: T) =>
  z.preprocess((value) => {
    if (!value || typeof value !== "object" || Array.isArray(value)) return value;
    const out: Record<string, unknown> = { ...(value as Record<string, unknown>) };
    for (const [snake, camel] of Object.entries(aliases)) {
      if (!(snake in out)) continue;
      if (!(camel in out)) out[camel] = out[snake];
      delete out[snake];
    }
    return out;
  }, schema);

const JsonObject = z.record(z.string(), z.unknown());
/** A member's edits to a tool input: bounded like every free-form object of a request (core/json-object.ts). */
const UserEdits = jsonObject({ maxBytes: 64 * 1024, maxDepth: 8, maxKeys: 100, maxKeyLength: 200 });

/** A pending action on the wire (spec 01 "Pending action (camelCase)"). */
export const PendingAction = z
  .object({
    id: z.uuid(),
    workspaceId: z.uuid(),
    missionId: z.string().nullable(),
    sessionId: z.string().nullable(),
    batchId: z.string().describe("`{missionId}:{toolName}`"),
    toolName: z.string().describe("the gated write tool that was intercepted"),
    toolInput: JsonObject.describe("raw arguments the agent passed"),
    preview: JsonObject.describe("render-ready preview for approval"),
    status: PendingActionStatus,
    userEdits: JsonObject.nullable().describe("shallow-merged into toolInput before execution"),
    result: JsonObject.nullable().describe("populated when executed"),
    error: z.string().nullable().describe("populated when failed"),
    createdAt: z.string(),
    resolvedAt: z.string().nullable(),
    executedAt: z.string().nullable(),
  })
  .meta({ id: "PendingAction" });
export type PendingAction = z.infer<typeof PendingAction>;

/** `GET /api/pending-actions` query: workspace_id required, status filter; limit/offset as the other lists. */
export const ListPendingActionsQuery = z.object({
  workspace_id: z.uuid(),
  status: PendingActionStatus.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(200),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListPendingActionsQuery = z.infer<typeof ListPendingActionsQuery>;

export const PendingActionList = z
  .object({ items: z.array(PendingAction), total: z.int() })
  .meta({ id: "PendingActionList" });

export const PendingActionIdParam = z.object({ pa_id: z.uuid() });

/** `%3A` for `:` and the like: a client may percent-encode the colon of a batch id in the path. */
const decoded = (v: unknown) => {
  if (typeof v !== "string") return v;
  try {
    return decodeURIComponent(v);
  } catch {
    return v;
  }
};

/**
 * A batch id: `{mission_id}:{tool_name}` (spec 01 batch rules), as sent or percent-encoded. Its form is not checked
 * here: an id of another form names no batch, which spec 01 answers 404 ("batch id does not exist"), not 422.
 */
export const BatchIdParam = z.object({
  batch_id: z.preprocess(decoded, z.string().min(1).max(300).describe("{mission_id}:{tool_name}")),
});

/** `POST /api/pending-actions/{pa_id}/approve` body: optional userEdits (`user_edits` accepted). */
export const ApproveInput = acceptSnake(
  { user_edits: "userEdits" },
  z.object({ userEdits: UserEdits.nullable().optional() }).strict(),
).meta({ id: "ApprovePendingActionInput" });
export type ApproveInput = z.output<typeof ApproveInput>;

/** `POST /api/pending-actions/{pa_id}/reject` takes no inputs; an empty (or absent) JSON object. */
export const RejectInput = z.object({}).meta({ id: "RejectPendingActionInput" });

export const BatchApproveItem = acceptSnake(
  { pending_action_id: "pendingActionId", user_edits: "userEdits" },
  z
    .object({
      pendingActionId: z.uuid(),
      userEdits: UserEdits.nullable().optional(),
      exclude: z.boolean().default(false).describe("true rejects the row"),
    })
    .strict(),
);

/** `POST /api/pending-actions/batch/{batch_id}/approve` body. */
export const BatchApproveInput = z
  .object({ items: z.array(BatchApproveItem).max(500) })
  .strict()
  .meta({ id: "BatchApprovePendingActionsInput" });
export type BatchApproveInput = z.output<typeof BatchApproveInput>;

export const BatchApproveResult = z
  .object({
    batchId: z.string(),
    approved: z.int(),
    rejected: z.int(),
    skipped: z.int().describe("rows resolved by another session between the list and the mutation"),
  })
  .meta({ id: "BatchApprovePendingActionsResult" });
export type BatchApproveResult = z.infer<typeof BatchApproveResult>;
