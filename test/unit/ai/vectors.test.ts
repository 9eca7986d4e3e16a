import { describe, expect, it } from "vitest";
import { cosine, decodeVector, dot, encodeVector, normalize, toMatrix, topK } from "../../../core/ai/vectors";

describe("vector storage", () => {
  it("round-trips float32 values exactly through base64", () => {
    const v = new Float32Array([0, 1, -1, 0.1, 3.4028234663852886e38, -1.17549435e-38, Math.PI]);
    const s = encodeVector(v);
    expect(s).toMatch(/^[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(s, "base64").length).toBe(4 * v.length);
    expect(Array.from(decodeVector(s))).toEqual(Array.from(v));
    expect(decodeVector(s, 7)).toHaveLength(7);
  });

  it("is little-endian float32 and rejects bad lengths", () => {
    expect(encodeVector(new Float32Array([1]))).toBe(Buffer.from([0, 0, 0x80, 0x3f]).toString("base64"));
    expect(() => decodeVector(Buffer.from([1, 2, 3]).toString("base64"))).toThrow(/multiple of 4/);
    expect(() => decodeVector(encodeVector(new Float32Array(3)), 4)).toThrow(/3 dimensions, expected 4/);
  });
});

describe("similarity", () => {
  it("computes dot, cosine and unit normalisation", () => {
    expect(dot([1, 2, 3], [4, 5, 6])).toBe(32);
    expect(cosine([1, 0], [0, 1])).toBe(0);
    expect(cosine([1, 1], [2, 2])).toBeCloseTo(1, 12);
    expect(cosine([0, 0], [1, 1])).toBe(0);
    const n = normalize([3, 4]);
    expect(Array.from(n)).toEqual([0.6000000238418579, 0.800000011920929]);
    expect(() => dot([1], [1, 2])).toThrow(/mismatch/);
  });

  it("finds the top-k rows best first, ties by lower index, with a score floor", () => {
    const m = toMatrix([normalize([1, 0]), normalize([0, 1]), normalize([1, 1]), normalize([1, 0]), normalize([-1, 0])]);
    const hits = topK(m, normalize([1, 0.1]), 3);
    expect(hits.map((h) => h.index)).toEqual([0, 3, 2]);
    expect(hits[0].score).toBeGreaterThan(hits[2].score);
    expect(topK(m, normalize([1, 0]), 10, 0.5).map((h) => h.index)).toEqual([0, 3, 2]);
    expect(topK(m, [1, 0], 0)).toEqual([]);
    expect(() => topK(m, [1, 0, 0], 1)).toThrow(/dimensions/);
  });

  it("matches a brute-force ranking on random data", () => {
    let seed = 7;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) - 0.5;
    const rows = Array.from({ length: 500 }, () => normalize(Array.from({ length: 33 }, rnd)));
    const q = normalize(Array.from({ length: 33 }, rnd));
    const m = toMatrix(rows);
    const brute = rows.map((r, i) => ({ i, s: dot(r, q) })).sort((a, b) => b.s - a.s || a.i - b.i).slice(0, 10);
    expect(topK(m, q, 10).map((h) => h.index)).toEqual(brute.map((b) => b.i));
  });
});
