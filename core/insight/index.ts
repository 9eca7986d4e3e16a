import pLimit from "p-limit";
import pRetry from "p-retry";
import { isServerError, isThrottlingError, isTransientError } from "@smithy/service-error-classification";
import { isConditionalFailure } from "../db/errors";
import { randomUUID } from "node:crypto";
import { AppError, Errors, type FieldError } from "../error";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { fitResponse } from "../response-size";
import { groundQuotes } from "../ai/synthesis/quotes";
import * as Research from "../research";
import { requireMember, requireResourceById } from "../workspace";
import { asWrite, commitWrites, createOnce, tagOf, type AgentWrite } from "../db/agent-write";
import { embedder } from "../ai/select";
import { asChange, searchText, searchVectorFields } from "./search-index";
import { toView, type InsightItem } from "./view";
import {
  MAX_INSIGHT_BYTES,
  type BatchInsightsInput,
  type CreateInsightInput,
  type Insight as InsightView,
  type ListInsightsQuery,
  type UpdateInsightInput,
} from "./schema";

export * from "./schema";

export { toView, type InsightItem } from "./view";

/**
 * The embedder for an insight write's search vectors, or undefined when it cannot be had (the write goes on; the
 * insight ranks by its words until a later write embeds it: core/insight/search-index.ts).
 */
const writeEmbedder = () => embedder().catch(() => undefined);

/** All insights of a workspace (strongly consistent), unsorted. */
export async function allOf(workspaceId: string): Promise<InsightItem[]> {
  const { data } = await db().entities.insight.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true });
  return data;
}

/**
 * Resolve an insight fetched by id alone and check membership of its workspace.
 * @throws AppError NOT_FOUND (404), also when the caller is not a member of its workspace (its existence is not revealed).
 */
export async function requireInsight(userId: string, insightId: string): Promise<InsightItem> {
  // One round trip once the container knows the id's workspace (core/workspace requireResourceById).
  return requireResourceById<InsightItem>(userId, {
    kind: "insight",
    id: insightId,
    what: "Insight",
    entity: db().entities.insight,
    locate: async () => {
      const { data } = await db().entities.insight.query.byId({ id: insightId }).go({ limit: 1, attributes: ["workspace_id"] });
      return data[0] && { workspace_id: data[0].workspace_id, id: insightId };
    },
  });
}

/** What an insight write hands its settlement (AgentWrite.settle): the insight's id and title as written. */
export interface InsightWritten {
  id: string;
  title: string;
}

/**
 * `POST /api/insights`: a manual insight. frequency defaults to the number of distinct sources (at least 1);
 * mention_count to the number of quotes (at least 1). For an approved pending action (`opts`, DESIGN.md 6.2) the
 * insight is created under `opts.id`, tagged with the action in the same write, and committed together with
 * `opts.settle` (one transaction); an insight already under `opts.id` (an earlier run wrote it) is the answer.
 * @throws AppError FORBIDDEN; VALIDATION_ERROR (422) for provenance that is not the workspace's or not verbatim;
 *   SettlementRefused (core/db/agent-write.ts) when the executor lost the action meanwhile (nothing written).
 */
