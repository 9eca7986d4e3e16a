/**
 * Execution tickets (spec 02 "Execution ticket" and "Execution tickets (/api/execution)"; DESIGN.md 6.4): generate
 * one ticket per document block, list them by document, review (PATCH), push to a tracker, sync its status back.
 *
 * - Push is exactly-once per ticket: a lease on the ticket (`push_claim_until`, a conditional write) keeps two pushes
 *   of it apart, and the ticket id travels in the issue body as a marker (`<!-- r2d:ticket:<id> -->`, the marker the
 *   code host's issue tools use) that a later attempt searches for, among the issues created since the first attempt
 *   began, before it creates one. A create whose answer was lost (timeout, dropped connection) leaves push_failed
 *   and keeps the lease to its end (the provider may still be making the issue); the retry after it finds the issue.
 * - Sync is one-way: the tracker's status category (never its name) is read into `synced_status`; nothing is written
 *   back to a tracker whose workflow may refuse the jump.
 * - A provider's rate limit is never waited out in the request: the rest of a push or sync goes to the integrations
 *   queue with the provider's retry-after as the message delay, and the answer counts it as queued.
 * - Plan gate: push and sync need the platform's feature (has_codehost for the code host, has_integrations for the
 *   planner and ticket tool), checked here by platform since one route serves all three (docs/decisions.md).
 */
import { createWriteTransaction, type EntityItem } from "electrodb";
import { AppError, Errors } from "../error";
import { Config, PROVIDER_REQUEST_TIMEOUT_MAX_MS } from "../config";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { isConditionalFailure } from "../db/errors";
import { transactRetryingConflicts } from "../db/transact";
import { requireMember, requireResourceById } from "../workspace";
import { isPlanFeatureRefusal, requireFeature } from "../billing/gates";
import { requireDocument, withContent, type DocumentItem } from "../document";
import { blocksOf } from "../document/block-ops";
import { FEATURE_OF } from "../integration/oauth";
import * as OAuth from "../integration/oauth";
import { ProviderError } from "../integration/errors";
import { deferJob, WORK_BUDGET_MS } from "../integration/jobs";
import { wasAnswered } from "../integration/timeout";
import { markImplemented } from "../integration/implemented";
import { unreadInRun } from "../integration/links";
import { citedInsightIds, draftTicket, insightRefs, ticketIdOf, type EvidenceInsight } from "./draft";
import { TERMINAL_CATEGORIES, type Platform, type TicketCategory } from "./mapping";
import { assertTransition, canTransition, checkBatchTransition, type TicketStatus } from "./status";
import { jiraDestination, samePlace, trackerOf, type IssueRead, type Tracker } from "./trackers";
import type { ExecutionTicketEntity } from "./ticket.entity";
import { fitResponse, LIST_RESPONSE_BYTES, wireBytes } from "../response-size";
import {
  DEFAULT_TICKET_BLOCK_TYPES,
  TICKET_TEXT_MAX_BYTES,
  ticketTextBytes,
  type ExecutionTicket,
  type GenerateTicketsInput,
  type GenerateTicketsResult,
  type ListTicketsQuery,
  type PushOutcome,
  type PushTicketsInput,
  type PushTicketsResult,
  type ReviewTicketInput,
  type SyncOutcome,
  type SyncTicketsInput,
  type SyncTicketsResult,
} from "./schema";

export * from "./schema";
export type TicketItem = EntityItem<ExecutionTicketEntity>;

/**
 * How long one pusher holds a ticket while it talks to the tracker, ms: longer than one create takes. Every request
 * of the code host, planner and ticket tool adapters is aborted after PROVIDER_REQUEST_TIMEOUT_SECONDS (default 20 s,
 * at most `PROVIDER_REQUEST_TIMEOUT_MAX_MS`, core/integration/timeout.ts), so a create ends, answered or aborted
 * (then push_failed "outcome unknown"), while its lease holds; a create is not begun with less than that left of it.
 * A create that got no answer keeps the ticket held a whole lease from its failure: the provider may still carry it
 * out after our abort.
 */
export const PUSH_LEASE_MS = 60_000;
// A retry's marker search and then the create must both fit in the lease: checked at load, not left to a comment.
if (2 * PROVIDER_REQUEST_TIMEOUT_MAX_MS >= PUSH_LEASE_MS) {
  throw new Error(`PROVIDER_REQUEST_TIMEOUT_MAX_MS (${PROVIDER_REQUEST_TIMEOUT_MAX_MS}) must be under half of PUSH_LEASE_MS (${PUSH_LEASE_MS})`);
}
/** How long a request works through tickets before it queues the rest (core/integration/jobs.ts). */
export { WORK_BUDGET_MS };
/** A retry looks for the marker among issues created from this long before the first attempt began (clock skew). */
const MARKER_SEARCH_SLACK_MS = 60_000;

/** The marker a pushed issue carries: found again by a retry (DESIGN.md 6.2: external writes carry a marker). */
export const markerOf = (ticketId: string): string => `r2d:ticket:${ticketId}`;

/**
 * The API view of a ticket. `blockIds`: the document's current blocks; a ticket whose block is not among them (the
 * document was edited, or its blocks re-extracted, after generation) is shown with `block_removed`, and keeps its own
 * copy of everything it was generated with.
 */
export const toView = (t: TicketItem, blockIds: ReadonlySet<string>): ExecutionTicket => ({
  id: t.id,
  document_id: t.document_id,
  block_id: t.block_id,
  block_removed: !blockIds.has(t.block_id),
  workspace_id: t.workspace_id,
  block_type: t.block_type,
  title: t.title,
  body: t.body,
  ticket_type: t.ticket_type,
  priority: t.priority ?? null,
  labels: t.labels ?? [],
  acceptance_criteria: t.acceptance_criteria ?? [],
  estimated_effort: t.estimated_effort,
  status: t.status,
  platform: t.platform ?? null,
  external_id: t.external_id ?? null,
  external_url: t.external_url ?? null,
  synced_status: (t.synced_status as TicketCategory | undefined) ?? null,
  push_error: t.push_error ?? null,
  evidence_insight_ids: t.evidence_insight_ids ?? [],
  trace: (t.trace as Record<string, string>) ?? {},
  last_synced_at: t.last_synced_at ?? null,
  created_at: t.created_at,
  updated_at: t.updated_at,
});

