/**
 * Memory (spec 01 Memory; DESIGN.md 6.6; issue #22 point 1): facts a user stated in copilot conversations, learned
 * off the response path (core/memory/learn.ts), kept per user and workspace, searchable and summarised as a profile.
 * A user sees and deletes only their own facts; superseded facts stay as history, visible only through `list`.
 */
import { createWriteTransaction } from "electrodb";
import { AppError, Errors } from "../error";
import { db } from "../db/service";
import { embedder } from "../ai/select";
import { embedQuery } from "../ai/query-cache";
import type { Embedder } from "../ai/ports";
import { rowDot } from "../ai/vectors";
import { requireMember, requireResourceMember } from "../workspace";
import { allFacts, EmbedderUnavailable, forgetCached, isCurrent, loadMemory, type FactItem } from "./store";
import { memoryAvailable } from "./settings";
import type {
  ForgetAllQuery,
  ForgetAllResult,
  ListMemoryQuery,
  MemoryFact,
  MemoryItem,
  MemoryList,
  MemoryProfile,
  MemorySearchResult,
  ProfileQuery,
  SearchMemoryQuery,
} from "./schema";

export * from "./schema";
export { memoryAvailable } from "./settings";
export { enqueueExchange, learnFromExchange, learnFromStatement, type ExchangeJob, type LearnResult, type Statement } from "./learn";

/** Lowest cosine relevance a fact needs to be a search hit (measured with the local USE embedder: a query about the fact scores 0.5 to 0.7, unrelated ones mostly below 0.35). */
export const MIN_RELEVANCE = 0.35;
/** Static facts in a profile at most (the newest). */
export const PROFILE_STATIC_MAX = 100;
/** Dynamic facts in a profile at most (the newest), and how old one may be: dated context goes stale. */
export const PROFILE_DYNAMIC_MAX = 30;
export const PROFILE_DYNAMIC_DAYS = 30;

/** A fact in full (our own listing). */
export const toFactView = (f: FactItem): MemoryFact => ({
  id: f.id,
  workspace_id: f.workspace_id,
  content: f.content,
  kind: f.kind,
  subject: f.subject,
  source: { type: "conversation", conversation_id: f.source_conversation_id, message_id: f.source_message_id },
  status: isCurrent(f) ? "current" : "superseded",
  valid_at: f.valid_at,
  invalid_at: f.invalid_at ?? null,
  superseded_by: f.superseded_by ?? null,
  contradicts: [...(f.contradicts ?? [])].sort(),
  created_at: f.created_at,
});

/** A fact as a memory item (spec 01 Memory: content, metadata {source, timestamp}, score). */
export const toMemoryItem = (f: FactItem, score: number): MemoryItem => ({
  content: f.content,
  metadata: {
    source: { type: "conversation", conversation_id: f.source_conversation_id, message_id: f.source_message_id },
    timestamp: f.valid_at,
    memory_id: f.id,
    workspace_id: f.workspace_id,
    kind: f.kind,
    contradicts: [...(f.contradicts ?? [])].sort(),
  },
  score: Math.round(Math.max(0, Math.min(1, score)) * 1000) / 1000,
});

/**
 * The workspaces a memory read covers: the one named (the caller must be a member: 403 otherwise), or without one
 * every workspace the caller is a member of now (memory kept in a workspace they left stays there, unseen).
 */
async function scopeOf(userId: string, workspaceId: string | undefined): Promise<string[]> {
  if (workspaceId) {
    await requireMember(userId, workspaceId);
    return [workspaceId];
  }
  const { data } = await db().entities.membership.query.byUser({ user_id: userId }).go({ pages: "all" });
  return [...new Set(data.map((m) => m.workspace_id))];
}

/**
 * Rank the user's current facts in the given workspaces by cosine similarity to `query`.
 * @returns hits with a score of at least MIN_RELEVANCE, best first (ties: newest first); null when memory cannot be
 *   searched (the embedder cannot load or embed)
 * @throws whatever the table throws
 */
export async function rank(userId: string, workspaceIds: string[], query: string, emb?: Embedder): Promise<{ hits: { fact: FactItem; score: number }[] } | null> {
  let e: Embedder;
  let q: Float32Array;
  try {
    e = emb ?? (await embedder());
    // Through the container's query cache: a copilot run's memory recall reuses the embedding of its prompt.
    q = await embedQuery(e, query);
  } catch {
    return null;
  }
  const hits: { fact: FactItem; score: number }[] = [];
  for (const ws of workspaceIds) {
    let memory;
    try {
      memory = await loadMemory(ws, userId, e);
    } catch (err) {
      // Embedding stored facts failed: the memory cannot be searched now. A table failure is not hidden.
      if (err instanceof EmbedderUnavailable) return null;
      throw err;
    }
    const m = memory.matrix;
    if (!m) continue;
    for (let r = 0; r < m.rows; r++) {
      const score = rowDot(m, r, q);
      if (score >= MIN_RELEVANCE) hits.push({ fact: memory.current[r]!, score });
    }
  }
  hits.sort((a, b) => b.score - a.score || b.fact.valid_at.localeCompare(a.fact.valid_at));
  return { hits };
}