export async function create(userId: string, input: CreateInsightInput, opts: AgentWrite<InsightWritten> = {}): Promise<InsightView> {
  await requireMember(userId, input.workspace_id);
  await requireGroundedProvenance(input);
  const sourceIds = [...new Set([...input.source_ids, ...input.quotes.map((q) => q.source_id)])];
  const id = opts.id ?? randomUUID();
  // The search vector is written with the insight (issue #24: nothing is embedded on a search but the query).
  const [vectorFields] = await searchVectorFields([searchText(input)], embedder);
  const write = db().entities.insight.create({
    id,
    workspace_id: input.workspace_id,
    insight_type: input.insight_type,
    title: input.title,
    description: input.description,
    source_ids: sourceIds,
    quotes: input.quotes.map((q) => ({ text: q.text, source_id: q.source_id, ...(q.speaker ? { speaker: q.speaker } : {}) })),
    frequency: input.frequency ?? Math.max(1, sourceIds.length),
    mention_count: Math.max(1, input.quotes.length),
    severity: input.severity,
    impact: input.impact,
    origin: opts.pendingActionId ? "agent" : "manual",
    created_by: userId,
    ...vectorFields,
    ...tagOf(opts),
  });
  const stored = async () => (await db().entities.insight.get({ workspace_id: input.workspace_id, id }).go({ consistent: true })).data;
  const data = await asChange(
    input.workspace_id,
    [id],
    async () => {
      if (opts.settle) {
        // A refused create (the only condition of the insight's write) means it exists: an earlier run's, returned as is.
        await commitWrites(["insight"], [asWrite(write)], opts.settle({ id, title: input.title }));
        const written = await stored();
        if (!written) throw new Error(`insight ${id} is missing after its write`);
        return written;
      }
      return createOnce(opts, async () => (await write.go()).data as InsightItem, stored);
    },
    writeEmbedder,
  );
  return toView(data);
}

/**
 * Provenance of a hand-made (or agent-made) insight, held to the synthesis engines' standard: every source it names
 * is a source of its workspace, and every quote occurs verbatim in its source's extracted text (`groundQuotes`,
 * DESIGN.md section 5), so a quote cannot be invented or borrowed from another tenant (issue #10 item 6).
 * @throws AppError VALIDATION_ERROR (422) naming unknown source ids, or the quotes that are not verbatim.
 */
async function requireGroundedProvenance(input: CreateInsightInput): Promise<void> {
  if (Buffer.byteLength(JSON.stringify(input), "utf8") > MAX_INSIGHT_BYTES) {
    const msg = `An insight holds at most ${MAX_INSIGHT_BYTES / 1024} KiB of text in all (title, description, impact, quotes)`;
    throw Errors.validation([{ loc: ["body", "quotes"], msg, type: "too_big" }], msg);
  }
  await Research.requireSourcesIn(input.workspace_id, input.source_ids, "source_ids");
  const quoted = await Research.requireSourcesIn(input.workspace_id, input.quotes.map((q) => q.source_id), "quotes");
  if (input.quotes.length === 0) return;
  const texts = new Map<string, { extracted_text: string }>();
  await Promise.all(
    quoted
      .filter((s) => s.processing_status === "completed")
      .map(async (s) => {
        const extraction = await Research.readExtraction(s.workspace_id, s.id);
        if (extraction) texts.set(s.id, { extracted_text: extraction.extracted_text });
      }),
  );
  const errors: FieldError[] = [];
  input.quotes.forEach((q, i) => {
    if (groundQuotes([{ text: q.text, source_id: q.source_id, speaker: null }], texts).length === 0) {
      errors.push({
        loc: ["body", "quotes", i, "text"],
        msg: texts.has(q.source_id)
          ? `Quote ${i + 1} does not occur verbatim in research source ${q.source_id}`
          : `Research source ${q.source_id} has no extracted text yet, so quote ${i + 1} cannot be checked`,
        type: "quote_not_verbatim",
      });
    }
  });
  if (errors.length) throw Errors.validation(errors, "Every quote must occur verbatim in the research source it names");
}

/** Newest first, then id, so pages are stable. */
const newestFirst = (a: InsightItem, b: InsightItem) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id);

/**
 * `GET /api/insights`: filtered, newest first, paginated (limit default 200, max 500); archived insights are
 * hidden unless `is_archived` is given.
 */
