/**
 * The WebAssembly SIMD scorer of insight search (core/insight/search-rank.ts `simdScorer`, `matrixScores`): the same
 * scores as the plain int8 dot products of core/ai/vectors.ts (`int8Scores`) within the query's 14-bit rounding, for
 * the dimensions of the embedders in use; no scorer where the shape does not suit it; and the same ranking with or
 * without it.
 */
import { afterEach, describe, expect, it } from "vitest";
import { int8Scores, normalize, quantizeInt8 } from "../../../core/ai/vectors";
import { buildIndex, hybridRank, matrixFor, matrixScores, setSimdOff, simdAvailable, simdScorer } from "../../../core/insight/search-rank";
import type { SearchRow } from "../../../core/insight/search-index";
import { unitVector } from "./unit-vector";

const unit = unitVector;

function matrixOf(rows: number, dims: number, seed: number) {
  const data = new Int8Array(rows * dims);
  const scales = new Float32Array(rows);
  for (let r = 0; r < rows; r++) {
    const q = quantizeInt8(unit(seed + r, dims));
    data.set(q.codes, r * dims);
    scales[r] = q.scale;
  }
  return { data, scales, rows, dims };
}

afterEach(() => setSimdOff(false));

describe("WebAssembly SIMD scoring of int8 search vectors", () => {
  it("is available on the pinned Node (Lambda's nodejs22.x has WebAssembly SIMD)", () => {
    expect(simdAvailable()).toBe(true);
  });

  it.each([
    [1, 16],
    [37, 512],
    [300, 1024],
    [3, 2048],
  ])("gives int8Scores' scores within 1e-3 for %i rows of %i dimensions", (rows, dims) => {
    const m = matrixOf(rows, dims, dims);
    const scorer = simdScorer(rows, dims)!;
    expect(scorer).not.toBeNull();
    scorer.data.set(m.data);
    for (const seed of [1, 2, 3]) {
      const q = unit(1_000 + seed, dims);
      const expected = int8Scores(m, q);
      const got = scorer.scores(q, m.scales);
      expect(got.length).toBe(rows);
      for (let r = 0; r < rows; r++) expect(Math.abs(got[r]! - expected[r]!)).toBeLessThan(1e-3);
    }
    // A row identical to the query scores about 1 (cosine of unit vectors).
    const self = unit(dims, dims); // row 0's vector
    expect(scorer.scores(self, m.scales)[0]).toBeCloseTo(1, 2);
  });

  it("scores a zero query 0 and rejects a query of another length", () => {
    const m = matrixOf(4, 32, 7);
    const scorer = simdScorer(4, 32)!;
    scorer.data.set(m.data);
    expect([...scorer.scores(new Float32Array(32), m.scales)]).toEqual([0, 0, 0, 0]);
    expect(() => scorer.scores(new Float32Array(16), m.scales)).toThrow(/dimensions/);
  });

  it("has no scorer for dimensions it cannot take, or when turned off: the plain scores are used", () => {
    expect(simdScorer(10, 24)).toBeNull(); // not a multiple of 16
    expect(simdScorer(10, 4096)).toBeNull(); // its i32 sums could overflow
    setSimdOff(true);
    expect(simdScorer(10, 512)).toBeNull();
  });

  it("ranks a workspace the same with and without it", () => {
    const rows: SearchRow[] = Array.from({ length: 400 }, (_, i) => {
      const q = quantizeInt8(unit(i, 512));
      return {
        id: `i${i}`, title: `insight ${i} about ${i % 3 ? "login" : "export"}`, description: "text", insight_type: "pain_point", severity: "medium",
        frequency: 1, created_at: "2026-01-01T00:00:00Z", embedder_id: "emb", codes: q.codes, scale: q.scale, view: null,
      };
    });
    const withSimd = buildIndex(rows);
    expect(matrixFor(withSimd, "emb")!.simd).not.toBeNull();
    setSimdOff(true);
    const plain = buildIndex(rows);
    expect(matrixFor(plain, "emb")!.simd).toBeNull();
    // A query close to some rows, so the vector list has candidates above MIN_RELEVANCE.
    const query = normalize(Array.from(unit(5, 512), (x, d) => x + unit(77, 512)[d]!));
    const a = hybridRank(withSimd, "login", query, "emb", {}, 30);
    const b = hybridRank(plain, "login", query, "emb", {}, 30);
    expect(a.total).toBe(b.total);
    expect(a.ranked.map((r) => r.row.id)).toEqual(b.ranked.map((r) => r.row.id));
    expect(matrixScores(matrixFor(withSimd, "emb")!, query)[5]).toBeCloseTo(matrixScores(matrixFor(plain, "emb")!, query)[5]!, 3);
  });
});