/**
 * `GET /api/memory/search` (spec 01 Memory): the caller's current facts (superseded ones never) in the workspace, or in
 * every workspace they belong to without one, ranked by semantic relevance to the query.
 * @returns {memories (at most top_k, best first), total (facts at least MIN_RELEVANCE), query}; the empty result when
 *   memory is off (MEMORY=off) or its embedder is unavailable (spec 01: empty result set when unavailable)
 * @throws AppError FORBIDDEN (403) when workspace_id names a workspace the caller is not a member of
 */
export async function search(userId: string, q: SearchMemoryQuery): Promise<MemorySearchResult> {
  const workspaces = await scopeOf(userId, q.workspace_id);
  const empty = { memories: [], total: 0, query: q.query };
  if (!memoryAvailable()) return empty;
  const ranked = await rank(userId, workspaces, q.query);
  if (!ranked) return empty;
  return { memories: ranked.hits.slice(0, q.top_k).map((h) => toMemoryItem(h.fact, h.score)), total: ranked.hits.length, query: q.query };
}

/** The profile's lists from current facts: static (the newest PROFILE_STATIC_MAX, oldest first) and recent dynamic (newest first). */
export function profileOf(current: FactItem[], now = Date.now()): { static_facts: string[]; dynamic_facts: string[] } {
  const since = new Date(now - PROFILE_DYNAMIC_DAYS * 86_400_000).toISOString();
  const byNewest = [...current].sort((a, b) => b.valid_at.localeCompare(a.valid_at) || b.created_at.localeCompare(a.created_at));
  const unique = (xs: string[]) => [...new Set(xs)];
  return {
    static_facts: unique(byNewest.filter((f) => f.kind === "static").map((f) => f.content)).slice(0, PROFILE_STATIC_MAX).reverse(),
    dynamic_facts: unique(byNewest.filter((f) => f.kind === "dynamic" && f.valid_at >= since).map((f) => f.content)).slice(0, PROFILE_DYNAMIC_MAX),
  };
}

/**
 * `GET /api/memory/profile` (spec 01 Memory): the caller's current facts as a profile. The spec names no parameter:
 * without workspace_id it covers every workspace the caller is a member of, with one only that workspace.
 * @returns {static_facts, dynamic_facts (the last PROFILE_DYNAMIC_DAYS days), is_available}; empty lists and false
 *   when memory is off
 * @throws AppError FORBIDDEN (403) when workspace_id names a workspace the caller is not a member of
 */
export async function profile(userId: string, q: ProfileQuery): Promise<MemoryProfile> {
  const workspaces = await scopeOf(userId, q.workspace_id);
  if (!memoryAvailable()) return { static_facts: [], dynamic_facts: [], is_available: false };
  const current = (await Promise.all(workspaces.map((ws) => loadMemory(ws, userId, null)))).flatMap((m) => m.current);
  return { ...profileOf(current), is_available: true };
}

/**
 * `GET /api/memory` (ours, docs/decisions.md "Memory"): everything remembered about the caller in a workspace, history
 * included, newest first, so a person can see what is kept about them (and delete it).
 * @throws AppError FORBIDDEN (403) for a non-member
 */
export async function list(userId: string, q: ListMemoryQuery): Promise<MemoryList> {
  await requireMember(userId, q.workspace_id);
  const facts = (await allFacts(q.workspace_id, userId))
    .filter((f) => q.status === "all" || (q.status === "current") === isCurrent(f))
    .sort((a, b) => b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id));
  return { memories: facts.slice(q.offset, q.offset + q.limit).map(toFactView), total: facts.length };
}

/** One write per fact of a deletion: the delete itself, or the removal of deleted ids from a partner's contradictions. */
async function deleteFacts(workspaceId: string, userId: string, gone: FactItem[]): Promise<void> {
  const goneIds = new Set(gone.map((f) => f.id));
  const partners = new Map<string, string[]>();
  for (const f of gone) for (const p of f.contradicts ?? []) if (!goneIds.has(p)) partners.set(p, [...(partners.get(p) ?? []), f.id]);
  // Only partners that still exist (a patch of a missing item would fail the whole transaction).
  const { data: existing } = partners.size
    ? await db().entities.memoryFact.get([...partners.keys()].map((id) => ({ workspace_id: workspaceId, user_id: userId, id }))).go({ consistent: true })
    : { data: [] as FactItem[] };
  const key = (id: string) => ({ workspace_id: workspaceId, user_id: userId, id });
  const tx = await createWriteTransaction(db().pick("memoryFact", "memoryHead"), ({ memoryFact, memoryHead }) => [
    ...gone.map((f) => memoryFact.delete(key(f.id)).commit()),
    ...existing.map((p) => memoryFact.patch(key(p.id)).delete({ contradicts: partners.get(p.id)! }).commit()),
    memoryHead.update({ workspace_id: workspaceId, user_id: userId }).add({ version: 1 }).commit(),
  ]).go();
  if (tx.canceled) throw new AppError("CONFLICT", "Your memory changed while it was being deleted; try again");
  forgetCached(workspaceId, userId);
}

