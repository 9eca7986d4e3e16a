import { afterAll, describe, expect, it } from "vitest";
import { LocalEmbedder } from "../../../core/ai/local-embedder";
import { dot } from "../../../core/ai/vectors";

describe("LocalEmbedder (Universal Sentence Encoder lite, offline)", () => {
  afterAll(() => LocalEmbedder.shutdown());

  it("returns unit-length 512-d vectors in input order, deterministically", async () => {
    const emb = new LocalEmbedder({ workers: 0, batchSize: 2 });
    const texts = [
      "I can't log in to the app, it keeps asking for a token.",
      "The login keeps failing after the update.",
      "I need to refill my prescription before Friday.",
      "",
    ];
    const out = await emb.embed(texts);
    expect(emb.id).toBe("local:use-lite:512");
    expect(out).toHaveLength(4);
    for (const v of out) {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(512);
      expect(Math.sqrt(dot(v, v))).toBeCloseTo(1, 5);
    }
    // Meaning, not words: the two login complaints are closer to each other than to the prescription.
    expect(dot(out[0], out[1])).toBeGreaterThan(dot(out[0], out[2]) + 0.1);
    // Batch composition changes only float rounding (padding is masked): within 1e-6.
    const [alone] = await emb.embed([texts[2]]);
    expect(Math.max(...alone.map((x, i) => Math.abs(x - out[2][i])))).toBeLessThan(1e-6);
    // Same input, same batches: bit-identical.
    expect((await emb.embed(texts)).map((v) => Array.from(v))).toEqual(out.map((v) => Array.from(v)));
    expect(await emb.embed([])).toEqual([]);
  });

  it("gives the same vectors from a worker thread as on the calling thread", async () => {
    const texts = ["Binder takes too long to start.", "Please add a variable inspector like RStudio has."];
    const inThread = await new LocalEmbedder({ workers: 0 }).embed(texts);
    const pooled = await new LocalEmbedder({ workers: 1 }).embed(texts);
    expect(pooled.map((v) => Array.from(v))).toEqual(inThread.map((v) => Array.from(v)));
  });

  it("serves a request someone waits on before the batches background requests have queued", async () => {
    // One thread: 40 background requests (an Index step's batches) are queued before the urgent one arrives.
    const emb = new LocalEmbedder({ workers: 1, batchSize: 1 });
    const notes = Array.from({ length: 40 }, (_, i) => `Interview note ${i}: the export button is hard to find.`);
    let backgroundDone = 0;
    const background = notes.map((note) => emb.embed([note], { background: true }).then(([v]) => (backgroundDone++, v)));
    const [urgent] = await emb.embed(["Users cannot find the export button."]);
    // Only what was already on the thread ran first (in arrival order the urgent request would come 41st).
    expect(backgroundDone).toBeLessThanOrEqual(3);
    expect(urgent).toHaveLength(512);
    const queued = await Promise.all(background);
    expect(backgroundDone).toBe(40);
    // Queueing changes when a batch runs, not what it gives.
    const [again] = await emb.embed([notes[7]]);
    expect(Array.from(queued[7])).toEqual(Array.from(again));
  });
});
