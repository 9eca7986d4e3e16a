/**
 * A per-container cache of query embeddings (issue #24 point 1: insight search). A search embeds its query on every
 * call; a user who pages, filters or repeats a search sends the same text again. The embedding of a text by a given
 * embedder never changes (the embedder id names model and dimension, core/ai/ports.ts), so a cached vector is exact,
 * never stale: the cache bounds memory, not freshness.
 */
import { LRUCache } from "lru-cache";
import type { EmbedOptions, Embedder } from "./ports";
import { abortError } from "./retry";

/**
 * Entries kept per container, least recently used dropped first. 1,000 × 512 floats (local) is 2 MB; with Titan's
 * 1,024 dimensions 4 MB: small beside the search snapshots the same container holds.
 */
export const QUERY_CACHE_ENTRIES = 1_000;
/** Queries longer than this are embedded every time (a search query is short; a long one is unlikely to repeat). */
export const QUERY_CACHE_MAX_CHARS = 500;

/** Key → vector (least recently used dropped first). In-flight embeddings are shared, not repeated. */
const cache = new LRUCache<string, Promise<Float32Array>>({ max: QUERY_CACHE_ENTRIES });
const counts = { hits: 0, misses: 0 };

/** Forget every cached query embedding of this container (tests, and benchmarks measuring unseen queries). */
export function clearQueryCache(): void {
  cache.clear();
}

/** Hits and misses since the process started (the benchmark reports them). */
export const queryCacheCounts = (): { hits: number; misses: number } => ({ ...counts });

/** A shared embedding in flight: its own abort, and how many callers with a deadline still wait on it. */
interface InFlight {
  controller: AbortController;
  /** Callers with a deadline still waiting; Infinity once a caller without one joined (it is then never aborted). */
  waiting: number;
}

const inFlight = new Map<Promise<Float32Array>, InFlight>();

/**
 * The embedding of one query text by `emb`, from the cache when this container embedded the same text with the same
 * embedder (by id) before. A failed embedding is not kept: the next call tries again.
 * @param opts.signal the caller's deadline (EmbedOptions): the caller stops waiting when it fires. The embedding is
 *   shared by every caller of the same text, so it is aborted (its request and retries stopped) only once every
 *   caller waiting on it has given up. An embedder with `noDeadline` (the local one) is waited out: no signal applies.
 * @returns the embedder's vector for `text` (unit length, `emb.dimensions` long); callers must not modify it (it is
 *   shared by every caller of the same text).
 * @throws whatever `emb.embed` throws, or Error when it returns no vector; an AbortError when `opts.signal` fired
 *   first (an embedding aborted is not kept)
 */
export function embedQuery(emb: Embedder, text: string, opts: Pick<EmbedOptions, "signal"> = {}): Promise<Float32Array> {
  const signal = emb.noDeadline ? undefined : opts.signal;
  if (text.length > QUERY_CACHE_MAX_CHARS) return embedOne(emb, text, signal);
  const key = `${emb.id}\u0000${text}`;
  let pending = cache.get(key);
  if (pending) counts.hits++;
  else {
    counts.misses++;
    const controller = new AbortController();
    const started = embedOne(emb, text, controller.signal);
    pending = started;
    cache.set(key, started);
    inFlight.set(started, { controller, waiting: 0 });
    // Only successes stay; a rejection is removed (if still this entry) so the next search asks again.
    started.then(
      () => inFlight.delete(started),
      () => {
        inFlight.delete(started);
        if (cache.get(key) === started) cache.delete(key);
      },
    );
  }
  const shared = inFlight.get(pending);
  if (!shared) return signal ? raceAbort(pending, signal) : pending; // done already, or cached
  if (!signal) {
    shared.waiting = Number.POSITIVE_INFINITY; // someone waits for good: never aborted
    return pending;
  }
  const giveUp = () => {
    if (--shared.waiting <= 0) shared.controller.abort(signal.reason);
  };
  shared.waiting++;
  if (signal.aborted) giveUp(); // a caller out of time already: it does not hold the embedding up
  else {
    signal.addEventListener("abort", giveUp, { once: true });
    // Once the embedding has settled, a later deadline has nothing to give up.
    const forget = () => signal.removeEventListener("abort", giveUp);
    pending.then(forget, forget);
  }
  return raceAbort(pending, signal);
}

async function embedOne(emb: Embedder, text: string, signal: AbortSignal | undefined): Promise<Float32Array> {
  const [v] = await (signal && !emb.noDeadline ? emb.embed([text], { signal }) : emb.embed([text]));
  if (!v) throw new Error(`embedder ${emb.id} returned no vector`);
  return v;
}

/** `p`, or an AbortError as soon as `signal` fires (`p` itself goes on). */
function raceAbort<T>(p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(abortError(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener("abort", onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
