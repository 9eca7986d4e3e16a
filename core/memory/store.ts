/**
 * Reading a user's memory in a workspace, with a per-container cache (like insight search, core/insight/search.ts):
 * the facts and the matrix of the current ones' vectors are kept while the user's memory head version (bumped in the
 * same transaction as every write to their facts) is unchanged, so a warm search or profile costs one small
 * consistent read plus the query's embedding.
 */
import type { EntityItem } from "electrodb";
import { db } from "../db/service";
import type { Embedder } from "../ai/ports";
import { decodeVector, encodeVector, toMatrix, type Matrix } from "../ai/vectors";
import type { MemoryFactEntity } from "./fact.entity";
import type { Prefetch } from "../db/read";
import { requestScope } from "../context";
import { isConditionalFailure } from "../db/errors";
import { serviceLog } from "../log";
import pLimit from "p-limit";

export type FactItem = EntityItem<MemoryFactEntity>;

/** A user's memory in one workspace as loaded. */
export interface LoadedMemory {
  workspaceId: string;
  userId: string;
  /** The head version it was loaded at (0: the user has no memory head in the workspace). */
  version: number;
  /**
   * When the user last deleted all their memory in the workspace (ISO 8601; null: never): statements made at or before
   * it are not learned (`forgetAll`, core/memory/index.ts). Read with `version`, which every forget bumps.
   */
  forgottenAt: string | null;
  /** Every fact, history included, oldest first. */
  facts: FactItem[];
  /** The current facts (not superseded), oldest first. */
  current: FactItem[];
  /**
   * Row i is the vector of `current[i]`, from `embedderId`; null when loaded without an embedder. Its buffer may hold
   * room for more rows than `rows` (appends by the learner): only the first `rows` rows are read.
   */
  matrix: Matrix | null;
  embedderId: string | null;
}

/** The embedder failed while a memory was loaded with it (search answers its empty "unavailable" result then). */
export class EmbedderUnavailable extends Error {
  override readonly name = "EmbedderUnavailable";
  constructor(readonly reason: unknown) {
    super(`The embedder is unavailable: ${reason instanceof Error ? reason.message : String(reason)}`);
  }
}

/**
 * Vector patches in flight at once while a load stores re-embedded vectors (after an embedder change every fact of the
 * user is patched: thousands of UpdateItems at once would be throttled by the table and slow every other request).
 */
export const REEMBED_PATCH_CONCURRENCY = 8;

/** Cached memories, at most this many (users × workspaces) per container; the oldest goes first. */
const MAX_CACHED = 50;
const cache = new Map<string, LoadedMemory>();
const keyOf = (workspaceId: string, userId: string) => `${workspaceId}#${userId}`;

/**
 * How long a memory head version this request read ahead (`prefetchMemoryHead`) stays good for its memory reads: the
 * copilot's stream reads it beside its membership check, moments before its memory hook loads the memory. What the
 * stream learns is written after its answer by the memory job (./hook.ts), an invocation of its own (the embedded
 * runtime's queue runs it outside the request scope too, core/context.ts `outsideRequestScope`); a memory write made
 * within a request drops the kept version (`applyWrite`, `forgetCached`).
 */
export const MEMORY_HEAD_REUSE_MS = 5_000;
const headScopeKey = (workspaceId: string, userId: string) => `memory-head#${workspaceId}#${userId}`;

/**
 * The user's memory head in the workspace, read ahead by a request's membership check (core/workspace
 * `requireMemberWithWorkspace`, in its round trip) and kept for MEMORY_HEAD_REUSE_MS for the request's memory reads.
 */
export function prefetchMemoryHead(workspaceId: string, userId: string): Prefetch {
  const readAt = Date.now(); // the window counts from the read, not from when the membership check passed
  return {
    ref: { entity: db().entities.memoryHead, key: { workspace_id: workspaceId, user_id: userId } },
    keep: (item) => requestScope()?.recent.set(headScopeKey(workspaceId, userId), { at: readAt, value: headOf(item as HeadRead | null) }),
  };
}

type HeadRead = { version?: number; forgotten_at?: string } | null;
/** What a memory read needs of the head (heads written before `forgotten_at` existed read as never forgotten). */
interface Head {
  version: number;
  forgottenAt: string | null;
}
const headOf = (item: HeadRead): Head => ({ version: item?.version ?? 0, forgottenAt: item?.forgotten_at ?? null });