const keyOf = (t: Pick<TicketItem, "workspace_id" | "document_id" | "id">) => ({ workspace_id: t.workspace_id, document_id: t.document_id, id: t.id });

/** A document's tickets (strongly consistent), in block order then creation. */
async function ticketsOf(doc: Pick<DocumentItem, "workspace_id" | "id">): Promise<TicketItem[]> {
  const { data } = await db().entities.executionTicket.query.byDocument({ workspace_id: doc.workspace_id, document_id: doc.id }).go({ pages: "all", consistent: true });
  return data.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/** The ids of a document's current blocks. */
const blockIdsOf = async (doc: Pick<DocumentItem, "workspace_id" | "id">): Promise<Set<string>> => new Set((await blocksOf(doc)).map((b) => b.id));

/** The ids of the tickets among `tickets` whose block is no longer in the document. */
const removedBlocksOf = async (doc: Pick<DocumentItem, "workspace_id" | "id">, tickets: TicketItem[]): Promise<Set<string>> => {
  const present = await blockIdsOf(doc);
  return new Set(tickets.filter((t) => !present.has(t.block_id)).map((t) => t.id));
};

/** The document a body names, in the workspace it names. @throws FORBIDDEN (403, not a member), NOT_FOUND (404) */
async function documentIn(userId: string, workspaceId: string, documentId: string): Promise<DocumentItem> {
  // The body names the workspace: a non-member gets that workspace's 403 (spec 01 Authorization 4).
  await requireMember(userId, workspaceId);
  const doc = await requireDocument(userId, documentId);
  if (doc.workspace_id !== workspaceId) throw Errors.notFound("Document");
  return doc;
}

/** The insights a block cites, with their quotes' source names, in citation order (unknown ids are left out). */
async function evidenceOf(workspaceId: string, ids: string[]): Promise<Map<string, EvidenceInsight>> {
  const out = new Map<string, EvidenceInsight>();
  if (!ids.length) return out;
  const insights = await getAll(ids.map((id) => ({ workspace_id: workspaceId, id })), (keys) => db().entities.insight.get(keys).go());
  const sourceIds = [...new Set(insights.flatMap((i) => (i.quotes ?? []).map((q) => q.source_id)))];
  const names = new Map<string, string>();
  if (sourceIds.length) {
    const { data: sources } = await db().entities.researchSource.get(sourceIds.map((id) => ({ workspace_id: workspaceId, id }))).go();
    for (const s of sources) names.set(s.id, s.title || s.file_name);
  }
  for (const i of insights) {
    out.set(i.id, {
      id: i.id, title: i.title, insight_type: i.insight_type, severity: i.severity, frequency: i.frequency,
      quotes: (i.quotes ?? []).map((q) => ({ text: q.text, source_id: q.source_id, source_name: names.get(q.source_id) ?? null, speaker: q.speaker ?? null })),
    });
  }
  return out;
}

/**
 * `POST /api/execution/generate` (spec 02): one ticket per block of the included types (default
 * {@link DEFAULT_TICKET_BLOCK_TYPES}), each field traced to its block (core/ticket/draft.ts). A block's ticket has a
 * fixed id: generating again rewrites a ticket still `generated`, and leaves a reviewed, pushed or synced one alone
 * (reported in `skipped`); blocks that describe no work (empty, a "won't" story) are skipped too. A ticket still
 * `generated` whose block is no longer in the document (edited away, or the blocks re-extracted: extraction gives new
 * block ids) is deleted, conditioned on that status, and reported in `removed`: it drafted text the document no longer
 * has, and left in place it would sit beside the new block's ticket as a duplicate. Reviewed, pushed and synced tickets
 * of removed blocks stay (a person or a tracker holds them), shown with `block_removed`.
 * Each ticket is written with a check that the document exists and is not being deleted, so a generation racing the
 * document's DELETE answers 404 and leaves no ticket behind.
 * @returns `{tickets, total, skipped, removed}`: the tickets written by this call, in block order, as many as fit in
 *   one answer (`fitResponse`, under 5 MB); `total` counts every ticket written
 * @throws AppError FORBIDDEN (403); NOT_FOUND (404, document, also when deleted meanwhile); CONFLICT (409, the
 *   document item kept colliding with other transactions)
 */
export async function generate(userId: string, input: GenerateTicketsInput): Promise<GenerateTicketsResult> {
  const found = await documentIn(userId, input.workspace_id, input.document_id);
  // Being deleted (core/document/deletion.ts): its tickets would be refused anyway.
  if (found.deleting_at) throw Errors.notFound("Document");
  const { doc, content } = await withContent(found);
  const types = new Set(input.include_block_types ?? DEFAULT_TICKET_BLOCK_TYPES);
  const [blocks, existing] = await Promise.all([blocksOf(doc), ticketsOf(doc)]);
  const byId = new Map(existing.map((t) => [t.id, t]));
  const refs = insightRefs(content, doc.related_insight_ids ?? []);
  const chosen = blocks.filter((b) => types.has(b.block_type));
  const cited = new Map(chosen.map((b) => [b.id, citedInsightIds(b, refs)]));
  const evidence = await evidenceOf(doc.workspace_id, [...new Set([...cited.values()].flat())]);

  const present = new Set(blocks.map((b) => b.id));
  const removed: GenerateTicketsResult["removed"] = [];
  for (const stale of existing.filter((t) => t.status === "generated" && !present.has(t.block_id))) {
    try {
      await db().entities.executionTicket.delete(keyOf(stale)).where((a, op) => op.eq(a.status, "generated")).go();
      removed.push({ ticket_id: stale.id, block_id: stale.block_id });
    } catch (err) {
      // Reviewed meanwhile: a person took it on, it stays.
      if (!isConditionalFailure(err)) throw err;
    }
  }

  // The tickets this call wrote, in block order.
  const written: string[] = [];
  const skipped: GenerateTicketsResult["skipped"] = [];
  for (const block of chosen) {
    const id = ticketIdOf(doc.id, block.id);
    const prior = byId.get(id);
    if (prior && prior.status !== "generated") {
      skipped.push({ block_id: block.id, reason: "ticket_exists", ticket_id: id });
      continue;
    }
    const insights = cited.get(block.id)!.map((i) => evidence.get(i)).filter((i): i is EvidenceInsight => !!i);
    const draft = draftTicket({ id: doc.id, title: doc.title, document_type: doc.document_type }, { ...block, title: block.title ?? "" }, insights);
    if ("skip" in draft) {
      skipped.push({ block_id: block.id, reason: draft.skip, ticket_id: null });
      continue;
    }
    const item = { id, workspace_id: doc.workspace_id, document_id: doc.id, block_id: block.id, block_type: block.block_type, ...draft, status: "generated" as const, created_by: userId };
    // Rewritten only while no one has reviewed it (the write is conditioned on the status it read), else created.
    const rewrite = prior
      ? { title: draft.title, body: draft.body, ticket_type: draft.ticket_type, priority: draft.priority, labels: draft.labels, acceptance_criteria: draft.acceptance_criteria, estimated_effort: draft.estimated_effort, evidence_insight_ids: draft.evidence_insight_ids, trace: draft.trace }
      : null;
    if (await writeTicket(doc, item, rewrite)) written.push(id);
    // Reviewed meanwhile, or created by a generation running at the same time: that ticket stands.
    else skipped.push({ block_id: block.id, reason: "ticket_exists", ticket_id: id });
  }
  // Read back as stored. A ticket written here and gone now was removed by the document's DELETE, begun after the
  // writes: the document is gone.
  const stored = written.length ? new Map((await ticketsOf(doc)).map((t) => [t.id, t])) : new Map<string, TicketItem>();
  if (written.some((id) => !stored.has(id))) throw Errors.notFound("Document");
  const tickets = written.map((id) => toView(stored.get(id)!, present));
  // Many large tickets pass Lambda's 6 MB answer: the answer gives the first that fit (`fitResponse`, beside the
  // skipped and removed lists), `total` counting every ticket written; the list (GET .../tickets) pages the rest.
  const fitted = fitResponse(tickets, LIST_RESPONSE_BYTES - wireBytes({ skipped, removed }));
  return { tickets: fitted, total: tickets.length, skipped, removed };
}

/** How many times a ticket write is tried when it collides with another transaction on its document. */
const WRITE_TRIES = 5;

/**
 * Write one generated ticket (`rewrite`: the fields of an existing `generated` one, else a create), in one transaction
 * with a check that its document exists and is not being deleted (`deleting_at`, core/document/deletion.ts): a
 * generation racing the document's DELETE writes no ticket after the DELETE's mark, so none is left behind (every
 * ticket written before the mark is among the children the DELETE lists after it). Tickets are written one
 * transaction each (each has its own condition, and one refused must not refuse the others).
 * @returns false when the ticket's own condition refused it (reviewed meanwhile, or created by another generation)
 * @throws AppError NOT_FOUND (404, the document is gone or being deleted); CONFLICT (409, collided WRITE_TRIES times)
 */
async function writeTicket(doc: Pick<DocumentItem, "workspace_id" | "id">, item: Parameters<ExecutionTicketEntity["create"]>[0], rewrite: Record<string, unknown> | null): Promise<boolean> {
  const { workspace_id, id: document_id } = doc;
  // A collision with another transaction on the document item (a block create, a revision save) is sent again.
  const codes = await transactRetryingConflicts(
    () =>
      createWriteTransaction(db().pick("document", "executionTicket"), ({ document, executionTicket }) => [
        document.check({ workspace_id, id: document_id }).where((a, op) => `${op.exists(a.id)} AND ${op.notExists(a.deleting_at)}`).commit(),
        rewrite
          ? executionTicket.patch(keyOf(item)).set(rewrite).where((a, op) => op.eq(a.status, "generated")).commit()
          : executionTicket.create(item).commit(),
      ]).go(),
    WRITE_TRIES,
    () => new AppError("CONFLICT", "The document changed meanwhile; retry"),
  );
  if (codes.length === 0) return true;
  if (codes[0] === "ConditionalCheckFailed") throw Errors.notFound("Document");
  if (codes[1] === "ConditionalCheckFailed") return false;
  throw new Error(`ticket ${item.id} could not be written: ${codes.join(", ")}`);
}

/**
 * `GET /api/execution/{document_id}/tickets` (spec 02): the document's tickets, filtered by `status`, paged by `limit`
 * and `offset`; a page ends early when it would weigh more than 5 MB (`fitResponse`): `total` counts every match, and
 * the next page starts at `offset` plus the tickets given.
 * @throws AppError NOT_FOUND (404: unknown document, or one the caller is not a member of)
 */
export async function list(userId: string, documentId: string, q: ListTicketsQuery): Promise<{ tickets: ExecutionTicket[]; total: number }> {
  const doc = await requireDocument(userId, documentId);
  const [all, present] = await Promise.all([ticketsOf(doc), blockIdsOf(doc)]);
  const matching = all.filter((t) => !q.status || t.status === q.status);
  return { tickets: fitResponse(matching.slice(q.offset, q.offset + q.limit).map((t) => toView(t, present))), total: matching.length };
}

/** A ticket fetched by id alone, with the caller's membership checked. @throws NOT_FOUND (404, also for non-members) */
async function requireTicket(userId: string, ticketId: string): Promise<TicketItem> {
  // One round trip once the container knows the id's key (core/workspace requireResourceById); a ticket never moves.
  return requireResourceById<TicketItem>(userId, {
    kind: "execution_ticket",
    id: ticketId,
    what: "Ticket",
    entity: db().entities.executionTicket,
    locate: async () => {
      const { data } = await db().entities.executionTicket.query.byId({ id: ticketId }).go({ limit: 1, attributes: ["workspace_id", "document_id", "id"] });
      return data[0] && keyOf(data[0]);
    },
  });
}

/**
 * `PATCH /api/execution/tickets/{ticket_id}` (spec 02: the review step): applies the edits and moves the ticket to
 * reviewed (from generated, reviewed or push_failed), conditioned on the status it read.
 * @throws AppError NOT_FOUND (404); INVALID_TRANSITION (422, a pushed or synced ticket: the tracker holds it now);
 *   VALIDATION_ERROR (422, the texts together pass TICKET_TEXT_MAX_BYTES); CONFLICT (409, its status changed meanwhile)
 */
export async function review(userId: string, ticketId: string, input: ReviewTicketInput): Promise<ExecutionTicket> {
  const t = await requireTicket(userId, ticketId);
  assertTransition(t.status, "reviewed");
  const edits = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  // Each field is within its own limit (the schema); together they must also fit one item (TICKET_TEXT_MAX_BYTES).
  const merged = { title: input.title ?? t.title, body: input.body ?? t.body, acceptance_criteria: input.acceptance_criteria ?? t.acceptance_criteria ?? [], labels: input.labels ?? t.labels ?? [] };
  const bytes = ticketTextBytes(merged);
  // Checked only when a text changes: a ticket stored before the budget approves as it is (its item already fits).
  const editsText = [input.title, input.body, input.acceptance_criteria, input.labels].some((v) => v !== undefined);
  if (editsText && bytes > TICKET_TEXT_MAX_BYTES) {
    throw Errors.validation(
      [{ loc: ["body"], msg: `title, body, acceptance criteria and labels take ${bytes} bytes (UTF-8) together; a ticket holds at most ${TICKET_TEXT_MAX_BYTES}`, type: "too_long" }],
      "The ticket's texts are too long together; shorten the body or the acceptance criteria",
    );
  }
  try {
    const { data } = await db().entities.executionTicket.patch(keyOf(t))
      .set({ ...edits, status: "reviewed", reviewed_by: userId })
      .remove(["push_error"])
      .where((a, op) => `${op.eq(a.status, t.status)} AND (${op.notExists(a.push_claim_until)} OR ${op.lt(a.push_claim_until, Date.now())})`)
      .go({ response: "all_new" });
    return toView(data as TicketItem, await blockIdsOf({ workspace_id: t.workspace_id, id: t.document_id }));
  } catch (err) {
    if (isConditionalFailure(err)) throw new AppError("CONFLICT", "The ticket changed meanwhile (a push may be under way); reload and retry");
    throw err;
  }
}

/** The body of the issue a ticket becomes: its body, the acceptance criteria as a checklist, the effort, the marker. */
export function issueBody(t: Pick<TicketItem, "id" | "body" | "acceptance_criteria" | "estimated_effort" | "priority" | "ticket_type">): string {
  const criteria = (t.acceptance_criteria ?? []).map((c) => `- [ ] ${c}`).join("\n");
  return [
    t.body.trim(),
    criteria && `## Acceptance criteria\n\n${criteria}`,
    `**Type:** ${t.ticket_type} · **Priority:** ${t.priority ?? "none"} · **Estimated effort:** ${t.estimated_effort}`,
    `<!-- ${markerOf(t.id)} -->`,
  ].filter(Boolean).join("\n\n");
}

/** The one answer of a refused plan feature or missing integration, per platform. */
async function requireIntegration(userId: string, workspaceId: string, platform: Platform) {
  await requireFeature({ userId, workspaceId }, FEATURE_OF[platform]);
  return OAuth.activeIntegration(workspaceId, platform);
}

/**
 * A push attempt's lease on a ticket. `ticket` is the item as the claim left it: the issue is built from it, not from
 * the list the push read at its start, since a review may have landed on a later ticket while earlier ones were
 * pushed (once the lease is held, none can). `retry`: an earlier attempt began, so an issue may exist already.
 */
type Claim = { ticket: TicketItem; until: number; startedAt: string; retry: boolean; heldBefore: string | undefined };

/** The place a push goes, as `may_hold_issue_at` records it. */
const placeOf = (platform: Platform, destination: string): string => `${platform}:${destination}`;

/** Take the push lease of a ticket in `from`: null when another push holds it or the status moved. */
async function claim(t: TicketItem, platform: Platform, destination: string): Promise<Claim | null> {
  const now = Date.now();
  const until = now + PUSH_LEASE_MS;
  // The first attempt's start stays: a retry must search back to it for an issue that attempt may have created.
  const startedAt = t.push_started_at ?? new Date(now).toISOString();
  const place = placeOf(platform, destination);
  // A mark recorded before Jira places named their site is this place too (`samePlace`): the claim is conditioned on
  // that mark as read, and records the place with its site.
  const held = t.may_hold_issue_at && t.may_hold_issue_at !== place && samePlace(t.may_hold_issue_at, place) ? t.may_hold_issue_at : null;
  try {
    // The mark of a possible issue goes down before the create can happen, and only where no other place holds one.
    const { data } = await db().entities.executionTicket.patch(keyOf(t))
      .set({ push_claim_until: until, push_started_at: startedAt, platform, destination, may_hold_issue_at: place })
      .where((a, op) => `${op.eq(a.status, t.status)} AND (${op.notExists(a.push_claim_until)} OR ${op.lt(a.push_claim_until, now)}) AND (${op.notExists(a.may_hold_issue_at)} OR ${op.eq(a.may_hold_issue_at, place)}${held ? ` OR ${op.eq(a.may_hold_issue_at, held)}` : ""})`)
      .go({ response: "all_new" });
    return { ticket: data as TicketItem, until, startedAt, retry: !!t.push_started_at, heldBefore: heldPlace(t) };
  } catch (err) {
    if (isConditionalFailure(err)) return null;
    throw err;
  }
}

/**
 * End a push attempt: the new status (and what it learned), only while this attempt still holds the lease. The lease
 * goes with it, unless `keepLease`: a create that got no answer may still be carried out by the provider, so the
 * ticket stays held for a whole lease from now (at least until the claim's `until`): no push can claim it, search,
 * find nothing yet and create a second issue; a push after that searches the marker and finds the issue if it landed.
 */
async function settle(c: Claim, to: TicketStatus | null, set: Record<string, unknown> = {}, remove: string[] = [], opts: { keepLease?: boolean } = {}): Promise<TicketItem | null> {
  if (to) assertTransition(c.ticket.status, to);
  try {
    const { data } = await db().entities.executionTicket.patch(keyOf(c.ticket))
      // A kept lease runs a whole lease from now: a create begun late in the claim's lease and aborted at its end
      // would otherwise leave the ticket free a moment later, before the issue can have landed.
      .set({ ...set, ...(to ? { status: to } : {}), ...(opts.keepLease ? { push_claim_until: Math.max(c.until, Date.now() + PUSH_LEASE_MS) } : {}) })
      .remove([...(opts.keepLease ? [] : ["push_claim_until"]), ...remove] as never[])
      .where((a, op) => `${op.eq(a.status, c.ticket.status)} AND ${op.eq(a.push_claim_until, c.until)}`)
      .go({ response: "all_new" });
    return data as TicketItem;
  } catch (err) {
    // The lease ran out and another push took the ticket: its outcome is that push's to record.
    if (isConditionalFailure(err)) return null;
    throw err;
  }
}

/** How a push_failed ticket's `push_error` begins when its issue may exist (a lost answer to a create). */
const OUTCOME_UNKNOWN = "outcome unknown";

/**
 * Why a claim was refused: another push holds the ticket (a push under way, or a create of an earlier attempt that got
 * no answer and may still land), until the lease the push read, when it has one still running.
 */
function heldMessage(t: TicketItem, now = Date.now()): string {
  const until = t.push_claim_until;
  return until !== undefined && until !== null && until >= now ? `another push holds this ticket (until ${new Date(until).toISOString()})` : "another push holds this ticket";
}

/**
 * Why a ticket may not be pushed to `platform`/`destination` now, or null: a push whose outcome is unknown may have
 * created an issue there, and only a push to the same place looks for it (by its marker) before creating one; a push
 * elsewhere would leave that issue behind as a duplicate. The place is `may_hold_issue_at`, set by every claim before
 * its create and cleared only by a push settled as pushed or a create known not to have happened: a push_failed whose
 * create got no answer, or a push that claimed the ticket and never settled it (its worker died, perhaps after the
 * create). A review (PATCH) or a later refusal at that place does not clear it. (Tickets written before the attribute:
 * a push_error "outcome unknown", or a lease left behind and run out, with `platform`/`destination`.) A push holding
 * a live lease is left to the claim to refuse.
 */
function elsewhereAfterUnknown(t: TicketItem, platform: Platform, destination: string, now = Date.now()): string | null {
  if (t.push_claim_until !== undefined && t.push_claim_until !== null && t.push_claim_until >= now) return null;
  const held = heldPlace(t);
  if (!held || samePlace(held, placeOf(platform, destination))) return null;
  const [heldPlatform, heldDestination] = [held.slice(0, held.indexOf(":")), held.slice(held.indexOf(":") + 1)];
  return `its last push (to ${heldPlatform}${heldDestination ? ` ${heldDestination}` : ""}) may have created an issue there (${OUTCOME_UNKNOWN}): push it there again, which finds that issue before creating one`;
}

/**
 * Where an issue of the ticket may exist unrecorded, or undefined: `may_hold_issue_at`, else (a ticket written before
 * that attribute) its `platform`/`destination` when its push_error says "outcome unknown" or a lease was left behind.
 */
function heldPlace(t: TicketItem): string | undefined {
  if (t.may_hold_issue_at) return t.may_hold_issue_at;
  const leased = t.push_claim_until !== undefined && t.push_claim_until !== null;
  const legacy = (t.status === "push_failed" && !!t.push_error?.startsWith(OUTCOME_UNKNOWN)) || leased;
  return legacy && t.platform ? placeOf(t.platform, t.destination ?? "") : undefined;
}

/**
 * What `may_hold_issue_at` becomes when this attempt is known to have created nothing (a refused create, a refused
 * marker search, a rate limit, a refused grant): removed unless an earlier attempt left it (its issue may still exist).
 */
const nothingCreated = (c: Claim): string[] => (c.heldBefore ? [] : ["may_hold_issue_at"]);

/** A push result before the answer adds `block_removed` (push reads the document's blocks once for all). */
type PushResult = Omit<PushOutcome, "block_removed">;
type SyncResult = Omit<SyncOutcome, "block_removed">;

const outcome = (t: TicketItem, status: PushOutcome["status"] = t.status, error: string | null = null): PushResult => ({
  ticket_id: t.id, status, external_url: t.external_url ?? null, external_id: t.external_id ?? null, error,
});

/**
 * A ticket a queued continuation may not push (see `push`'s `stale`): push_failed with the reason, unless a push holds
 * it or its status moved meanwhile (then it is left as it is). No lease is taken: nothing is sent to a tracker.
 */
async function failUnclaimed(t: TicketItem, reason: string): Promise<PushResult> {
  const message = reason.slice(0, 1000);
  try {
    const { data } = await db().entities.executionTicket.patch(keyOf(t))
      .set({ status: "push_failed", push_error: message })
      .where((a, op) => `${op.eq(a.status, t.status)} AND (${op.notExists(a.push_claim_until)} OR ${op.lt(a.push_claim_until, Date.now())})`)
      .go({ response: "all_new" });
    return outcome(data as TicketItem, "push_failed", message);
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    return outcome(t, t.status, "the ticket changed meanwhile (a push may be under way)");
  }
}

/**
 * Push one claimed ticket: find the issue an earlier attempt created (by the marker), else create it.
 * @returns the outcome; a rate limit is rethrown (the caller defers the rest)
 */
async function pushOne(tracker: Tracker, c: Claim): Promise<PushResult> {
  const t = c.ticket;
  // Whether this attempt sent a create: only then can its failure leave an issue still being made.
  let created = false;
  try {
    // Only a ticket some attempt already began can have an issue: a first attempt spends no search.
    const earlier = c.retry
      ? await tracker.findByMarker(markerOf(t.id), new Date(Date.parse(c.startedAt) - MARKER_SEARCH_SLACK_MS).toISOString(), t.id)
      : null;
    if (!earlier && Date.now() + Config.providerRequestTimeoutMs() >= c.until) {
      // The search ran so long that a create begun now could outlive the lease (and land after another push searched):
      // nothing was created by this attempt; the next push searches again.
      const message = "the search for an earlier issue left too little of the push's lease for a create; push again";
      const late = await settle(c, "push_failed", { push_error: message }, nothingCreated(c));
      return outcome(late ?? t, late ? "push_failed" : t.status, message);
    }
    let issue = earlier;
    if (!issue) {
      created = true;
      issue = await tracker.create({ ticket_id: t.id, ticket_type: t.ticket_type, title: t.title, body: issueBody(t), labels: t.labels ?? [], priority: t.priority ?? null });
    }
    const done = await settle(c, "pushed", { external_id: issue.external_id, external_url: issue.external_url }, ["push_error", "may_hold_issue_at"]);
    return done ? outcome(done) : outcome(t, t.status, "another push took the ticket over");
  } catch (err) {
    if (err instanceof ProviderError && (err.failure === "rate_limited" || err.failure === "auth_expired")) {
      // A limit (the caller queues the rest) or a refused grant (the tracker answers its 424): nothing was created.
      await settle(c, null, {}, nothingCreated(c));
      throw err;
    }
    if (err instanceof AppError) {
      // The 424 of a refused grant (the tracker marked the integration): release the ticket, answer the 424.
      await settle(c, null, {}, nothingCreated(c));
      throw err;
    }
    // Refused (validation, forbidden, not found) or an outcome nobody knows (timeout, 5xx): push_failed. The
    // retry searches for the marker first, so an issue created behind a lost answer is found, not duplicated.
    const known = err instanceof ProviderError && ["validation", "forbidden", "not_found"].includes(err.failure);
    // A create that got no answer (our timeout ended the wait, the connection dropped; anything but a failure the
    // provider answered, `wasAnswered`) may still be carried out: the lease stays until its end, so no push searches
    // for the marker before the issue can have landed. An answered failure (a 5xx) ended the provider's processing.
    const stillOpen = !known && created && !wasAnswered(err);
    const why = err instanceof Error ? err.message : String(err);
    const message = known
      ? why
      : stillOpen
        ? `${OUTCOME_UNKNOWN} (${why}); the ticket is held until ${new Date(c.until).toISOString()} (the create may still land), then a retry looks for the issue before creating one`
        : `${OUTCOME_UNKNOWN} (${why}); a retry looks for the issue before creating one`;
    // A known refusal (of the create, or of a retry's marker search) created nothing now; an earlier attempt's mark
    // stays, whatever push_error says from now on. An unknown outcome keeps the mark the claim set.
    const failed = await settle(c, "push_failed", { push_error: message.slice(0, 1000) }, known ? nothingCreated(c) : [], { keepLease: stillOpen });
    return outcome(failed ?? t, failed ? "push_failed" : t.status, message);
  }
}

/**
 * `POST /api/execution/push` (spec 02): one issue per ticket on the platform's active integration; by default every
 * reviewed ticket of the document, else the named ones (a ticket whose status cannot move to pushed is reported with
 * its invalid transition and counted as failed; the others go on). On success the ticket stores platform,
 * external_id and external_url; a refused push is push_failed with the reason. When the provider rate-limits part-way,
 * the rest is queued with its retry-after as the delay and reported `queued`.
 * @param destination set by a queued continuation (the repository, team or Jira site and project the first request
 *   resolved). It is checked against the integration as it is now: a repository deselected, another team or site, a
 *   disconnect or a plan without the feature fails the continuation's tickets with the reason (push_failed), and the
 *   job ends (the queue does not retry a refusal)
 * @returns `{results: [{ticket_id, status, external_url, external_id, error, block_removed}], pushed, failed, queued}`
 * @throws AppError FORBIDDEN (403: not a member; or the plan lacks has_codehost for the code host, has_integrations
 *   for the others); NOT_FOUND (404, document); NO_ACTIVE_INTEGRATION (404); VALIDATION_ERROR (422, ticket ids not of the
 *   document; project_key missing for the ticket tool); REPO_NOT_SELECTED and NO_TEAM_SELECTED (422); CODEHOST_TOKEN_ERROR
 *   and the others' (424); SERVICE_UNAVAILABLE (503)
 */
export async function push(userId: string, input: PushTicketsInput, destination?: string, opts: { budgetMs?: number } = {}): Promise<PushTicketsResult> {
  const deadline = Date.now() + (opts.budgetMs ?? WORK_BUDGET_MS);
  const doc = await documentIn(userId, input.workspace_id, input.document_id);
  const adapter = trackerOf(input.platform);
  let integration: OAuth.IntegrationItem | null = null;
  // Why a queued continuation may not go on: its integration went (a disconnect, a plan without the feature) or no
  // longer leads where the first request resolved (`adapter.changed`). Its tickets then fail with the reason, once,
  // rather than reaching a destination nobody chose now, or the queue retrying a refusal until it dead-letters.
  let stale: string | null = null;
  try {
    integration = await requireIntegration(userId, doc.workspace_id, input.platform);
  } catch (err) {
    if (destination === undefined || !(err instanceof AppError) || (err.status !== 403 && err.status !== 404)) throw err;
    stale = `${err.code}: ${err.message}`;
  }
  if (destination !== undefined && integration) stale = adapter.changed(integration, destination);
  const all = await ticketsOf(doc);
  let chosen: TicketItem[];
  if (input.ticket_ids) {
    const byId = new Map(all.map((t) => [t.id, t]));
    const unknown = input.ticket_ids.filter((id) => !byId.has(id));
    if (unknown.length) throw Errors.unknownIds("ticket", "ticket_ids", unknown);
    chosen = [...new Set(input.ticket_ids)].map((id) => byId.get(id)!);
  } else {
    chosen = all.filter((t) => t.status === "reviewed");
  }
  const results: PushResult[] = [];
  const pushable = chosen.filter((t) => {
    const refused = checkBatchTransition(t.status, "pushed");
    if (refused) results.push(outcome(t, t.status, refused.error));
    return !refused;
  });
  if (pushable.length && stale !== null) {
    for (const t of pushable) results.push(await failUnclaimed(t, stale));
  } else if (pushable.length && integration) {
    const related = doc.related_recommendation_id
      ? (await db().entities.recommendation.get({ workspace_id: doc.workspace_id, id: doc.related_recommendation_id }).go()).data
      : null;
    const dest = destination ?? (await adapter.destination(doc.workspace_id, integration, { repo: input.repo, targetRepo: related?.target_repo ?? null, projectKey: input.project_key }));
    await adapter.open(doc.workspace_id, dest, async (tracker) => {
      const queueRest = async (i: number, delaySeconds: number) => {
        const rest = pushable.slice(i);
        await deferJob(
          { type: "tickets.push", workspace_id: doc.workspace_id, user_id: userId, document_id: doc.id, platform: input.platform, ticket_ids: rest.map((t) => t.id), destination: dest },
          delaySeconds,
        );
        for (const t of rest) results.push(outcome(t, "queued"));
      };
      for (let i = 0; i < pushable.length; i++) {
        // Past the budget, the rest goes to the queue at once (its consumer works on with a budget of its own).
        if (i > 0 && Date.now() > deadline) return queueRest(i, 1);
        const elsewhere = elsewhereAfterUnknown(pushable[i]!, input.platform, dest);
        if (elsewhere) {
          results.push(outcome(pushable[i]!, pushable[i]!.status, elsewhere));
          continue;
        }
        const c = await claim(pushable[i]!, input.platform, dest);
        if (!c) {
          results.push(outcome(pushable[i]!, pushable[i]!.status, heldMessage(pushable[i]!)));
          continue;
        }
        try {
          results.push(await pushOne(tracker, c));
        } catch (err) {
          if (!(err instanceof ProviderError) || err.failure !== "rate_limited") throw err;
          return queueRest(i, err.retryAfterSeconds ?? 60);
        }
      }
    });
  }
  const order = new Map((input.ticket_ids ?? chosen.map((t) => t.id)).map((id, i) => [id, i]));
  results.sort((a, b) => (order.get(a.ticket_id) ?? 0) - (order.get(b.ticket_id) ?? 0));
  const removed = await removedBlocksOf(doc, all);
  return {
    results: results.map((r) => ({ ...r, block_removed: removed.has(r.ticket_id) })),
    pushed: results.filter((r) => r.status === "pushed" && r.error === null).length,
    failed: results.filter((r) => r.error !== null && r.status !== "queued").length,
    queued: results.filter((r) => r.status === "queued").length,
  };
}

/** A synced result. */
const syncOutcome = (t: TicketItem, changed: boolean, error: string | null = null, status: SyncOutcome["status"] = t.status): SyncResult => ({
  ticket_id: t.id, status, synced_status: (t.synced_status as TicketCategory | undefined) ?? null, external_url: t.external_url ?? null, changed, error,
});

/**
 * A Jira ticket pushed before its destination named the site (`KEY` alone, not `<cloud_id>/KEY`) whose issue address
 * is on another host than the issue just read under that id: the workspace reconnected to another site, where the
 * same numeric id is an unrelated issue. (A ticket that names its site never reaches another: `open` refuses it.)
 */
function pushedToAnotherSite(t: TicketItem, readUrl: string): boolean {
  if (t.platform !== "tickets" || !t.external_url || jiraDestination(t.destination ?? "").site !== null) return false;
  try {
    return new URL(t.external_url).host !== new URL(readUrl).host;
  } catch {
    return false;
  }
}

/** Read one pushed ticket's issue (or take what a batched read found) and record its category (pushed → synced; synced stays synced). */
async function syncOne(tracker: Tracker, t: TicketItem, now: string, batched?: IssueRead | ProviderError): Promise<SyncResult> {
  if (batched instanceof ProviderError) throw batched;
  const read = batched ?? (await tracker.read(t.external_id!, t.etag));
  const to: TicketStatus = "synced";
  assertTransition(t.status, to);
  if (!read.modified) {
    const { data } = await db().entities.executionTicket.patch(keyOf(t)).set({ last_synced_at: now, status: to }).where((a, op) => op.eq(a.status, t.status)).go({ response: "all_new" });
    return syncOutcome(data as TicketItem, t.status !== to);
  }
  if (!read.category) return syncOutcome(t, false, `unmapped status category: ${read.remote_state}`);
  if (pushedToAnotherSite(t, read.external_url)) {
    return syncOutcome(t, false, `not_found: the ticket was pushed to another Jira site (${new URL(t.external_url!).host}) than the one connected now: connect that site again to sync it`);
  }
  const changed = read.category !== t.synced_status;
  // Only over the sync this one read: a concurrent sync that read the issue later and wrote first keeps its newer
  // state (this write fails its condition: "the ticket changed meanwhile") instead of being moved back.
  const { data } = await db().entities.executionTicket.patch(keyOf(t))
    .set({ status: to, synced_status: read.category, remote_state: read.remote_state, external_url: read.external_url, last_synced_at: now, ...(read.etag ? { etag: read.etag } : {}) })
    .where((a, op) => `${op.eq(a.status, t.status)} AND ${t.last_synced_at ? op.eq(a.last_synced_at, t.last_synced_at) : op.notExists(a.last_synced_at)}`)
    .go({ response: "all_new" });
  return syncOutcome(data as TicketItem, changed);
}

/**
 * Note on a ticket that the sync run begun at `startedAt` tried it and could not sync it: that run's continuations
 * skip it (the next sync, with its own `startedAt`, reads it again). A ticket deleted meanwhile stays deleted.
 */
async function markSyncFailed(t: TicketItem, startedAt: string): Promise<void> {
  try {
    await db().entities.executionTicket.patch(keyOf(t)).set({ sync_failed_run: startedAt }).go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

/**
 * Every pushed ticket of the document has settled (done or cancelled), one at least done: the work of the document
 * is delivered, and its recommendation moves to implemented (unless implemented or rejected; spec 01).
 */
async function settleRecommendation(userId: string, doc: DocumentItem): Promise<boolean> {
  if (!doc.related_recommendation_id) return false;
  const out = (await ticketsOf(doc)).filter((t) => t.status === "pushed" || t.status === "synced");
  const cats = out.map((t) => t.synced_status as TicketCategory | undefined);
  if (!out.length || !cats.every((c) => c && TERMINAL_CATEGORIES.includes(c)) || !cats.includes("done")) return false;
  return markImplemented(userId, doc.related_recommendation_id);
}

/**
 * `POST /api/execution/sync` (spec 02): read each pushed ticket's issue on its platform and record its status category
 * (`synced_status`: GitHub state/state_reason, Linear state type, Jira statusCategory; never a name). One-way: nothing
 * is written to the tracker. Tickets whose platform lacks its plan feature or integration are reported as errors;
 * when no platform of the document's pushed tickets is usable, the answer is that platform's 403 or 404.
 * @param startedAt tickets synced at or after this instant, or whose read failed in the run begun then
 *   (`sync_failed_run`), are skipped (a queued continuation of the same sync)
 * @returns `{results, synced (category changed), unchanged, errors, queued, recommendation_implemented}`
 * @throws AppError FORBIDDEN (403: not a member, or a plan gate); NOT_FOUND (404, document); NO_ACTIVE_INTEGRATION (404);
 *   CODEHOST_TOKEN_ERROR and the others' (424)
 */
export async function sync(userId: string, input: SyncTicketsInput, startedAt = new Date().toISOString(), opts: { budgetMs?: number } = {}): Promise<SyncTicketsResult> {
  const deadline = Date.now() + (opts.budgetMs ?? WORK_BUDGET_MS);
  const doc = await documentIn(userId, input.workspace_id, input.document_id);
  // A ticket this run already tried and could not sync (`sync_failed_run`) is not read again by its continuations:
  // each run reads every ticket once at most, so its chain of continuations ends however many reads fail.
  const due = (await ticketsOf(doc)).filter((t) => (t.status === "pushed" || t.status === "synced") && t.external_id && t.platform && unreadInRun(t, startedAt));
  const results: SyncResult[] = [];
  const groups = new Map<string, TicketItem[]>();
  for (const t of due) groups.set(`${t.platform}\u0000${t.destination ?? ""}`, [...(groups.get(`${t.platform}\u0000${t.destination ?? ""}`) ?? []), t]);
  let unusable: unknown;
  let usable = 0;
  // One continuation job for the whole sync: it picks up every ticket not synced since `startedAt`.
  let deferred = false;
  for (const [key, tickets] of groups) {
    const [platform, dest] = key.split("\u0000") as [Platform, string];
    try {
      await requireIntegration(userId, doc.workspace_id, platform);
    } catch (err) {
      if (!(err instanceof AppError) || (err.code !== "NO_ACTIVE_INTEGRATION" && !isPlanFeatureRefusal(err))) throw err;
      unusable ??= err;
      for (const t of tickets) results.push(syncOutcome(t, false, `${err.code}: ${err.message}`));
      continue;
    }
    const now = new Date().toISOString();
    const before = results.length;
    try {
      await trackerOf(platform).open(doc.workspace_id, dest, async (tracker) => {
        const queueRest = async (i: number, delaySeconds: number) => {
          if (!deferred) {
            await deferJob({ type: "tickets.sync", workspace_id: doc.workspace_id, user_id: userId, document_id: doc.id, started_at: startedAt }, delaySeconds);
            deferred = true;
          }
          for (const t of tickets.slice(i)) results.push(syncOutcome(t, false, null, "queued"));
        };
        // Batched reads (Linear, Jira): one request per page of the tracker's (its `readBatch`), taken as the loop reaches them.
        const reads = new Map<string, IssueRead | ProviderError>();
        for (let i = 0; i < tickets.length; i++) {
          if (i > 0 && Date.now() > deadline) return queueRest(i, 1);
          try {
            if (tracker.readMany && !reads.has(tickets[i]!.external_id!)) {
              const ids = tickets.slice(i, i + (tracker.readBatch ?? 1)).map((t) => t.external_id!);
              const got = await tracker.readMany(ids);
              for (const id of ids) reads.set(id, got.get(id) ?? new ProviderError("not_found", `issue ${id} is gone or out of the grant's reach`));
            }
            const r = await syncOne(tracker, tickets[i]!, now, reads.get(tickets[i]!.external_id!));
            if (r.error) await markSyncFailed(tickets[i]!, startedAt);
            results.push(r);
          } catch (err) {
            if (err instanceof ProviderError && err.failure === "rate_limited") return queueRest(i, err.retryAfterSeconds ?? 60);
            if (err instanceof ProviderError && err.failure !== "auth_expired") {
              await markSyncFailed(tickets[i]!, startedAt);
              results.push(syncOutcome(tickets[i]!, false, `${err.failure}: ${err.message}`));
              continue;
            }
            if (isConditionalFailure(err)) {
              await markSyncFailed(tickets[i]!, startedAt);
              results.push(syncOutcome(tickets[i]!, false, "the ticket changed meanwhile"));
              continue;
            }
            throw err;
          }
        }
      });
      usable++;
    } catch (err) {
      // A grant that expired or was revoked (424, reconnect), a token that could not be refreshed just now (503,
      // retryable) or an integration a disconnect removed meanwhile (NO_ACTIVE_INTEGRATION): this platform's tickets
      // say so, the other platforms' results stand; only when no platform could be read is the sync itself refused.
      if (!(err instanceof AppError) || (err.status !== 424 && err.status !== 503 && err.code !== "NO_ACTIVE_INTEGRATION")) throw err;
      unusable ??= err;
      const done = new Set(results.slice(before).map((r) => r.ticket_id));
      for (const t of tickets) if (!done.has(t.id)) results.push(syncOutcome(t, false, `${err.code}: ${err.message}`));
    }
  }
  if (groups.size && !usable && unusable) throw unusable;
  const implemented = await settleRecommendation(userId, doc);
  const removed = await removedBlocksOf(doc, due);
  return {
    results: results.map((r) => ({ ...r, block_removed: removed.has(r.ticket_id) })),
    synced: results.filter((r) => r.changed).length,
    unchanged: results.filter((r) => !r.changed && !r.error && r.status !== "queued").length,
    errors: results.filter((r) => r.error).length,
    queued: results.filter((r) => r.status === "queued").length,
    recommendation_implemented: implemented,
  };
}

export { canTransition };
