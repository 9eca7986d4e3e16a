import * as z from "zod";
import { BlockType } from "../document/blocks";
import { Platform, TicketCategory, TicketPriority } from "./mapping";
import { TicketStatus } from "./status";

export { Platform, TicketCategory, TicketPriority, TicketStatus };

/** The API view of an execution ticket (spec 02 "Execution ticket", plus the block type, evidence and trace). */
export const ExecutionTicket = z
  .object({
    id: z.uuid(),
    document_id: z.uuid(),
    block_id: z.string(),
    block_removed: z
      .boolean()
      .describe("the block this ticket was generated from is no longer in the document (edited away, or the blocks re-extracted); the ticket keeps its own title, body and block_id, and can still be reviewed, pushed and synced"),
    workspace_id: z.uuid(),
    block_type: z.string(),
    title: z.string(),
    body: z.string().describe("Markdown; cites the block's insights with their verbatim quotes and source names"),
    ticket_type: z.string(),
    priority: TicketPriority.nullable(),
    labels: z.array(z.string()),
    acceptance_criteria: z.array(z.string()),
    estimated_effort: z.string(),
    status: TicketStatus,
    platform: Platform.nullable(),
    external_id: z.string().nullable(),
    external_url: z.string().nullable(),
    synced_status: TicketCategory.nullable().describe("the tracker's status category at the last sync (never its status name)"),
    push_error: z.string().nullable(),
    evidence_insight_ids: z.array(z.string()),
    trace: z.record(z.string(), z.string()).describe("for each generated field, where in the block it came from"),
    last_synced_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "ExecutionTicket" });
export type ExecutionTicket = z.infer<typeof ExecutionTicket>;

/** Block types turned into tickets when `include_block_types` is not given: the ones that describe work to build. */
export const DEFAULT_TICKET_BLOCK_TYPES: BlockType[] = ["user_story", "solution", "edge_case", "risk", "metrics"];

/** `POST /api/execution/generate` body (spec 02). */
export const GenerateTicketsInput = z
  .object({
    workspace_id: z.uuid(),
    document_id: z.uuid(),
    include_block_types: z
      .array(BlockType)
      .min(1)
      .max(9)
      .optional()
      .describe(`block types to make tickets of; default ${DEFAULT_TICKET_BLOCK_TYPES.join(", ")}`),
  })
  .strict()
  .meta({ id: "GenerateTicketsInput" });
export type GenerateTicketsInput = z.infer<typeof GenerateTicketsInput>;

export const SkippedBlock = z.object({
  block_id: z.string(),
  reason: z.enum(["ticket_exists", "wont_do", "empty"]).describe("a reviewed or pushed ticket exists; a MoSCoW won't story; nothing to build"),
  ticket_id: z.uuid().nullable(),
});

/** A draft whose block is gone, deleted by a generation. */
export const RemovedTicket = z.object({ ticket_id: z.uuid(), block_id: z.string() });

export const GenerateTicketsResult = z
  .object({
    tickets: z.array(ExecutionTicket),
    total: z.int(),
    skipped: z.array(SkippedBlock),
    removed: z
      .array(RemovedTicket)
      .describe("tickets still `generated` (never reviewed) whose block is no longer in the document, deleted by this generation: drafts of text the document no longer has. Reviewed, pushed and synced tickets of removed blocks stay, with block_removed true"),
  })
  .meta({ id: "GenerateTicketsResult" });
export type GenerateTicketsResult = z.infer<typeof GenerateTicketsResult>;

export const DocumentTicketsParams = z.object({ document_id: z.uuid() });
export const TicketParams = z.object({ ticket_id: z.uuid() });

/** `GET /api/execution/{document_id}/tickets` query: the status filter. */
/**
 * Spec 02 names `status`; `limit` and `offset` page a document whose tickets weigh more than one answer may (a
 * reviewed body may hold 50,000 characters): by default every ticket, up to 500 and 5 MB (core/response-size.ts).
 */
