/**
 * Mentions of a merged insight (core/insight/synthesis.ts `mergedMentions`): a synthesis that runs again over known
 * sources, now with a new one, adds only the new source's mentions (it counted them twice before); drafts of one run
 * add up; an insight stored without per-source counts keeps its total for its known sources.
 */
import { describe, expect, it } from "vitest";
import { mergedMentions } from "../../../core/insight/synthesis";
import { unitsBySource } from "../../../core/ai/synthesis";

const run = (o: Record<string, number>) => new Map(Object.entries(o));

describe("mergedMentions", () => {
  it("counts a known source's mentions once when the run synthesizes it again beside a new source", () => {
    const stored = { mention_count: 7, source_ids: ["a", "b"], mentions_by_source: [{ source_id: "a", count: 4 }, { source_id: "b", count: 3 }] };
    // Second run over a, b and the new c: a and b are found again (same counts), c adds 2.
    const merged = mergedMentions(stored, run({ a: 4, b: 3, c: 2 }));
    expect(merged.mention_count).toBe(9);
    expect(merged.mentions_by_source).toEqual([
      { source_id: "a", count: 4 },
      { source_id: "b", count: 3 },
      { source_id: "c", count: 2 },
    ]);
  });

  it("keeps the larger count of a source seen again, so a narrower second finding does not lose evidence", () => {
    const stored = { mention_count: 5, source_ids: ["a", "b"], mentions_by_source: [{ source_id: "a", count: 4 }, { source_id: "b", count: 1 }] };
    expect(mergedMentions(stored, run({ a: 2, b: 3 }))).toEqual({
      mention_count: 7,
      mentions_by_source: [
        { source_id: "a", count: 4 },
        { source_id: "b", count: 3 },
      ],
    });
  });

  it("for an insight without per-source counts: its total stands for its known sources and the new ones add", () => {
    const manual = { mention_count: 3, source_ids: ["a"] };
    expect(mergedMentions(manual, run({ a: 2 }))).toEqual({ mention_count: 3 });
    expect(mergedMentions(manual, run({ a: 5 }))).toEqual({ mention_count: 5 });
    expect(mergedMentions(manual, run({ a: 2, b: 4 }))).toEqual({ mention_count: 7 });
  });
});

describe("unitsBySource", () => {
  it("counts distinct units per source, so two mentions of one answer are one mention", () => {
    const mentions = [
      { sourceIndex: 0, unitIndex: 1 },
      { sourceIndex: 0, unitIndex: 1 },
      { sourceIndex: 0, unitIndex: 2 },
      { sourceIndex: 1, unitIndex: 1 },
    ];
    expect(unitsBySource([0, 1, 2, 3], (i) => mentions[i], [{ id: "s0" }, { id: "s1" }])).toEqual({ s0: 2, s1: 1 });
    expect(unitsBySource([1, 3], (i) => mentions[i], [{ id: "s0" }, { id: "s1" }])).toEqual({ s0: 1, s1: 1 });
  });
});