export async function list(userId: string, q: ListInsightsQuery): Promise<{ insights: InsightView[]; total: number }> {
  await requireMember(userId, q.workspace_id);
  const archived = q.is_archived ?? false;
  const matching = (await allOf(q.workspace_id))
    .filter(
      (i) =>
        i.is_archived === archived &&
        (!q.insight_type || i.insight_type === q.insight_type) &&
        (!q.severity || i.severity === q.severity) &&
        (!q.min_frequency || i.frequency >= q.min_frequency),
    )
    .sort(newestFirst);
  // At most LIST_RESPONSE_BYTES: a page of big insights ends early (the next starts at offset + those given).
  return { insights: fitResponse(matching.slice(q.offset, q.offset + q.limit).map(toView)), total: matching.length };
}

export async function get(userId: string, insightId: string): Promise<InsightView> {
  return toView(await requireInsight(userId, insightId));
}

/**
 * `PATCH /api/insights/{id}`: only the given fields change; a title or description change drops the stale synthesis
 * centroid and writes the new text's search vector (both with the change, in one write). A body with no field answers
 * the insight as it is, unwritten (`updated_at` stays), unless `opts.settle` is given.
 * For an approved pending action (`opts`, DESIGN.md 6.2) the change carries the action's id in the same write and
 * commits together with `opts.settle`.
 * `opts.expectedUpdatedAt`: write only over the insight as it was at that `updated_at` (a caller that judged an earlier
 * read, such as the harness's quality repair, must not overwrite a member's change made since).
 * @throws AppError NOT_FOUND (404); CONFLICT (409) when its title or description changed between the read and the write
 *   (the search vector is of the text read), or it is no longer at `opts.expectedUpdatedAt`; SettlementRefused when the
 *   executor lost the action meanwhile (nothing written).
 */
export async function update(
  userId: string,
  insightId: string,
  input: UpdateInsightInput,
  opts: AgentWrite<InsightWritten> & { expectedUpdatedAt?: string } = {},
): Promise<InsightView> {
  const item = await requireInsight(userId, insightId);
  if (opts.expectedUpdatedAt !== undefined && item.updated_at !== opts.expectedUpdatedAt) throw new AppError("CONFLICT", "The insight changed meanwhile; read it again and retry");
  // No field to change: the insight as it is, unwritten (a write would move `updated_at`). An approved pending action
  // still writes, as its tag and settlement go with the write.
  if (!opts.settle && Object.values(input).every((v) => v === undefined)) return toView(item);
  // Only a new value is a text change: a client resending the title or description as it is (a form's whole state)
  // must not drop the synthesis centroid (dedup of later runs) nor re-embed the search vector.
  const textChanged = (input.title !== undefined && input.title !== item.title) || (input.description !== undefined && input.description !== item.description);
  // Text sent, changed or not, is written: only over the text read, or a resend of the old title could undo another
  // request's rename that committed meanwhile (and leave that rename's search vector on the old text).
  const textSent = input.title !== undefined || input.description !== undefined;
  const { notes, rating, ...rest } = input;
  const removals: ("notes" | "rating" | "vector" | "embedder_id" | "search_vector" | "search_scale" | "search_embedder_id")[] = [];
  // An empty note is no note: "" clears it like null (it used to be ignored, leaving the old note in place).
  if (notes === null || notes === "") removals.push("notes");
  if (rating === null) removals.push("rating");
  // New text: the synthesis centroid no longer describes it, and the search vector is the new text's.
  const [vectorFields] = textChanged
    ? await searchVectorFields([searchText({ title: rest.title ?? item.title, description: rest.description ?? item.description })], embedder)
    : [{}];
  if (textChanged) removals.push("vector", "embedder_id");
  if (textChanged && !vectorFields!.search_vector) removals.push("search_vector", "search_scale", "search_embedder_id");
  const patch = db()
    .entities.insight.patch({ workspace_id: item.workspace_id, id: item.id })
    .set({ ...rest, ...(notes ? { notes } : {}), ...(rating ? { rating } : {}), ...vectorFields, ...tagOf(opts) })
    .remove(removals)
    // The search vector is of the text read above: written only over that text (two text edits at once would leave
    // the vector of a text the insight no longer has).
    .where((a, op) =>
      [
        ...(textSent ? [op.eq(a.title, item.title), op.eq(a.description, item.description)] : []),
        ...(opts.expectedUpdatedAt !== undefined ? [op.eq(a.updated_at, opts.expectedUpdatedAt)] : []),
      ].join(" AND "),
    );
  /** A refused condition: the insight is gone (404), or its text (or, with `expectedUpdatedAt`, anything) changed meanwhile (409). */
  const refused = async (): Promise<AppError> => {
    const { data: now } = await db().entities.insight.get({ workspace_id: item.workspace_id, id: item.id }).go({ consistent: true });
    return now ? new AppError("CONFLICT", "The insight's text changed meanwhile; read it again and retry") : Errors.notFound("Insight");
  };
  const data = await asChange(
    item.workspace_id,
    [item.id],
    async () => {
      if (opts.settle) {
        const codes = await commitWrites(["insight"], [asWrite(patch)], opts.settle({ id: item.id, title: rest.title ?? item.title }));
        if (codes) throw await refused(); // the patch's conditions: the insight exists, with the text read
        return requireInsight(userId, insightId);
      }
      try {
        return (await patch.go({ response: "all_new" })).data as InsightItem;
      } catch (err) {
        // Deleted between the read and the write (the patch is conditioned on the item being there), or re-texted.
        if (isConditionalFailure(err)) throw await refused();
        throw err;
      }
    },
    writeEmbedder,
  );
  return toView(data);
}

