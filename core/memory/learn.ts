/**
 * Learning from an exchange (DESIGN.md 6.6; issue #22 point 1): after a copilot run answers, the exchange is put on
 * the memory queue (the run's `after` hook, core/memory/hook.ts), so no one waits for it; the memory consumer
 * (functions/events/memory-consumer.ts) reads the user's message, extracts facts (a model engine's structured call, or
 * the local rules), embeds them and reconciles each against the user's nearest current facts (core/memory/reconcile.ts),
 * writing the outcome in one transaction per fact together with the user's memory head version.
 */
import { createWriteTransaction } from "electrodb";
import { v5 as uuidv5 } from "uuid";
import { db } from "../db/service";
import { embedder as defaultEmbedder, isModelEngine, model as defaultModel } from "../ai/select";
import type { Embedder, Model } from "../ai/ports";
import { encodeVector, topK } from "../ai/vectors";
import { queue } from "../queue";
import { serviceLog } from "../log";
import { extractByRules } from "./rules";
import { extractWithModel } from "./model-extract";
import { inTimeOrder, reconcile, type Decision } from "./reconcile";
import { applyWrite, forgetCached, knownFacts, loadMemory, type FactItem, type LoadedMemory } from "./store";
import { memoryAvailable } from "./settings";
import type { ExtractedFact } from "./types";

const log = () => serviceLog("memory");

/** One exchange to learn from: the message the queue carries (ids and the answer's time; the texts are read from the table). */
export interface ExchangeJob {
  type: "exchange";
  workspace_id: string;
  user_id: string;
  conversation_id: string;
  /** The assistant message that answered; the user message before it is what the facts are read from. */
  assistant_message_id: string;
  /**
   * The assistant message's created_at (ISO 8601), which spares the consumer looking the message up by id. Jobs
   * queued before it existed have none and are looked up as before.
   */
  answered_at?: string;
  /**
   * The answer was stored with a record that this exchange is owed (core/memory/owed.ts): the consumer learns it
   * only while the record is there, and deletes it. Jobs without it (older code) are learned as before.
   */
  owed?: true;
}

/** A user statement to learn from. */
export interface Statement {
  workspaceId: string;
  userId: string;
  conversationId: string;
  /** The user message that states it (the facts' source). */
  messageId: string;
  text: string;
  /** When it was stated (ISO 8601): the facts' valid_at. */
  at: string;
}

/** What became of each fact of a statement. */
export interface LearnResult {
  extractor: "rules" | "model" | null;
  facts: { content: string; subject: string; kind: "static" | "dynamic"; action: Decision["action"]; id: string; supersedes: string[]; contradicts: string[] }[];
}

/** Namespace of fact ids derived from their message (a fixed random UUID): a redelivered exchange writes the same ids. */
const FACT_NAMESPACE = "3c1f9a6e-7d2b-4e85-9b0a-51c4d2e8f7a3";

/**
 * Put an exchange on the memory queue (FIFO per user and workspace, so one user's facts are reconciled one exchange
 * at a time; deduplicated by the assistant message).
 * @throws AppError SERVICE_UNAVAILABLE when the queue is not configured (MEMORY_QUEUE_URL)
 */
export async function enqueueExchange(job: ExchangeJob): Promise<void> {
  const q = await queue("memory");
  await q.send({ body: JSON.stringify(job), groupId: `${job.workspace_id}:${job.user_id}`, deduplicationId: job.assistant_message_id });
}

/**
 * The user message an exchange answered: the newest user message of the conversation before the assistant message.
 * @returns null when the messages are gone (the conversation was deleted meanwhile: nothing is learned from it) or
 *   do not belong to the job's user, workspace and conversation
 */
export async function statementOf(job: ExchangeJob): Promise<Statement | null> {
  let answeredAt = job.answered_at;
  if (answeredAt === undefined) {
    const { data: found } = await db().entities.message.query.byId({ id: job.assistant_message_id }).go({ limit: 1 });
    const answer = found[0];
    if (!answer || answer.workspace_id !== job.workspace_id || answer.conversation_id !== job.conversation_id || answer.user_id !== job.user_id) return null;
    answeredAt = answer.created_at;
  }
  const { data: before } = await db()
    .entities.message.query.byConversation({ workspace_id: job.workspace_id, conversation_id: job.conversation_id })
    .lt({ created_at: answeredAt })
    .go({ order: "desc", count: 4, pages: 5, consistent: true });
  // The key holds the workspace and the conversation; a conversation's messages are all its owner's.
  const asked = before.find((m) => m.conversation_id === job.conversation_id && m.role === "user" && m.created_at < answeredAt && m.user_id === job.user_id);
  if (!asked) return null;
  return { workspaceId: job.workspace_id, userId: job.user_id, conversationId: job.conversation_id, messageId: asked.id, text: asked.content, at: asked.created_at };
}

