import { Entity } from "electrodb";

/**
 * An execution ticket (spec 02 "Execution ticket"): one per document block, generated from it, reviewed, pushed to a
 * tracker and synced back. It lives under its document's sort-key prefix (`document#<doc>#ticket#<id>`), so a
 * document's tickets are one Query, and deleting the document removes them with its other children.
 *
 * Push bookkeeping: `push_claim_until` is a lease (epoch ms) one pusher holds while it talks to the tracker, so two
 * pushes of one ticket cannot both create an issue; `push_started_at` is when the first attempt began, kept across
 * attempts: a retry searches the tracker for the ticket's marker among issues created since then before it creates.
 */
export const buildExecutionTicketEntity = () => new Entity({
  model: { entity: "execution_ticket", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    document_id: { type: "string", required: true },
    block_id: { type: "string", required: true },
    block_type: { type: "string", required: true },
    title: { type: "string", required: true },
    body: { type: "string", required: true },
    ticket_type: { type: "string", required: true },
    priority: { type: ["P0", "P1", "P2", "P3"] as const },
    labels: { type: "list", items: { type: "string" }, default: () => [] },
    acceptance_criteria: { type: "list", items: { type: "string" }, default: () => [] },
    estimated_effort: { type: "string", required: true },
    /** The insights the block cites, whose quotes the body carries. */
    evidence_insight_ids: { type: "list", items: { type: "string" }, default: () => [] },
    /** Where each generated field came from in the block (field name → origin), for review. */
    trace: { type: "any", default: () => ({}) },
    status: { type: ["generated", "reviewed", "pushed", "push_failed", "synced"] as const, required: true, default: "generated" },
    platform: { type: ["codehost", "planner", "tickets"] as const },
    /**
     * Where the push goes within the platform: the repository (codehost), team or team/project (planner), the site and
     * project `<cloud_id>/<KEY>` (tickets; the key alone for tickets pushed before the site was recorded).
     */
    destination: { type: "string" },
    external_id: { type: "string" },
    external_url: { type: "string" },
    push_error: { type: "string" },
    push_claim_until: { type: "number" },
    push_started_at: { type: "string" },
    /**
     * Where an issue of this ticket may exist although no push recorded it (`<platform>:<destination>`): written by the
     * claim before a create, removed only when a push settles as pushed, or when this attempt's create was refused
     * (or never sent) and no earlier attempt left the mark. A push elsewhere is refused while it is set (a second
     * issue); the review (PATCH) and a retry's failed marker search leave it, whatever `push_error` then says.
     */
    may_hold_issue_at: { type: "string" },
    /** The category last read from the tracker (todo, in_progress, done, cancelled) and the raw state it came from. */
    synced_status: { type: "string" },
    remote_state: { type: "string" },
    /** The ETag of the last issue read (code host), for a conditional request that costs no rate limit. */
    etag: { type: "string" },
    last_synced_at: { type: "string" },
    /**
     * The `started_at` of the last sync run whose read of this ticket's issue failed (gone, refused, unmapped, a 5xx):
     * that run's queued continuations skip the ticket instead of reading it again, so a run ends however many fail.
     */
    sync_failed_run: { type: "string" },
    created_by: { type: "string", required: true },
    reviewed_by: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byDocument: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["document_id", "id"], template: "document#${document_id}#ticket#${id}", casing: "none" },
    },
    byId: {
      index: "gsi1",
      pk: { field: "gsi1pk", composite: ["id"], template: "ticket#${id}", casing: "none" },
      sk: { field: "gsi1sk", composite: [], template: "ticket", casing: "none" },
    },
  },
});
export type ExecutionTicketEntity = ReturnType<typeof buildExecutionTicketEntity>;
