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
  function heldEmbedder(noDeadline = false) {
    const calls: { opts?: EmbedOptions; finish: (v: Float32Array) => void }[] = [];
    const emb: Embedder = {
      id: `test:held:${noDeadline}:2`,
      dimensions: 2,
      ...(noDeadline ? { noDeadline } : {}),
      embed: (_texts, opts) =>
        new Promise((resolve, reject) => {
          calls.push({ opts, finish: (v) => resolve([v]) });
          opts?.signal?.addEventListener("abort", () => reject(Object.assign(new Error("aborted"), { name: "AbortError" })), { once: true });
        }),
    };
    return { emb, calls };
  }

  it("one embedding for callers of the same text; the first caller's deadline does not cut it short for a later one", async () => {
    clearQueryCache();
    const { emb, calls } = heldEmbedder();
    const first = new AbortController();
    const second = new AbortController();
    const a = embedQuery(emb, "export to csv", { signal: first.signal });
    const b = embedQuery(emb, "export to csv", { signal: second.signal });
    expect(calls).toHaveLength(1); // shared, not embedded twice
    first.abort();
    await expect(a).rejects.toMatchObject({ name: "AbortError" });
    expect(calls[0]!.opts?.signal?.aborted).toBe(false); // still running for the second caller
    calls[0]!.finish(Float32Array.from([0, 1]));
    expect(Array.from(await b)).toEqual([0, 1]);
    // And it stays cached: the next caller gets it without a call.
    expect(Array.from(await embedQuery(emb, "export to csv", { signal: AbortSignal.timeout(1_000) }))).toEqual([0, 1]);
    expect(calls).toHaveLength(1);
  });

  it("is aborted (its request stopped) once every caller waiting on it gave up, and not kept", async () => {
    clearQueryCache();
    const { emb, calls } = heldEmbedder();
    const first = new AbortController();
    const second = new AbortController();
    const a = embedQuery(emb, "sign-in problems", { signal: first.signal });
    const b = embedQuery(emb, "sign-in problems", { signal: second.signal });
    first.abort();
    second.abort();
    await expect(a).rejects.toMatchObject({ name: "AbortError" });
    await expect(b).rejects.toMatchObject({ name: "AbortError" });
    expect(calls[0]!.opts?.signal?.aborted).toBe(true);
    // Not kept: the next search asks again.
    const again = embedQuery(emb, "sign-in problems");
    expect(calls).toHaveLength(2);
    calls[1]!.finish(Float32Array.from([1, 0]));
    expect(Array.from(await again)).toEqual([1, 0]);
  });

  it("a sole caller already out of time does not hold the embedding up: it is aborted", async () => {
    clearQueryCache();
    const { emb, calls } = heldEmbedder();
    await expect(embedQuery(emb, "onboarding checklist", { signal: AbortSignal.abort() })).rejects.toMatchObject({ name: "AbortError" });
    expect(calls[0]!.opts?.signal?.aborted).toBe(true);
  });

  it("a caller without a deadline keeps the embedding going whatever the others' deadlines", async () => {
    clearQueryCache();
    const { emb, calls } = heldEmbedder();
    const late = new AbortController();
    const forGood = embedQuery(emb, "dark mode");
    const joined = embedQuery(emb, "dark mode", { signal: late.signal });
    late.abort();
    await expect(joined).rejects.toMatchObject({ name: "AbortError" });
    expect(calls[0]!.opts?.signal?.aborted).toBe(false);
    calls[0]!.finish(Float32Array.from([1, 0]));
    expect(Array.from(await forGood)).toEqual([1, 0]);
  });

  it("an embedder with noDeadline (the local one) is waited out: the caller's signal does not apply", async () => {
    clearQueryCache();
    const { emb, calls } = heldEmbedder(true);
    const signal = AbortSignal.abort();
    const pending = embedQuery(emb, "kernel restarts", { signal });
    expect(calls[0]!.opts).toBeUndefined();
    calls[0]!.finish(Float32Array.from([0, 1]));
    expect(Array.from(await pending)).toEqual([0, 1]);
  });
});