export const ListTicketsQuery = z.object({
  status: TicketStatus.optional(),
  limit: z.coerce.number().int().min(1).max(500).default(500),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListTicketsQuery = z.infer<typeof ListTicketsQuery>;

export const TicketList = z.object({ tickets: z.array(ExecutionTicket), total: z.int() }).meta({ id: "ExecutionTicketList" });

/** A ticket body holds at most this many characters (UTF-16 units): under GitHub's 65,536 for an issue body. */
export const TICKET_BODY_MAX = 50_000;
/** One acceptance criterion holds at most this many characters. */
export const TICKET_CRITERION_MAX = 2_000;
/**
 * The UTF-8 bytes a ticket's texts (title, body, acceptance criteria, labels) may take together: with the ticket's
 * other attributes well under DynamoDB's 400 KB item. The per-field limits alone allow about 450 KB of text in
 * three-byte characters (a body of 50,000 and 50 criteria of 2,000).
 */
export const TICKET_TEXT_MAX_BYTES = 200 * 1024;

/** Bytes of a ticket's texts, as {@link TICKET_TEXT_MAX_BYTES} counts them. */
export const ticketTextBytes = (t: { title: string; body: string; acceptance_criteria: readonly string[]; labels: readonly string[] }): number =>
  [t.title, t.body, ...t.acceptance_criteria, ...t.labels].reduce((n, x) => n + Buffer.byteLength(x, "utf8"), 0);

const line = z.string().trim().min(1).max(TICKET_CRITERION_MAX);

/** `PATCH /api/execution/tickets/{ticket_id}`: the review; every field optional (an empty body approves as is). */
export const ReviewTicketInput = z
  .object({
    title: z.string().trim().min(1).max(256).optional(),
    body: z.string().max(TICKET_BODY_MAX).optional(),
    priority: TicketPriority.optional(),
    labels: z.array(z.string().trim().min(1).max(50)).max(20).optional(),
    acceptance_criteria: z.array(line).max(50).optional(),
    estimated_effort: z.string().trim().min(1).max(50).optional(),
  })
  .strict()
  .meta({ id: "ReviewTicketInput" });
export type ReviewTicketInput = z.infer<typeof ReviewTicketInput>;

/** `POST /api/execution/push` body (spec 02); `repo` (ours) picks among several selected repositories. */
export const PushTicketsInput = z
  .object({
    workspace_id: z.uuid(),
    document_id: z.uuid(),
    platform: Platform,
    ticket_ids: z.array(z.uuid()).min(1).max(200).optional().describe("default: every reviewed ticket of the document"),
    repo: z.string().regex(/^[\w.-]+\/[\w.-]+$/, "org/repo").optional().describe("codehost: a selected repository; default the recommendation's target repository or the only selected one"),
    project_key: z.string().regex(/^[A-Z][A-Z0-9_]{0,49}$/, "a Jira project key").optional().describe("tickets: the Jira project to push to (required there: the server keeps no project selection for the ticket tool)"),
  })
  .strict()
  .meta({ id: "PushTicketsInput" });
export type PushTicketsInput = z.infer<typeof PushTicketsInput>;

export const PushOutcome = z.object({
  ticket_id: z.uuid(),
  status: z.union([TicketStatus, z.literal("queued")]).describe("the ticket's status after the push; queued: deferred by the provider's rate limit"),
  external_url: z.string().nullable(),
  external_id: z.string().nullable(),
  error: z.string().nullable(),
  block_removed: z.boolean().describe("the ticket's block is no longer in the document (the ticket carries its own text)"),
});
export type PushOutcome = z.infer<typeof PushOutcome>;

export const PushTicketsResult = z
  .object({ results: z.array(PushOutcome), pushed: z.int(), failed: z.int(), queued: z.int() })
  .meta({ id: "PushTicketsResult" });
export type PushTicketsResult = z.infer<typeof PushTicketsResult>;

/** `POST /api/execution/sync` body (spec 02). */
export const SyncTicketsInput = z.object({ workspace_id: z.uuid(), document_id: z.uuid() }).strict().meta({ id: "SyncTicketsInput" });
export type SyncTicketsInput = z.infer<typeof SyncTicketsInput>;

export const SyncOutcome = z.object({
  ticket_id: z.uuid(),
  status: z.union([TicketStatus, z.literal("queued")]),
  synced_status: TicketCategory.nullable(),
  external_url: z.string().nullable(),
  changed: z.boolean(),
  error: z.string().nullable(),
  block_removed: z.boolean().describe("the ticket's block is no longer in the document (the ticket carries its own text)"),
});
export type SyncOutcome = z.infer<typeof SyncOutcome>;

export const SyncTicketsResult = z
  .object({
    results: z.array(SyncOutcome),
    synced: z.int().describe("tickets whose status category changed"),
    unchanged: z.int(),
    errors: z.int(),
    queued: z.int(),
    recommendation_implemented: z.boolean().describe("the document's recommendation moved to implemented: every pushed ticket is done or cancelled, one at least done"),
  })
  .meta({ id: "SyncTicketsResult" });
export type SyncTicketsResult = z.infer<typeof SyncTicketsResult>;
