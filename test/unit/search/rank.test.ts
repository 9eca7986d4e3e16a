/**
 * Insight search ranking, pure parts (core/insight/search-rank.ts, core/ai/vectors.ts int8, the shard encoding of
 * core/insight/search-index.ts): term normalisation, reciprocal rank fusion, filters, the spec's text fallback, int8
 * quantisation error, and shard blobs round-tripping.
 */
import { describe, expect, it } from "vitest";
import { dequantizeInt8, dot, int8Scores, normalize, quantizeInt8 } from "../../../core/ai/vectors";
import { buildIndex, hasVectors, hybridRank, MIN_RELEVANCE, normalizeTerm, RRF_K, textRank, VECTOR_DEPTH } from "../../../core/insight/search-rank";
import { decodeShard, encodeShard, type SearchRow } from "../../../core/insight/search-index";
import { unitVector } from "./unit-vector";

const unit = unitVector;

function row(id: string, title: string, description: string, vector: Float32Array | null, extra: Partial<SearchRow> = {}): SearchRow {
  const q = vector ? quantizeInt8(vector) : null;
  return {
    id, title, description, insight_type: "pain_point", severity: "medium", frequency: 1, created_at: `2026-01-01T00:00:0${id.length % 10}Z`,
    embedder_id: q ? "emb" : null, codes: q?.codes ?? null, scale: q?.scale ?? 0, view: null, ...extra,
  };
}

describe("int8 quantisation", () => {
  it("keeps the cosine of unit vectors within 0.01 and reads back the same codes", () => {
    for (let s = 1; s <= 50; s++) {
      const a = unit(s);
      const b = unit(s + 1000);
      const qa = quantizeInt8(a);
      const approx = int8Scores({ data: qa.codes, scales: Float32Array.of(qa.scale), rows: 1, dims: 512 }, b)[0]!;
      expect(Math.abs(approx - dot(a, b))).toBeLessThan(0.01);
      expect(Math.abs(dot(dequantizeInt8(qa), a) - 1)).toBeLessThan(0.01);
    }
    expect(quantizeInt8(new Float32Array(4))).toEqual({ codes: new Int8Array(4), scale: 0 });
  });
});

describe("term normalisation", () => {
  it("lower-cases, drops stop words and meets plurals and -ing forms", () => {
    expect(normalizeTerm("Logins")).toBe(normalizeTerm("login"));
    expect(normalizeTerm("crashes")).toBe(normalizeTerm("crash"));
    expect(normalizeTerm("loading")).toBe("load");
    expect(normalizeTerm("scheduling")).toBe(normalizeTerm("schedule"));
    expect(normalizeTerm("the")).toBeNull();
    expect(normalizeTerm("a")).toBeNull();
    expect(normalizeTerm("classes")).toBe(normalizeTerm("class"));
  });
});