/** The user's memory head in the workspace (strongly consistent, or as this request read it ahead: `headVersion`). */
async function readHead(workspaceId: string, userId: string): Promise<Head> {
  const kept = requestScope()?.recent.get(headScopeKey(workspaceId, userId));
  if (kept && Date.now() - kept.at <= MEMORY_HEAD_REUSE_MS) return kept.value as Head;
  const { data } = await db().entities.memoryHead.get({ workspace_id: workspaceId, user_id: userId }).go({ consistent: true });
  return headOf(data);
}

/**
 * The user's memory head version in the workspace (strongly consistent); 0 when they have none. From the request
 * scope when this request read it less than MEMORY_HEAD_REUSE_MS ago (`prefetchMemoryHead`), else one GetItem.
 */
export async function headVersion(workspaceId: string, userId: string): Promise<number> {
  return (await readHead(workspaceId, userId)).version;
}

/** Every fact of the user in the workspace, history included, oldest first (strongly consistent). */
export async function allFacts(workspaceId: string, userId: string): Promise<FactItem[]> {
  const { data } = await db().entities.memoryFact.query.byUser({ workspace_id: workspaceId, user_id: userId }).go({ pages: "all", consistent: true });
  return data.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/** A fact is current until a later one supersedes it. */
export const isCurrent = (f: FactItem): boolean => !f.invalid_at;

/**
 * The user's memory in a workspace, from the cache when its head version is unchanged. With an embedder, facts
 * whose vector is missing or from another embedder are embedded and their vectors stored (not a memory change: no
 * version bump; at most REEMBED_PATCH_CONCURRENCY patches at once), and `matrix` holds the current facts' vectors. A
 * fact deleted while its vector was being stored is left out (its patch finds no item). A patch that fails otherwise
 * (throttled, the store not answering) is logged and left for a later load: this load has the vector in memory.
 * @throws EmbedderUnavailable when embedding missing vectors fails; whatever the table throws reading the facts
 */
export async function loadMemory(workspaceId: string, userId: string, emb: Embedder | null): Promise<LoadedMemory> {
  const key = keyOf(workspaceId, userId);
  const { version, forgottenAt } = await readHead(workspaceId, userId);
  const cached = cache.get(key);
  if (cached && cached.version === version && (!emb || cached.embedderId === emb.id)) return cached;
  let facts = version === 0 ? [] : await allFacts(workspaceId, userId);
  let current = facts.filter(isCurrent);
  let matrix: Matrix | null = null;
  if (emb) {
    const missing = current.filter((f) => !f.vector || f.embedder_id !== emb.id);
    if (missing.length) {
      let vectors: Float32Array[];
      try {
        vectors = await emb.embed(missing.map((f) => f.content));
      } catch (err) {
        throw new EmbedderUnavailable(err);
      }
      const gone = new Set<string>();
      const unsaved: unknown[] = [];
      await pLimit(REEMBED_PATCH_CONCURRENCY).map(missing, async (f, i) => {
        f.vector = encodeVector(vectors[i]!);
        f.embedder_id = emb.id;
        try {
          await db().entities.memoryFact.patch({ workspace_id: workspaceId, user_id: userId, id: f.id }).set({ vector: f.vector, embedder_id: emb.id }).go();
        } catch (err) {
          // A patch needs the item: refused, the fact was deleted since it was read (its deletion bumped the head,
          // so this load is not served again from the cache). Not an error of the read: the fact is just gone.
          if (isConditionalFailure(err)) gone.add(f.id);
          // Any other failure only loses the stored copy: this load has the vector, and a later load that finds it
          // missing or stale embeds and patches it again. Failing the read would fail search and the copilot's run.
          else unsaved.push(err);
        }
      });
      if (unsaved.length) {
        const first = unsaved[0];
        serviceLog("memory").warn("memory vectors not stored; a later load stores them", {
          workspace_id: workspaceId,
          failed: unsaved.length,
          of: missing.length,
          error: first instanceof Error ? `${first.name}: ${first.message}` : String(first),
        });
      }
      if (gone.size) {
        facts = facts.filter((f) => !gone.has(f.id));
        current = current.filter((f) => !gone.has(f.id));
      }
    }
    matrix = toMatrix(current.map((f) => decodeVector(f.vector!, emb.dimensions)), emb.dimensions);
  }
  const loaded: LoadedMemory = { workspaceId, userId, version, forgottenAt, facts, current, matrix, embedderId: emb?.id ?? null };
  // A version this request kept may be older than the cached one (another request loaded since): the facts are as
  // they are now, but labelled older, so they do not replace a newer entry of the same embedder.
  const held = cache.get(key);
  if (held && held.version > version && held.embedderId === loaded.embedderId) return loaded;
  cache.delete(key);
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(key, loaded);
  return loaded;
}

/**
 * Drop a cached memory and the head version this request kept (after this container wrote to it: its next read
 * neither waits for the version check nor trusts a version read before the write).
 */
export function forgetCached(workspaceId: string, userId: string): void {
  cache.delete(keyOf(workspaceId, userId));
  requestScope()?.recent.delete(headScopeKey(workspaceId, userId));
}

/** The current facts of a loaded memory with their vectors, for reconciliation. */
export function knownFacts(memory: LoadedMemory) {
  if (!memory.matrix) throw new Error("knownFacts needs a memory loaded with an embedder");
  const { data, dims } = memory.matrix;
  return memory.current.map((f, i) => ({
    id: f.id,
    content: f.content,
    kind: f.kind,
    subject: f.subject,
    value: f.value,
    multi: f.multi,
    source_message_id: f.source_message_id,
    valid_at: f.valid_at,
    vector: data.subarray(i * dims, (i + 1) * dims),
  }));
}

/**
 * A loaded memory with one committed write applied (the learner's own, conditioned on the version it read), cached
 * in place of the old one (and the head version this request kept, if any, dropped): the new fact appended (its
 * vector as the matrix's last row), changed facts replaced, superseded facts out of `current` and the matrix.
 * @param change the fact added (with its vector), the facts as rewritten, and the head version after the write
 */
export function applyWrite(memory: LoadedMemory, change: { added?: { item: FactItem; vector: Float32Array }; updated: FactItem[]; version: number }): LoadedMemory {
  const replaced = new Map(change.updated.map((f) => [f.id, f]));
  const gone = new Set(change.updated.filter((f) => !isCurrent(f)).map((f) => f.id));
  const facts = memory.facts.map((f) => replaced.get(f.id) ?? f);
  if (change.added) facts.push(change.added.item);
  // A fact stored as history (learned after a newer statement replaced it) is not current: no row in the matrix.
  const added = change.added && isCurrent(change.added.item) ? change.added : undefined;
  // `current` keeps its order (oldest first): the rows that stay, then the new fact, so the matrix is copied in runs.
  const kept: number[] = [];
  for (let r = 0; r < memory.current.length; r++) if (!gone.has(memory.current[r]!.id)) kept.push(r);
  const current = kept.map((r) => replaced.get(memory.current[r]!.id) ?? memory.current[r]!);
  if (added) current.push(added.item);
  let matrix: Matrix | null = null;
  if (memory.matrix && gone.size === 0 && memory.matrix.data.length >= current.length * memory.matrix.dims) {
    // Only appended, and the buffer has room: the row goes after the others in place. Holders of the previous memory
    // read only its `rows` rows, which do not change; and no second write can append to that previous memory, since
    // its write is conditioned on the version this one moved past.
    const { dims, data } = memory.matrix;
    if (added) data.set(added.vector, (current.length - 1) * dims);
    matrix = { data, rows: current.length, dims };
  } else if (memory.matrix) {
    const { dims, data: old } = memory.matrix;
    // Room for appends (a new fact usually adds a row): a quarter more rows than needed.
    const data = new Float32Array((current.length + Math.ceil(current.length / 4) + 8) * dims);
    let dest = 0;
    for (let i = 0; i < kept.length; ) {
      let j = i;
      while (j + 1 < kept.length && kept[j + 1] === kept[j]! + 1) j++;
      data.set(old.subarray(kept[i]! * dims, (kept[j]! + 1) * dims), dest);
      dest += (j - i + 1) * dims;
      i = j + 1;
    }
    if (added) data.set(added.vector, dest);
    matrix = { data, rows: current.length, dims };
  }
  const next: LoadedMemory = { ...memory, version: change.version, facts, current, matrix };
  const key = keyOf(memory.workspaceId, memory.userId);
  // A head version this request read ahead is older than the write (the cache now holds the newer one).
  requestScope()?.recent.delete(headScopeKey(memory.workspaceId, memory.userId));
  cache.delete(key);
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(key, next);
  return next;
}
