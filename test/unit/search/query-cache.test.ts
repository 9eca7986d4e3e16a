/**
 * The per-container cache of query embeddings (core/ai/query-cache.ts): a repeated text with the same embedder is not
 * embedded again (it is exact: an embedder's vector of a text never changes); another embedder id is another entry;
 * a failure is not kept; concurrent asks share one embedding; the least recently used entry goes past the bound.
 */
import { beforeEach, describe, expect, it } from "vitest";
import { clearQueryCache, embedQuery, QUERY_CACHE_ENTRIES, QUERY_CACHE_MAX_CHARS } from "../../../core/ai/query-cache";
import type { Embedder } from "../../../core/ai/ports";

/** An embedder that records what it is asked and answers a vector derived from the text (or fails when told to). */
function recording(id = "test:emb:4") {
  const asked: string[] = [];
  let failNext = false;
  const emb: Embedder & { asked: string[]; failOnce(): void } = {
    id,
    dimensions: 4,
    asked,
    failOnce: () => (failNext = true),
    async embed(texts: string[]) {
      asked.push(...texts);
      if (failNext) {
        failNext = false;
        throw new Error("embedder down");
      }
      return texts.map((t) => Float32Array.of(t.length, t.charCodeAt(0), 1, 0));
    },
  } as Embedder & { asked: string[]; failOnce(): void };
  return emb;
}

beforeEach(() => clearQueryCache());

describe("query embedding cache", () => {
  it("embeds a repeated query once per embedder, and gives the same vector", async () => {
    const a = recording("test:a:4");
    const b = recording("test:b:4");
    const first = await embedQuery(a, "login problems");
    expect(await embedQuery(a, "login problems")).toBe(first);
    expect([...first]).toEqual([14, "l".charCodeAt(0), 1, 0]);
    await embedQuery(b, "login problems");
    await embedQuery(a, "Login problems"); // another text (case matters to the embedder)
    expect(a.asked).toEqual(["login problems", "Login problems"]);
    expect(b.asked).toEqual(["login problems"]);
  });

  it("shares one embedding between concurrent asks, and keeps no failure", async () => {
    const a = recording();
    const [x, y] = await Promise.all([embedQuery(a, "dark mode"), embedQuery(a, "dark mode")]);
    expect(x).toBe(y);
    expect(a.asked).toEqual(["dark mode"]);
    a.failOnce();
    await expect(embedQuery(a, "slow start")).rejects.toThrow("embedder down");
    expect([...(await embedQuery(a, "slow start"))]).toEqual([10, "s".charCodeAt(0), 1, 0]);
    expect(a.asked).toEqual(["dark mode", "slow start", "slow start"]);
  });

  it("keeps at most QUERY_CACHE_ENTRIES, dropping the least recently used; long texts are not kept", async () => {
    const a = recording();
    for (let i = 0; i < QUERY_CACHE_ENTRIES; i++) await embedQuery(a, `q${i}`);
    await embedQuery(a, "q0"); // q0 is now the most recent; q1 the least
    await embedQuery(a, "one more");
    a.asked.length = 0;
    await embedQuery(a, "q0");
    await embedQuery(a, "q2");
    expect(a.asked).toEqual([]);
    await embedQuery(a, "q1");
    expect(a.asked).toEqual(["q1"]);
    const long = "x".repeat(QUERY_CACHE_MAX_CHARS + 1);
    await embedQuery(a, long);
    await embedQuery(a, long);
    expect(a.asked.filter((t) => t === long)).toHaveLength(2);
  });
});