/**
 * Learn from one exchange (the memory consumer's work). Safe to run again for the same exchange: fact ids derive from
 * the message, and a fact already stored is found as the same fact.
 * @throws whatever the table, the embedder or the model throws (the queue retries the exchange)
 */
export async function learnFromExchange(job: ExchangeJob): Promise<LearnResult> {
  if (!memoryAvailable()) return { extractor: null, facts: [] };
  const statement = await statementOf(job);
  if (!statement) return { extractor: null, facts: [] };
  return learnFromStatement(statement);
}

/** Where extraction and embedding come from; the engine's own by default (tests and benchmarks pass theirs). */
export interface LearnOptions {
  embedder?: Embedder;
  /** The model to extract with; null for the local rules. Default: the engine's model on a model engine, else rules. */
  model?: Model | null;
  signal?: AbortSignal;
}

/**
 * Extract the facts of a statement and reconcile each against the user's current facts in the workspace, in order
 * (a later fact of the statement sees the earlier ones). Each outcome is one transaction: the new fact, the facts it
 * supersedes (invalid_at = the statement's time, superseded_by) or contradicts (flagged on both sides), the removal of
 * superseded facts from their partners' contradictions, and the user's memory head version. A statement made at or
 * before the user's last deletion of all their memory in the workspace (`forgotten_at` on their head) is not learned.
 * @returns each fact's outcome ([] when the statement holds none, or was made before the memory was deleted)
 * @throws a cancelled transaction (a fact deleted meanwhile) as an Error: the exchange is retried on fresh reads
 */
export async function learnFromStatement(statement: Statement, opts: LearnOptions = {}): Promise<LearnResult> {
  const extractor = opts.model !== undefined ? opts.model : isModelEngine() ? await defaultModel() : null;
  // The rules extract without the memory: a statement that holds no fact (most questions) reads nothing.
  const byRules = extractor ? null : extractByRules(statement.text);
  if (byRules?.length === 0) return { extractor: "rules", facts: [] };
  const emb = opts.embedder ?? (await defaultEmbedder());
  let memory = await loadMemory(statement.workspaceId, statement.userId, emb);
  // Said before the user deleted all their memory here (an exchange still owed then, a retry, a re-send): not learned.
  // Checked on every run, so a run whose write the deletion's version bump refused learns nothing when retried.
  if (memory.forgottenAt && statement.at <= memory.forgottenAt) return { extractor: extractor ? "model" : "rules", facts: [] };

  let extracted: ExtractedFact[];
  if (extractor) {
    // The model sees the user's nearest facts with their subjects, so it names a known subject the same way.
    let nearest: { subject: string; content: string }[] = [];
    if (memory.matrix && memory.matrix.rows) {
      const [q] = await emb.embed([statement.text.slice(0, 2000)]);
      nearest = topK(memory.matrix, q!, 10, 0.3).map((h) => memory.current[h.index]!);
    }
    const out = await extractWithModel(extractor, { text: statement.text, known: nearest.map((k) => ({ subject: k.subject, content: k.content })), signal: opts.signal });
    log().info("memory extraction", { workspace_id: statement.workspaceId, model_id: out.usage.modelId, input_tokens: out.usage.inputTokens, output_tokens: out.usage.outputTokens, cost_usd: out.usage.costUsd });
    extracted = out.facts;
  } else {
    extracted = byRules!;
  }
  const result: LearnResult = { extractor: extractor ? "model" : "rules", facts: [] };
  if (extracted.length === 0) return result;

  const vectors = await emb.embed(extracted.map((f) => f.content));
  for (let i = 0; i < extracted.length; i++) {
    const fact = extracted[i]!;
    const id = uuidv5(`${statement.messageId}#${i}`, FACT_NAMESPACE);
    if (memory.facts.some((f) => f.id === id)) {
      // An earlier run of this exchange wrote it (its transaction committed; a later one of the run was cancelled, and
      // the exchange came again). It may be history by now (a later fact of the same message superseded it), where
      // reconciling would call it new and its create would fail every time: kept as it is.
      result.facts.push({ content: fact.content, subject: fact.subject, kind: fact.kind, action: "same", id, supersedes: [], contradicts: [] });
      continue;
    }
    const known = knownFacts(memory);
    // A statement learned late (re-sent by the outbox, or retried behind later exchanges) replaces nothing said after it.
    const { decision, history } = inTimeOrder(reconcile({ ...fact, vector: vectors[i]!, source_message_id: statement.messageId }, known), statement.at, known);
    memory = await write(memory, statement, { id, fact, vector: vectors[i]!, embedderId: emb.id, extractor: result.extractor!, history }, decision);
    result.facts.push({
      content: fact.content,
      subject: fact.subject,
      kind: fact.kind,
      action: decision.action,
      id: decision.action === "same" ? decision.existing : id,
      supersedes: decision.action === "same" || decision.action === "changed" ? decision.supersedes : [],
      contradicts: decision.action === "contradicting" ? decision.contradicts : [],
    });
  }
  return result;
}

