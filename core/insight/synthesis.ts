import { serviceLog } from "../log";
import { randomUUID } from "node:crypto";
import { takeSynthesisLock } from "./synthesis-lock";
import { AppError } from "../error";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { asWrite, commitWrites, createOnce, idFor, MAX_WRITE_ITEMS, runIdFor, tagOf, type AgentWrite, type WriteItem } from "../db/agent-write";
import { requireActiveSubscription } from "../billing";
import { requireMember } from "../workspace";
import { recordRun } from "../agent";
import { rateLimit } from "../rate-limit";
import * as Research from "../research";
import { getObject } from "../storage";
import { aiEngine, embedder, isModelEngine, model } from "../ai/select";
import { decodeInt8, decodeVector, dequantizeInt8, encodeVector, normalize } from "../ai/vectors";
import { groundQuotes } from "../ai/synthesis/quotes";
import type { InsightDraft, SynthesisOutput, SynthesisSource } from "../ai/synthesis";
import type { StoredMentions } from "../pipeline/mentions";
import { allOf, toView, type InsightItem } from "./index";
import { asChange, searchText, searchVectorFields } from "./search-index";
import type { SynthesizeInput } from "./schema";

// The engines load when a synthesis runs, not at import: the local one carries wink's 3.6 MB language model, which a
// refused request (membership, plan, unknown source) or a copilot chat never needs (issue #24 cold starts).
const LocalEngine = () => import("../ai/synthesis");
const ModelEngine = () => import("../ai/synthesis/bedrock");

/** Synthesis requests per user per minute (spec 01 Limits). */
export const SYNTHESIS_RATE_PER_MINUTE = 10;
export { SYNTHESIS_LOCK_SECONDS } from "./synthesis-lock";

async function loadSource(item: Research.SourceItem): Promise<SynthesisSource> {
  const [extraction, mentionsRaw] = await Promise.all([
    Research.readExtraction(item.workspace_id, item.id),
    item.indexed ? getObject(Research.mentionsKey(item.workspace_id, item.id)) : Promise.resolve(null),
  ]);
  if (!extraction) throw new AppError("SOURCE_NOT_READY", `Source ${item.id} has no extracted text; reprocess it`, { source_ids: [item.id] });
  const stored = mentionsRaw ? (JSON.parse(mentionsRaw.toString("utf8")) as StoredMentions) : null;
  return {
    id: item.id,
    title: item.title,
    source_type: item.source_type,
    units: extraction.units,
    extracted_text: extraction.extracted_text,
    ...(stored ? { vectors: stored.vectors.map((v) => decodeVector(v)), vectors_embedder_id: stored.embedder_id } : {}),
  };
}

type MentionCounts = NonNullable<InsightItem["mentions_by_source"]>;

/**
 * The mention counts of an insight after a run's drafts merge into it (docs/decisions.md, "Mentions per source").
 * Drafts of one run count different mentions, so their counts add up per source; a source the stored insight already
 * counts was synthesized before, and the run counts its mentions again, so the larger of the two counts stands (not
 * their sum). An insight stored without per-source counts (manual, or older) keeps its total for its known sources and
 * adds only the new sources' mentions.
 * @param stored the insight as read when the run began
 * @param run the run's mentions per source id into this insight (summed over its drafts)
 */
export function mergedMentions(stored: Pick<InsightItem, "mention_count" | "mentions_by_source" | "source_ids">, run: ReadonlyMap<string, number>): { mention_count: number; mentions_by_source?: MentionCounts } {
  if (!stored.mentions_by_source) {
    const known = new Set(stored.source_ids ?? []);
    let added = 0;
    let knownAgain = 0;
    for (const [id, n] of run) {
      if (known.has(id)) knownAgain += n;
      else added += n;
    }
    return { mention_count: Math.max(stored.mention_count, knownAgain) + added };
  }
  const counts = new Map(stored.mentions_by_source.map((m) => [m.source_id, m.count]));
  for (const [id, n] of run) counts.set(id, Math.max(counts.get(id) ?? 0, n));
  const mentions_by_source = [...counts].map(([source_id, count]) => ({ source_id, count }));
  return { mention_count: mentions_by_source.reduce((a, m) => a + m.count, 0), mentions_by_source };
}

/**
 * The frequency of an insight after a run merges sources into it: the stored frequency, or its known sources if more,
 * plus the sources the run added. The rule of `mergedMentions` for an insight without per-source counts: a manual
 * insight's frequency (a member's count, e.g. 8 with one source named) may exceed its source ids, and a merge must
 * never lower it to the number of source ids; a source it already names is not counted again.
 * @param stored the insight as read when the run began
 * @param sourceIds its source ids after the run's merges (stored ones included)
 */