/** `DELETE /api/insights/{id}`: permanent. */
export async function remove(userId: string, insightId: string): Promise<void> {
  const item = await requireInsight(userId, insightId);
  await asChange(item.workspace_id, [item.id], () => db().entities.insight.delete({ workspace_id: item.workspace_id, id: item.id }).go());
}

/**
 * Archive writes of one batch in flight at once. Unbounded, 500 UpdateItems of 10-15 KB insights on one partition key
 * (`ws#<id>`) were several thousand WCU in one burst against a partition's 1,000 WCU/s: most were throttled.
 */
const BATCH_CONCURRENCY = 8;
/** Tries of one insight's archive write failing transiently (throttled, 5xx, dropped), beyond the SDK's own retries. */
const BATCH_WRITE_TRIES = 6;
/**
 * No write of a batch is tried again once this long has passed since the batch began: the insights group's function
 * times out at 29 s, and the snapshot bookkeeping and the answer come after the writes.
 */
const BATCH_RETRY_BUDGET_MS = 18_000;

/**
 * DynamoDB errors worth trying again: throttling, capacity, server faults, dropped connections (on the error or its
 * `cause` chain: ElectroDB wraps the SDK's error).
 */
function isTransientStoreError(err: unknown): boolean {
  let e = err as { name?: string; $retryable?: unknown; $metadata?: { httpStatusCode?: number }; cause?: unknown } | undefined;
  for (let depth = 0; e && typeof e === "object" && depth < 6; depth++, e = e.cause as typeof e) {
    const sdk = e as Parameters<typeof isTransientError>[0];
    const status = e.$metadata?.httpStatusCode ?? 0;
    if (isThrottlingError(sdk) || isTransientError(sdk) || isServerError(sdk) || e.$retryable || status >= 500 || status === 429) return true;
    if (e.name === "InternalServerError" || e.name === "ServiceUnavailable" || e.name === "NetworkingError") return true;
  }
  return false;
}

/**
 * `POST /api/insights/batch`: archive or unarchive the listed insights of the workspace. Ids that are not
 * insights of this workspace are not touched and not counted; neither are insights already in the asked state, so
 * `insight_ids` are exactly the insights this call changed.
 * The writes go a few at a time (one partition key takes them all), each tried again with backoff while DynamoDB
 * throttles it or fails transiently, within `BATCH_RETRY_BUDGET_MS`.
 * @throws AppError FORBIDDEN; SERVICE_UNAVAILABLE (503, retryable) when some writes still failed: its `updated_count`
 *   and `insight_ids` are the insights this call did change (the search snapshot shows them), and the same request
 *   sent again changes the rest (and answers those, the ones done here being in the asked state already).
 */
