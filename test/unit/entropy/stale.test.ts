/** Stale sources (core/entropy/stale.ts): old research that no longer feeds current knowledge well. */
import { describe, expect, it } from "vitest";
import { findStaleSources, type CitingInsight, type ScannedSource } from "../../../core/entropy/stale";

const NOW = new Date("2025-06-30T12:00:00.000Z");
const daysAgo = (d: number) => new Date(NOW.getTime() - d * 86_400_000).toISOString();
const source = (id: string, age: number, status: ScannedSource["processing_status"] = "completed"): ScannedSource => ({ id, title: `Source ${id}`, processing_status: status, created_at: daysAgo(age) });
const insight = (id: string, sources: string[], over: Partial<CitingInsight> = {}): CitingInsight => ({
  id, title: `Insight ${id}`, severity: "medium", is_archived: false, source_ids: sources, quotes: [], ...over,
});

describe("findStaleSources", () => {
  it("flags an old source that is the only evidence of a high insight as high, with the insights resting on it", () => {
    const [s, ...rest] = findStaleSources([source("old", 200)], [insight("i1", ["old"], { severity: "high" }), insight("i2", ["old"])], NOW, 90);
    expect(rest).toEqual([]);
    expect(s).toMatchObject({ sourceId: "old", reason: "aging_evidence", severity: "high", ageDays: 200, insightIds: ["i1", "i2"] });
    expect(s!.detail).toContain("no research from the last 90 days");
  });

  it("is medium when the insights resting only on old research are not high or critical", () => {
    expect(findStaleSources([source("old", 120)], [insight("i1", ["old"], { severity: "low" })], NOW, 90)[0]).toMatchObject({ reason: "aging_evidence", severity: "medium" });
  });

  it("does not flag an old source whose insights a fresh source corroborates (by source_ids or by a quote)", () => {
    const sources = [source("old", 300), source("fresh", 5)];
    expect(findStaleSources(sources, [insight("i1", ["old", "fresh"], { severity: "critical" })], NOW, 90)).toEqual([]);
    expect(findStaleSources(sources, [insight("i1", ["old"], { severity: "critical", quotes: [{ source_id: "fresh" }] })], NOW, 90)).toEqual([]);
  });

  it("counts age from upload against the threshold: a source younger than it is never stale", () => {
    expect(findStaleSources([source("young", 89)], [], NOW, 90)).toEqual([]);
    expect(findStaleSources([source("edge", 90)], [], NOW, 90)[0]).toMatchObject({ sourceId: "edge", reason: "never_synthesized" });
  });

  it("flags old sources never synthesized, superseded (only archived insights) and failed as low; leaves pending ones alone", () => {
    const sources = [source("never", 100), source("archived", 150), source("failed", 95, "failed"), source("pending", 400, "pending")];
    const found = findStaleSources(sources, [insight("gone", ["archived"], { is_archived: true, severity: "critical" })], NOW, 90);
    expect(found.map((s) => [s.sourceId, s.reason, s.severity])).toEqual([
      ["archived", "superseded", "low"],
      ["never", "never_synthesized", "low"],
      ["failed", "failed_extraction", "low"],
    ]);
    expect(found[0]!.insightIds).toEqual(["gone"]);
  });

  it("orders by severity, then age", () => {
    const sources = [source("a", 100), source("b", 300), source("c", 200)];
    const insights = [insight("ia", ["a"], { severity: "high" }), insight("ic", ["c"])];
    expect(findStaleSources(sources, insights, NOW, 90).map((s) => s.sourceId)).toEqual(["a", "c", "b"]);
  });
});