export function mergedFrequency(stored: Pick<InsightItem, "frequency" | "source_ids">, sourceIds: readonly string[]): number {
  const known = new Set(stored.source_ids ?? []);
  const added = new Set(sourceIds.filter((id) => !known.has(id))).size;
  return Math.max(stored.frequency, known.size) + added;
}

/** A quote's identity when merging: the same words from another source are another piece of evidence, kept. */
const quoteKey = (q: { source_id: string; text: string }) => JSON.stringify([q.source_id, q.text]);

/**
 * Merge a draft into an existing insight: union of sources and quotes (at most 12, one per source and text, as
 * `groundQuotes` keeps them), frequency `mergedFrequency`; the mention counts are `mergedMentions` of the run's
 * drafts into it so far.
 */
function mergedFields(stored: InsightItem, current: InsightItem, draft: InsightDraft, run: Map<string, number>) {
  const sourceIds = [...new Set([...(current.source_ids ?? []), ...draft.source_ids])];
  const seen = new Set((current.quotes ?? []).map(quoteKey));
  const quotes = [...(current.quotes ?? [])];
  for (const q of draft.quotes) {
    if (!seen.has(quoteKey(q)) && quotes.length < 12) {
      quotes.push({ text: q.text, source_id: q.source_id, ...(q.speaker ? { speaker: q.speaker } : {}) });
      seen.add(quoteKey(q));
    }
  }
  for (const [id, n] of Object.entries(draft.mentions_by_source)) run.set(id, (run.get(id) ?? 0) + n);
  return { source_ids: sourceIds, quotes, frequency: mergedFrequency(stored, sourceIds), ...mergedMentions(stored, run) };
}

/** What a synthesis hands its settlement (AgentWrite.settle): the run's result as the tool reports it. */
export interface SynthesisWritten {
  /** Created then merged insights, in that order. */
  insight_ids: string[];
  created_ids: string[];
  summary: string;
}

/**
 * `POST /api/research/synthesize` (spec 01): turn completed sources into grounded insights.
 * Preconditions, in order: membership; active or trialing subscription (402); at most 10 requests a minute per user
 * (429); every source belongs to the workspace (404) and is completed (422 SOURCE_NOT_READY naming the others); no
 * other synthesis running in the workspace (409 SYNTHESIS_IN_PROGRESS; the lock expires after 5 minutes).
 * Every stored quote is re-checked verbatim against its source's extracted text. A finding that matches an existing
 * insight is merged into it; the response lists which.
 *
 * All of a run's writes (new insights and merges, one write per insight) commit in one transaction, so a synthesis is
 * stored whole or not at all. For an approved pending action (`opts`, DESIGN.md 6.2): the lock held by an earlier
 * run of the same action is taken over; new insights get ids derived from the action (`insight#<n>`); every insight
 * written (created or merged into) carries the action's id in that same write; and `opts.settle` commits in the same
 * transaction, so a replay finds nothing written or the action executed. Beyond one transaction (more than 99
 * writes, more than any engine produces) the writes go one by one, idempotent per derived id, without the settlement.
 * The writes commit inside the run and its settle follows: a synthesis is charged as a success (spec 02 Credits) only
 * once its insights are stored; one whose commit fails is charged as failed, or, for an approved action that will be
 * retried, not yet (the retry's one settle covers both attempts' model use).
 * @param opts.rateLimited false for the service's own runs (research cycles, tasks, approved actions): the per-user
 *   limit is not spent (default true: a person's request)
 * @returns the insights (created, then merged), their ids, the engine's summary, `created_ids`, `merged` and `engine`.
 * @throws AppError as listed above; SettlementRefused when the executor lost the action meanwhile (nothing written).
 */