/**
 * The writes of one decision, in one transaction with the memory head's version bump, conditioned on the version the
 * memory was loaded at: when it commits, nothing else changed the user's memory meanwhile, so the loaded memory with
 * these changes applied is exactly what is stored, and it is cached as such (a memory of 10,000 facts is not read
 * again after each exchange). A deletion meanwhile cancels it, and the exchange is retried on fresh reads.
 * @returns the memory after the writes
 */
async function write(
  memory: LoadedMemory,
  s: Statement,
  created: { id: string; fact: ExtractedFact; vector: Float32Array; embedderId: string; extractor: "rules" | "model"; history?: { by: string; at: string } },
  decision: Decision,
): Promise<LoadedMemory> {
  const supersedes = decision.action === "same" || decision.action === "changed" ? decision.supersedes : [];
  if (decision.action === "same" && supersedes.length === 0) return memory;
  const byId = new Map(memory.current.map((f) => [f.id, f]));
  const by = decision.action === "same" ? decision.existing : created.id;
  const disagree = decision.action === "contradicting" ? decision.contradicts : [];
  // Partners of superseded facts lose them from their contradictions (one write per item: a transaction may not
  // touch an item twice, so a partner that is itself superseded is left as history as it was).
  const cleanup = new Map<string, string[]>();
  for (const gone of supersedes) {
    for (const partner of byId.get(gone)?.contradicts ?? []) {
      if (supersedes.includes(partner) || !byId.has(partner)) continue;
      cleanup.set(partner, [...(cleanup.get(partner) ?? []), gone]);
    }
  }
  const now = new Date().toISOString();
  const item: FactItem | null =
    decision.action === "same"
      ? null
      : {
          id: created.id,
          workspace_id: s.workspaceId,
          user_id: s.userId,
          content: created.fact.content,
          kind: created.fact.kind,
          subject: created.fact.subject,
          value: created.fact.value,
          multi: created.fact.multi,
          source_conversation_id: s.conversationId,
          source_message_id: s.messageId,
          extractor: created.extractor,
          valid_at: s.at,
          vector: encodeVector(created.vector),
          embedder_id: created.embedderId,
          ...(disagree.length ? { contradicts: disagree } : {}),
          // Learned after a newer statement that replaces it: history from the start.
          ...(created.history ? { invalid_at: created.history.at, superseded_by: created.history.by } : {}),
          created_at: now,
          updated_at: now,
        };
  const key = (id: string) => ({ workspace_id: s.workspaceId, user_id: s.userId, id });
  const expected = memory.version;
  const tx = await createWriteTransaction(db().pick("memoryFact", "memoryHead"), ({ memoryFact, memoryHead }) => [
    ...(item ? [memoryFact.create(item).commit()] : []),
    ...supersedes.map((id) =>
      memoryFact
        .patch(key(id))
        .set({ invalid_at: s.at, superseded_by: by })
        .where((a, op) => op.notExists(a.invalid_at))
        .commit(),
    ),
    ...disagree.map((id) => memoryFact.patch(key(id)).add({ contradicts: [created.id] }).commit()),
    ...[...cleanup].map(([partner, gone]) => memoryFact.patch(key(partner)).delete({ contradicts: gone }).commit()),
    memoryHead
      .update({ workspace_id: s.workspaceId, user_id: s.userId })
      .add({ version: 1 })
      .where((a, op) => (expected === 0 ? op.notExists(a.version) : op.eq(a.version, expected)))
      .commit(),
  ]).go();
  if (tx.canceled) {
    forgetCached(s.workspaceId, s.userId);
    throw new Error(`memory write for message ${s.messageId} was cancelled (the memory changed meanwhile); the exchange is retried`);
  }
  const updated: FactItem[] = [
    ...supersedes.flatMap((id) => (byId.has(id) ? [{ ...byId.get(id)!, invalid_at: s.at, superseded_by: by, updated_at: now }] : [])),
    ...disagree.flatMap((id) => (byId.has(id) ? [{ ...byId.get(id)!, contradicts: [...(byId.get(id)!.contradicts ?? []), created.id], updated_at: now }] : [])),
    ...[...cleanup].map(([partner, gone]) => ({ ...byId.get(partner)!, contradicts: (byId.get(partner)!.contradicts ?? []).filter((c) => !gone.includes(c)), updated_at: now })),
  ];
  return applyWrite(memory, { added: item ? { item, vector: created.vector } : undefined, updated, version: expected + 1 });
}