describe("hybrid ranking", () => {
  const q = unit(7);
  const rows = [
    row("lex", "Login problems after the update", "Users cannot log in.", unit(99)), // shares words, far vector
    row("both", "Login keeps failing", "Signing in loops back.", q), // shares words and is the query's vector
    row("vec", "Cannot get into my account", "Access is refused.", normalize(q.map((x, i) => x + (i % 2 ? 0.02 : -0.02)))),
    row("none", "Dark mode", "Too bright at night.", unit(5)),
    row("novec", "Login page is slow", "No vector yet.", null),
  ];
  const index = buildIndex(rows);

  it("fuses the BM25 and vector lists by reciprocal rank: first in both scores 1, one list alone scores less", () => {
    const { ranked, total } = hybridRank(index, "login problems", q, "emb", {});
    expect(total).toBe(ranked.length);
    expect(ranked[0]).toMatchObject({ row: { id: "both" } });
    expect(ranked[0]!.score).toBeGreaterThan(0.9);
    const ids = ranked.map((r) => r.row.id);
    expect(ids).toContain("lex"); // lexical only
    expect(ids).toContain("vec"); // vector only (no shared word)
    expect(ids).toContain("novec"); // no vector: ranked by its words
    expect(ids).not.toContain("none"); // neither: not a candidate
    const scores = ranked.map((r) => r.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
    // A single list's first place is worth 1 / (K + 1) of the 2 / (K + 1) maximum.
    expect(Math.max(...ranked.filter((r) => r.row.id !== "both").map((r) => r.score))).toBeLessThanOrEqual(0.5 + 1e-9);
    expect(RRF_K).toBe(60);
    expect(MIN_RELEVANCE).toBeGreaterThan(0);
  });

  it("applies the filters to both lists, and has no vector search for another embedder", () => {
    const filtered = buildIndex(rows.map((r) => (r.id === "both" ? { ...r, severity: "high", frequency: 3 } : r)));
    const ids = (f: Record<string, unknown>) => hybridRank(filtered, "login", q, "emb", f).ranked.map((r) => r.row.id);
    expect(ids({ severity: "high" })).toEqual(["both"]);
    expect(ids({ min_frequency: 2 })).toEqual(["both"]);
    expect(hybridRank(filtered, "login", q, "emb", { insight_type: "opportunity" })).toEqual({ ranked: [], total: 0 });
    expect(hasVectors(index, "emb")).toBe(true);
    expect(hasVectors(index, "other-embedder")).toBe(false);
  });

  it("returns the best `want` exactly as the full ranking orders them, and counts every candidate in total", () => {
    // 3,000 rows, all vector candidates (near the query), a third also lexical: past VECTOR_DEPTH and past 4 × want.
    const many = buildIndex(
      Array.from({ length: 3_000 }, (_, k) =>
        row(`r${k}`, k % 3 === 0 ? `Login issue ${k}` : `Other topic ${k}`, "", normalize(q.map((x, i) => x + ((k * 7 + i) % 13) * 0.004))),
      ),
    );
    const all = hybridRank(many, "login", q, "emb", {});
    const top = hybridRank(many, "login", q, "emb", {}, 25);
    expect(all.total).toBe(3_000);
    expect(top.total).toBe(3_000);
    expect(top.ranked.map((r) => r.row.id)).toEqual(all.ranked.slice(0, 25).map((r) => r.row.id));
    // Past VECTOR_DEPTH a candidate only counts: the fused list is the lexical hits plus the first 1,000 by vector.
    expect(all.ranked.length).toBeLessThanOrEqual(1_000 + 1_000);
    expect(VECTOR_DEPTH).toBe(1_000);
  });

  it("text fallback: case-insensitive substring of title or description, title hits first, newest first", () => {
    const t = textRank(rows, "LOG", {});
    expect(t.map((r) => r.row.id).slice(0, 3).sort()).toEqual(["both", "lex", "novec"]);
    expect(t.find((r) => r.row.id === "lex")!.score).toBe(1);
    expect(textRank(rows, "signing in", {})).toMatchObject([{ row: { id: "both" }, score: 0.5 }]);
    expect(textRank(rows, "nothing like it", {})).toEqual([]);
  });
});

describe("shard blobs", () => {
  it("round-trip rows with and without vectors, with and without their view", () => {
    const view = {
      source_ids: ["s1"], quotes: [{ text: "“It froze”", source_id: "s1", speaker: null }], mention_count: 2, impact: null,
      is_archived: true, notes: "n", rating: 4, updated_at: "2026-01-02T00:00:00Z", description: "long ".repeat(10),
    };
    const rows = [row("a", "Title ✓ “quoted”", "d".repeat(3000), unit(1), { view }), row("b", "No vector", "", null), row("c", "Short", "x", unit(2, 8))];
    const back = decodeShard(encodeShard(rows));
    expect(back).toEqual(rows);
    expect(decodeShard(encodeShard([]))).toEqual([]);
    const blob = encodeShard(rows);
    expect(() => decodeShard(blob.subarray(0, blob.length - 10))).toThrow();
    expect(() => decodeShard(blob.subarray(0, 40))).toThrow();
  });
});