export async function synthesize(userId: string, input: SynthesizeInput, opts: AgentWrite<SynthesisWritten> & { rateLimited?: boolean } = {}) {
  await requireMember(userId, input.workspace_id);
  await requireActiveSubscription(input.workspace_id);
  // Spec 01's limit is a person's requests (the route, the copilot's synthesis stream); the service's own runs (a
  // research cycle's chunks, a task's, an approved action's) are not the user's requests and do not spend it.
  if (opts.rateLimited !== false) await rateLimit(`user#${userId}`, SYNTHESIS_RATE_PER_MINUTE, 60);
  const ids = [...new Set(input.source_ids)];
  const items = await getAll(ids.map((id) => ({ workspace_id: input.workspace_id, id })), (keys) => db().entities.researchSource.get(keys).go({ consistent: true }));
  const missing = ids.filter((id) => !items.some((s) => s.id === id));
  if (missing.length) throw new AppError("NOT_FOUND", `Sources not found in this workspace: ${missing.join(", ")}`, { source_ids: missing });
  const notReady = items.filter((s) => s.processing_status !== "completed");
  if (notReady.length) {
    throw new AppError(
      "SOURCE_NOT_READY",
      `Sources not yet processed: ${notReady.map((s) => `${s.title} (${s.processing_status})`).join(", ")}`,
      { source_ids: notReady.map((s) => s.id) },
    );
  }
  const lock = await takeSynthesisLock(input.workspace_id, opts.pendingActionId);
  try {
    const sources = await Promise.all(items.map(loadSource));
    // Archived insights are no merge targets: a member archived the theme, and GET /api/insights hides it by default,
    // so evidence merged into it would be invisible; a recurring theme becomes a new active insight instead.
    const existingItems = (await allOf(input.workspace_id)).filter((i) => !i.is_archived);
    const engine = aiEngine();
    const emb = await embedder();
    const existing = existingItems.map((i) => ({
      id: i.id,
      title: i.title,
      description: i.description,
      ...(i.vector && i.embedder_id === emb.id
        ? { vector: decodeVector(i.vector) }
        : i.search_vector && i.search_embedder_id === emb.id && i.search_scale
          ? // Its search vector embeds the same "title. description" (searchText): no need to embed it again.
            { textVector: normalize(dequantizeInt8({ codes: decodeInt8(i.search_vector), scale: i.search_scale })) }
          : {}),
    }));
    /**
     * Store a run's drafts: new insights and merges in one transaction with the action's settlement (when given).
     * Called inside the run, before its settle: the run is charged as a success only once its insights are stored,
     * and an approved action's attempt whose commit fails keeps its hold and its use for the retry (core/billing
     * `Charge.keepsHoldAfter`), so the run's one settle covers every attempt's model use.
     */
    const store = async (output: SynthesisOutput) => {
      const texts = new Map(sources.map((s) => [s.id, { extracted_text: s.extracted_text }]));
      const stored = new Map(existingItems.map((i) => [i.id, i]));
      const byId = new Map(stored);
      const tag = tagOf(opts);
      const creates: Parameters<ReturnType<typeof db>["entities"]["insight"]["create"]>[0][] = [];
      const merged: { insight_id: string; title: string }[] = [];
      const mergedFieldsOf = new Map<string, ReturnType<typeof mergedFields>>();
      const runMentions = new Map<string, Map<string, number>>(); // per merged insight: its run's mentions per source
      for (const draft of output.insights) {
        // Belt and braces: the engines ground their quotes; storage checks again.
        const quotes = groundQuotes(draft.quotes, texts);
        const target = draft.merge_into ? byId.get(draft.merge_into) : undefined;
        if (target) {
          const run = runMentions.get(target.id) ?? new Map<string, number>();
          runMentions.set(target.id, run);
          const fields = mergedFields(stored.get(target.id)!, target, { ...draft, quotes }, run);
          // Two drafts may match the same insight: the next one merges into this result (not the stale item, which
          // would drop this merge), and the insight is written once, with every merge (a transaction writes an item
          // at most once).
          byId.set(target.id, { ...target, ...fields });
          mergedFieldsOf.set(target.id, fields);
          if (!merged.some((m) => m.insight_id === target.id)) merged.push({ insight_id: target.id, title: target.title });
          continue;
        }
        creates.push({
          id: opts.pendingActionId ? idFor(opts.pendingActionId, `insight#${creates.length}`) : randomUUID(),
          workspace_id: input.workspace_id,
          insight_type: draft.insight_type,
          title: draft.title,
          description: draft.description,
          source_ids: draft.source_ids,
          quotes: quotes.map((q) => ({ text: q.text, source_id: q.source_id, ...(q.speaker ? { speaker: q.speaker } : {}) })),
          frequency: draft.frequency,
          mention_count: draft.mention_count,
          mentions_by_source: Object.entries(draft.mentions_by_source).map(([source_id, count]) => ({ source_id, count })),
          severity: draft.severity,
          origin: "synthesis",
          vector: encodeVector(draft.vector),
          embedder_id: draft.embedder_id,
          created_by: userId,
          ...tag,
        });
      }
      const createdIds = creates.map((c) => c.id);
      const insightIds = [...createdIds, ...merged.map((m) => m.insight_id)];
      // Search vectors of the new insights, written with them (issue #24: nothing is embedded on a search but the query).
      const vectorFields = await searchVectorFields(creates.map(searchText), async () => emb);
      creates.forEach((c, k) => Object.assign(c, vectorFields[k]));
      const merges = [...mergedFieldsOf].map(([id, fields]) => ({ key: { workspace_id: input.workspace_id, id }, set: { ...fields, ...tag } }));
      const settlement = opts.settle?.({ insight_ids: insightIds, created_ids: createdIds, summary: output.summary });
      // The lock is checked by the commit (below): no extension of it may run beside that transaction.
      await lock.stopExtending();
      // One change of the search snapshot for the whole run (core/insight/search-index.ts), applied after the writes.
      await asChange(
        input.workspace_id,
        insightIds,
        async () => {
          // One item more than the run's writes: the check that this run still holds the workspace's lock.
          if (creates.length + merges.length + 1 + (settlement ? 1 : 0) <= MAX_WRITE_ITEMS) {
            const writes: WriteItem[] = [
              ...creates.map((c) => asWrite(db().entities.insight.create(c))),
              ...merges.map((m) => asWrite(db().entities.insight.patch(m.key).set(m.set))),
              lock.heldCheck(),
            ];
            const codes = await commitWrites(["insight", "guard"], writes, settlement);
            // The lock lost to another synthesis (this one outlived it): nothing of the run was written.
            if (codes?.at(-1) === "ConditionalCheckFailed") await lock.assertHeld();
            if (codes) {
              // A refused merge: the insight it merges into was deleted meanwhile (nothing of the run was written).
              throw new AppError("CONFLICT", "Insights of this workspace changed while the synthesis ran; run it again", { retryable: true });
            }
          } else {
            // Writes one by one cannot be conditioned on the lock together: it is checked once, just before them.
            await lock.assertHeld();
            for (const c of creates) {
              await createOnce<unknown>(
                opts,
                () => db().entities.insight.create(c).go(),
                async () => (await db().entities.insight.get({ workspace_id: input.workspace_id, id: c.id }).go({ consistent: true })).data,
              );
            }
            for (const m of merges) await db().entities.insight.patch(m.key).set(m.set).go();
          }
        },
        async () => emb,
      );
      // What was written, as items: the answer's fallback when reading them back fails (below).
      const at = new Date().toISOString();
      const written = [
        ...creates.map((c) => ({ is_archived: false, origin: "synthesis", ...c, created_at: at, updated_at: at }) as InsightItem),
        ...merged.map((m) => ({ ...byId.get(m.insight_id)!, updated_at: at }) as InsightItem),
      ];
      return { insightIds, createdIds, merged, written };
    };
    const { output, insightIds, createdIds, merged, written } = await recordRun(
      { workspaceId: input.workspace_id, userId, runId: runIdFor(opts), agentType: "synthesis", toolName: "synthesize", engine, input: { source_ids: ids, synthesis_type: input.synthesis_type } },
      async (usage) => {
        let output: SynthesisOutput;
        if (isModelEngine(engine)) {
          const result = await (await ModelEngine()).synthesizeWithModel({ sources, model: (await model())!, embedder: emb, existing });
          // Kept before the run goes on: an approved action's attempt that dies from here on is still charged it.
          if (result.usage) await usage.add(result.usage);
          output = result;
        } else {
          output = await (await LocalEngine()).synthesize({ sources, embedder: emb, existing });
        }
        usage.beforeWrite();
        return { output, ...(await store(output)) };
      },
      (r) => ({ insights: r.output.insights.map((i) => i.title), stats: r.output.stats }),
    );
    let fresh: InsightItem[];
    try {
      fresh = await getAll(insightIds.map((id) => ({ workspace_id: input.workspace_id, id })), (keys) => db().entities.insight.get(keys).go({ consistent: true }));
    } catch (err) {
      // The run is stored and charged: a 5xx now would invite a retry that synthesizes (and charges) again. The answer
      // is built from the values written instead (timestamps to the millisecond of the write; a concurrent edit of a
      // merged insight is not shown).
      serviceLog("synthesis").warn("reading the stored insights back failed; answering with the values written", { workspace_id: input.workspace_id, error: err as Error });
      fresh = written;
    }
    const order = new Map(insightIds.map((id, i) => [id, i]));
    const insights = fresh.sort((a, b) => order.get(a.id)! - order.get(b.id)!).map(toView);
    return { insights, insight_ids: insightIds, summary: output.summary, created_ids: createdIds, merged, engine };
  } finally {
    await lock.release();
  }
}