/**
 * `DELETE /api/memory/{memory_id}` (ours): delete one of the caller's facts, current or history. The facts it
 * disagreed with lose the flag; a fact it had superseded stays superseded (it was said to have changed).
 * @throws AppError NOT_FOUND (404) for an unknown id, another user's fact or a workspace the caller is not in;
 *   CONFLICT (409) when the fact changed meanwhile
 */
export async function forget(userId: string, memoryId: string): Promise<void> {
  const { data } = await db().entities.memoryFact.query.byId({ id: memoryId }).go({ limit: 1 });
  const found = data[0];
  if (!found || found.user_id !== userId) throw Errors.notFound("Memory");
  await requireResourceMember(userId, found.workspace_id, "Memory");
  const { data: fact } = await db().entities.memoryFact.get({ workspace_id: found.workspace_id, user_id: userId, id: memoryId }).go({ consistent: true });
  if (!fact) throw Errors.notFound("Memory");
  await deleteFacts(found.workspace_id, userId, [fact]);
}

/** Facts deleted per transaction in a wholesale deletion (DynamoDB takes 100 writes; one is the head). */
const DELETE_CHUNK = 99;

/**
 * `DELETE /api/memory?workspace_id=` (ours): delete everything remembered about the caller in a workspace, history
 * included, and what they said up to now that is still waiting to be learned. First the head's watermark
 * (`forgotten_at`, now) with a version bump: from then on the learner learns no statement made at or before it
 * (core/memory/learn.ts), and a learner that read the memory before is refused by the bump and, retried, sees the
 * watermark. Then each chunk of facts goes in one transaction with the head's version bump, so no cache serves a
 * deleted fact.
 * @throws AppError FORBIDDEN (403) for a non-member
 */
export async function forgetAll(userId: string, q: ForgetAllQuery): Promise<ForgetAllResult> {
  await requireMember(userId, q.workspace_id);
  // Before the facts are read, not with their deletion: no fact of an older statement can then be written between
  // the read and the delete (an exchange owed to memory, a queue retry or the sweeper's re-send is learned later).
  await db()
    .entities.memoryHead.update({ workspace_id: q.workspace_id, user_id: userId })
    .set({ forgotten_at: new Date().toISOString() })
    .add({ version: 1 })
    .go();
  forgetCached(q.workspace_id, userId);
  const facts = await allFacts(q.workspace_id, userId);
  for (let i = 0; i < facts.length; i += DELETE_CHUNK) {
    const chunk = facts.slice(i, i + DELETE_CHUNK);
    const ids = new Set(chunk.map((f) => f.id));
    // Partners in later chunks are deleted too: only those outside the whole set get their flag removed.
    const all = new Set(facts.map((f) => f.id));
    await deleteFacts(q.workspace_id, userId, chunk.map((f) => ({ ...f, contradicts: (f.contradicts ?? []).filter((p) => ids.has(p) || !all.has(p)) })));
  }
  return { workspace_id: q.workspace_id, deleted: facts.length };
}

/** Current facts shown in a run's system prompt at most; above it, the most relevant to the prompt. */
export const PROMPT_FACTS = 20;
/** Longest fact line in the system prompt, in characters. */
const PROMPT_LINE_CHARS = 200;

/**
 * The user's memory as lines for a copilot run's system prompt (kept short: at most PROMPT_FACTS facts, the most
 * relevant to the prompt when there are more), or "" when they have none in the workspace or memory is off.
 * Disputed facts are marked so the model asks which holds.
 */
export async function promptProfile(userId: string, workspaceId: string, prompt: string): Promise<string> {
  if (!memoryAvailable()) return "";
  const memory = await loadMemory(workspaceId, userId, null);
  if (memory.current.length === 0) return "";
  let chosen = memory.current;
  if (chosen.length > PROMPT_FACTS) {
    // More than fit: the most relevant to the prompt, else (no embedder) the newest.
    const ranked = await rank(userId, [workspaceId], prompt);
    const relevant = ranked ? ranked.hits.slice(0, PROMPT_FACTS).map((h) => h.fact) : [];
    chosen = relevant.length ? relevant : [...memory.current].sort((a, b) => b.valid_at.localeCompare(a.valid_at)).slice(0, PROMPT_FACTS);
  }
  const line = (f: FactItem) => {
    const text = f.content.length > PROMPT_LINE_CHARS ? `${f.content.slice(0, PROMPT_LINE_CHARS - 1)}…` : f.content;
    const disputed = f.contradicts?.length ? " (disputed: another statement of theirs disagrees; ask which holds)" : "";
    return `- ${text}${f.kind === "dynamic" ? ` (as of ${f.valid_at.slice(0, 10)})` : ""}${disputed}`;
  };
  const ordered = [...chosen].sort((a, b) => a.valid_at.localeCompare(b.valid_at));
  return [
    "What this user told you in earlier conversations (their memory; facts they stated, oldest first). Use them where they help; do not recite them unasked:",
    ...ordered.map(line),
  ].join("\n");
}