export async function batch(userId: string, input: BatchInsightsInput): Promise<{ updated_count: number; insight_ids: string[] }> {
  await requireMember(userId, input.workspace_id);
  const archive = input.action === "archive";
  const unique = [...new Set(input.insight_ids)];
  const keysOf = (ids: string[]) => ids.map((id) => ({ workspace_id: input.workspace_id, id }));
  const readAll = (ids: string[]) => getAll(keysOf(ids), (keys) => db().entities.insight.get(keys).go({ consistent: true }));
  const data = await readAll(unique);
  const targets = data.filter((i) => i.is_archived !== archive);
  const deadline = Date.now() + BATCH_RETRY_BUDGET_MS;
  const limit = pLimit(BATCH_CONCURRENCY);
  // One change of the search snapshot: its rows carry is_archived, which search results show (nothing to embed). Its
  // finishChange re-reads every target as it is, so a batch that changed only some leaves their rows right too.
  const outcomes = await asChange(input.workspace_id, targets.map((i) => i.id), async () => {
    const settled = await limit.map(targets, async (i): Promise<{ id: string; outcome: "updated" | "gone" | "failed" | "error"; err?: unknown }> => {
      // Past the budget no write starts (each may spend the SDK's own backoff): those left are answered as not done,
      // inside the function's time, rather than a gateway timeout outside the envelope.
      if (Date.now() >= deadline) return { id: i.id, outcome: "failed" };
      try {
        await pRetry(() => db().entities.insight.patch({ workspace_id: i.workspace_id, id: i.id }).set({ is_archived: archive }).go(), {
          retries: BATCH_WRITE_TRIES - 1,
          factor: 2,
          minTimeout: 50,
          maxTimeout: 1_000,
          randomize: true,
          shouldRetry: ({ error }) => isTransientStoreError(error) && Date.now() < deadline,
        });
        return { id: i.id, outcome: "updated" };
      } catch (err) {
        // Deleted meanwhile: not touched, not counted (as an id that is not the workspace's).
        if (isConditionalFailure(err)) return { id: i.id, outcome: "gone" };
        // Kept failing: the others go on, and the answer says which were done.
        if (isTransientStoreError(err)) return { id: i.id, outcome: "failed" };
        return { id: i.id, outcome: "error", err };
      }
    });
    // Thrown only once every write has settled: the snapshot's finishChange must read them after the last one lands.
    const defect = settled.find((o) => o.outcome === "error");
    if (defect) throw defect.err;
    return settled;
  });
  const updated = outcomes.filter((o) => o.outcome === "updated").map((o) => o.id);
  const failed = outcomes.filter((o) => o.outcome === "failed").map((o) => o.id);
  if (failed.length > 0) {
    // A write whose answer was lost may have landed: counted when the insight is now in the asked state; one gone
    // meanwhile is not counted (as above). When even this read fails, every failed one is left for the retry.
    const now = await readAll(failed).catch(() => undefined);
    const state = new Map(now?.map((i) => [i.id, i.is_archived]));
    updated.push(...failed.filter((id) => state.get(id) === archive));
    const left = now ? failed.filter((id) => state.has(id) && state.get(id) !== archive) : failed;
    if (left.length > 0) {
      throw new AppError(
        "SERVICE_UNAVAILABLE",
        `The table is busy: ${updated.length} insights were ${input.action}d (listed in insight_ids) and ${left.length} could not be yet; send the same request again to ${input.action} the rest`,
        { retryable: true, retry_after_seconds: 1, updated_count: updated.length, insight_ids: updated },
      );
    }
  }
  return { updated_count: updated.length, insight_ids: updated };
}
