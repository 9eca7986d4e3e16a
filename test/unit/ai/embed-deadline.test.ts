/**
 * An embedding's deadline (EmbedOptions.signal, core/ai/ports.ts): the retry layer stops retrying and stops waiting
 * between retries when the caller's signal fires, and the query cache lets a caller that joins an embedding already
 * in flight stop waiting on its own signal while the shared embedding goes on for the others.
 */
import { describe, expect, it } from "vitest";
import { retryTransient } from "../../../core/ai/retry";
import { clearQueryCache, embedQuery } from "../../../core/ai/query-cache";
import type { EmbedOptions, Embedder } from "../../../core/ai/ports";

describe("retryTransient with a signal", () => {
  it("stops waiting out the backoff and tries no more once the signal fires", async () => {
    let attempts = 0;
    const started = Date.now();
    const failing = retryTransient(
      async () => {
        throw Object.assign(new Error("Too many requests"), { name: "ThrottlingException" });
      },
      { retries: 5, minTimeoutMs: 60_000, maxTimeoutMs: 60_000 },
      () => true,
      () => attempts++,
      AbortSignal.timeout(30),
    );
    await expect(failing).rejects.toMatchObject({ name: "AbortError" });
    expect(attempts).toBe(1);
    expect(Date.now() - started).toBeLessThan(5_000); // not the 60 s backoff
  });

  it("does not retry a request the abort cut (the SDK's own error for it is no transient failure)", async () => {
    const controller = new AbortController();
    let attempts = 0;
    const cut = retryTransient(
      async () => {
        attempts++;
        controller.abort();
        throw Object.assign(new Error("socket hang up"), { name: "TimeoutError" });
      },
      { retries: 5, minTimeoutMs: 1, maxTimeoutMs: 1 },
      () => true,
      () => {},
      controller.signal,
    );
    await expect(cut).rejects.toMatchObject({ name: "AbortError" });
    expect(attempts).toBe(1);
  });
});

describe("embedQuery with a signal", () => {
  /** An embedder whose embeddings end when the test says, recording the signal each call was given. */
  function heldEmbedder() {
    const calls: { opts?: EmbedOptions; finish: (v: Float32Array) => void }[] = [];
    const emb: Embedder = {
      id: "test:held:2",
      dimensions: 2,
      embed: (_texts, opts) => new Promise((resolve) => calls.push({ opts, finish: (v) => resolve([v]) })),
    };
    return { emb, calls };
  }

  it("passes the caller's signal to the embedding it starts", async () => {
    clearQueryCache();
    const { emb, calls } = heldEmbedder();
    const signal = new AbortController().signal;
    const pending = embedQuery(emb, "sign-in problems", { signal });
    expect(calls).toHaveLength(1);
    expect(calls[0]!.opts?.signal).toBe(signal);
    calls[0]!.finish(Float32Array.from([1, 0]));
    expect(Array.from(await pending)).toEqual([1, 0]);
  });

  it("a caller joining an embedding in flight stops waiting on its own signal; the embedding goes on for the first", async () => {
    clearQueryCache();
    const { emb, calls } = heldEmbedder();
    const first = embedQuery(emb, "export to csv");
    const late = new AbortController();
    const joined = embedQuery(emb, "export to csv", { signal: late.signal });
    expect(calls).toHaveLength(1); // shared, not embedded twice
    late.abort();
    await expect(joined).rejects.toMatchObject({ name: "AbortError" });
    calls[0]!.finish(Float32Array.from([0, 1]));
    expect(Array.from(await first)).toEqual([0, 1]);
    // And it stays cached: the next caller gets it without a call.
    expect(Array.from(await embedQuery(emb, "export to csv", { signal: AbortSignal.timeout(1_000) }))).toEqual([0, 1]);
    expect(calls).toHaveLength(1);
  });
});
