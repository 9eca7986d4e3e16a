/**
 * Contradictory insights (core/entropy/contradictions.ts) on realdata-derived insights with the local embedder
 * (Universal Sentence Encoder, core/ai): the planted contradictions are found with the rules that decide them, and
 * the real findings, several of which share a topic and agree, are not flagged.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { LocalEmbedder } from "../../../core/ai/local-embedder";
import { findContradictions, type ScannedInsight } from "../../../core/entropy/contradictions";
import { PLANTED, REAL, realText, type Seed } from "./realdata-insights";

const toScanned = (seeds: Seed[], vectors?: Float32Array[]): ScannedInsight[] =>
  seeds.map((s, k) => ({ id: s.key, title: s.title, description: s.description, severity: s.severity, vector: vectors?.[k] }));

/** A unit vector at `angle` radians in the plane of the first two axes (cosine of two such = cos of the difference). */
const planar = (angle: number) => {
  const v = new Float32Array(8);
  v[0] = Math.cos(angle);
  v[1] = Math.sin(angle);
  return v;
};

describe("on realdata-derived insights with the local embedder", () => {
  let vectors: Float32Array[];
  const all = [...REAL, ...PLANTED];
  beforeAll(async () => {
    vectors = await new LocalEmbedder({ workers: 0 }).embed(all.map((s) => `${s.title}. ${s.description}`));
  }, 120_000);

  it("quotes the real findings verbatim from ../shared/realdata", () => {
    for (const s of REAL) expect(realText(s.from!), s.key).toContain(s.description);
  });

  it("finds exactly the planted contradictions, each against the finding it contradicts", () => {
    const found = findContradictions(toScanned(all, vectors), { minSimilarity: 0.6 });
    const pairs = found.map((c) => [...c.insightIds].sort().join(" × "));
    expect(pairs.sort()).toEqual(PLANTED.map((p) => [p.key, p.against].sort().join(" × ")).sort());
    const contrast = found.find((c) => c.insightIds.includes("contrast-block"))!;
    expect(contrast.severity).toBe("high"); // the planted claim is high severity
    expect(contrast.rules.map((r) => r.rule)).toContain("negation");
    expect(contrast.rules.find((r) => r.rule === "negation")!.terms).toEqual(["blocker", "major"]);
    expect(contrast.detail).toContain("Low color contrast blocked participants");
    const toc = found.find((c) => c.insightIds.includes("toc-notuseful"))!;
    expect(toc.severity).toBe("medium");
    expect(toc.similarity).toBeGreaterThan(0.8);
  });

  it("flags none of the real findings among themselves (topics shared, claims consistent)", () => {
    expect(findContradictions(toScanned(REAL, vectors.slice(0, REAL.length)), { minSimilarity: 0.6 })).toEqual([]);
  });

  it("compares only pairs above the similarity threshold", () => {
    expect(findContradictions(toScanned(all, vectors), { minSimilarity: 0.99 })).toEqual([]);
  });
});

describe("candidates and severity", () => {
  const seeds = (a: Partial<Seed>, b: Partial<Seed>): Seed[] => [
    { key: "a", severity: "low", title: "Users can export notebooks to PDF", description: "Exporting to PDF works.", ...a },
    { key: "b", severity: "low", title: "Users cannot export notebooks to PDF", description: "Exporting to PDF fails.", ...b },
  ];

  it("uses the embedding as the gate: the same texts far apart in vector space are not compared", () => {
    const s = seeds({}, {});
    expect(findContradictions(toScanned(s, [planar(0), planar(0.3)]), { minSimilarity: 0.6 })).toHaveLength(1); // cos 0.955
    expect(findContradictions(toScanned(s, [planar(0), planar(1.5)]), { minSimilarity: 0.6 })).toEqual([]); // cos 0.07
  });

  it("without vectors compares insights sharing half their topic words", () => {
    const [c] = findContradictions(toScanned(seeds({}, {})), { minSimilarity: 0.6 });
    expect(c!.insightIds).toEqual(["a", "b"]);
    expect(c!.rules).toEqual([{ rule: "negation", terms: ["export"] }]);
  });

  it("takes the weightier insight's severity (critical counts as high)", () => {
    const vectors = [planar(0), planar(0.1)];
    expect(findContradictions(toScanned(seeds({ severity: "critical" }, {}), vectors), { minSimilarity: 0.6 })[0]!.severity).toBe("high");
    expect(findContradictions(toScanned(seeds({ severity: "medium" }, { severity: "low" }), vectors), { minSimilarity: 0.6 })[0]!.severity).toBe("medium");
  });

  it("counts praise against complaint only between near-paraphrases, one severity step lower", () => {
    const s: Seed[] = [
      { key: "p", severity: "high", title: "The command palette is helpful", description: "Participants found the command palette helpful." },
      { key: "q", severity: "high", title: "The command palette is buggy", description: "Participants found the command palette buggy." },
    ];
    const [c] = findContradictions(toScanned(s, [planar(0), planar(0.2)]), { minSimilarity: 0.6 }); // cos 0.98
    expect(c!.rules).toEqual([{ rule: "opposite_stance", terms: ["command", "find", "palette"] }]);
    expect(c!.severity).toBe("medium");
    expect(findContradictions(toScanned(s, [planar(0), planar(0.9)]), { minSimilarity: 0.6 })).toEqual([]); // cos 0.62
  });
});
