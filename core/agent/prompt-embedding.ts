/**
 * The embedding of a copilot prompt, computed once per prompt and shared (issue #24 point 6): the local engine's goal
 * scoring (core/agent/local-engine.ts), the insight search it then runs with the same text (core/insight/search.ts)
 * and memory recall (core/memory/index.ts `rank`) all ask for it through the container's query-embedding cache
 * (core/ai/query-cache.ts, keyed by embedder id and text), so the first asker computes it and the others wait for
 * that one computation instead of queueing their own behind the embedder's worker thread.
 *
 * Prompts asked for while the embedder is busy with an earlier batch of prompts go to it together as the next batch
 * ({@link Coalescing}): on the local embedder a batch of 50 short prompts costs about 60% of 50 separate calls
 * (measured on this 2-core machine: 1.56 s against 2.64 s under load), and nobody waits for a timer. The vectors are
 * the embedder's own: a text embedded in a batch differs from the same text embedded alone only by float rounding
 * (< 1e-6, core/ai/local-embedder.ts), which is why the batches may share the cache's key, the embedder's id.
 */
import DataLoader from "dataloader";
import type { EmbedOptions, Embedder } from "../ai/ports";
import { embedder } from "../ai/select";
import { embedQuery } from "../ai/query-cache";
import { outsideRequestScope } from "../context";

/** Prompts sent to the embedder in one batch at most (the local embedder cuts larger ones itself anyway). */
const MAX_BATCH = 64;

/**
 * An embedder that sends the texts asked for while its last batch runs as one next batch (a DataLoader whose batches
 * are dispatched when the embedder is free: at the next tick when nothing runs, else when the running batch ends).
 * A failed batch fails each of its texts; the next batch is tried anew. Texts are not cached here (the query cache
 * does that, bounded).
 */
export class Coalescing implements Embedder {
  readonly id: string;
  readonly dimensions: number;
  readonly noDeadline?: boolean;
  /** The batch the embedder is working on, if any: the next batch is dispatched when it settles. */
  private running: Promise<unknown> | undefined;
  private readonly loader: DataLoader<string, Float32Array>;

  constructor(private readonly inner: Embedder) {
    this.id = inner.id;
    this.dimensions = inner.dimensions;
    this.noDeadline = inner.noDeadline;
    this.loader = new DataLoader<string, Float32Array>((texts) => this.run(texts), {
      cache: false,
      maxBatchSize: MAX_BATCH,
      // A batch is shared work of the requests whose prompts it holds: it runs in none of their scopes (their abort
      // signals, kept reads), as Node would run it in the scope of whichever request's load scheduled it.
      batchScheduleFn: (dispatch) => {
        const run = () => outsideRequestScope(dispatch);
        if (this.running) void this.running.finally(run);
        else process.nextTick(run);
      },
    });
  }

  private run(texts: readonly string[]): Promise<Float32Array[]> {
    const batch = this.inner.embed([...texts]).then((vectors) =>
      texts.map((_, i) => vectors[i] ?? new Error(`embedder ${this.inner.id} returned no vector`)),
    ) as Promise<Float32Array[]>;
    const settled = batch.then(
      () => undefined,
      () => undefined,
    );
    this.running = settled;
    void settled.then(() => {
      if (this.running === settled) this.running = undefined;
    });
    return batch;
  }

  /** One vector per text, in order (options are not passed on: prompts are always urgent, never background). */
  embed(texts: string[], _opts?: EmbedOptions): Promise<Float32Array[]> {
    return Promise.all(texts.map((text) => this.loader.load(text)));
  }
}

let shared: { inner: Embedder; coalescing: Coalescing } | undefined;

/**
 * The embedding of `text` (a prompt, or the part of it that asks: the caller chooses, and the same text gives the same
 * vector): from the container's query cache when it was asked for before (or is being computed), else computed in
 * the next batch of prompts.
 * @returns a unit vector of the process's embedder (`embedder()`), shared: callers must not modify it
 * @throws what the embedder throws (loading it, or embedding)
 */
export async function promptEmbedding(text: string): Promise<Float32Array> {
  const inner = await embedder();
  if (shared?.inner !== inner) shared = { inner, coalescing: new Coalescing(inner) };
  return embedQuery(shared.coalescing, text);
}
