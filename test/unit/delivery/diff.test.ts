import { describe, expect, it } from "vitest";
import { diffStats, splitLines } from "../../../core/document/diff";

const lines = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join("\n") + "\n";

describe("diffStats (line level)", () => {
  it.each([
    ["identical", "a\nb\n", "a\nb\n", { additions: 0, deletions: 0, changes: 0 }],
    ["one edited line", "a\nb\nc\n", "a\nB\nc\n", { additions: 0, deletions: 0, changes: 1 }],
    ["added lines", "a\nc\n", "a\nb1\nb2\nc\n", { additions: 2, deletions: 0, changes: 0 }],
    ["deleted lines", "a\nb\nc\n", "a\n", { additions: 0, deletions: 2, changes: 0 }],
    ["3 lines replaced by 5", "h\nx1\nx2\nx3\nt\n", "h\ny1\ny2\ny3\ny4\ny5\nt\n", { additions: 2, deletions: 0, changes: 3 }],
    ["5 lines replaced by 2", "h\nx1\nx2\nx3\nx4\nx5\nt\n", "h\ny1\ny2\nt\n", { additions: 0, deletions: 3, changes: 2 }],
    ["two separate hunks", "a\nb\nc\nd\ne\n", "a\nB\nc\nd\nE\nF\n", { additions: 1, deletions: 0, changes: 2 }],
    ["from empty", "", "x\ny\n", { additions: 2, deletions: 0, changes: 0 }],
    ["to empty", "x\ny\n", "", { additions: 0, deletions: 2, changes: 0 }],
    ["missing final newline is not a change", "a\nb", "a\nb\n", { additions: 0, deletions: 0, changes: 0 }],
    ["CRLF equals LF", "a\r\nb\r\n", "a\nb\n", { additions: 0, deletions: 0, changes: 0 }],
    ["whitespace counts", "a\n", "a \n", { additions: 0, deletions: 0, changes: 1 }],
  ])("%s", (_name, from, to, expected) => {
    expect(diffStats(from, to)).toEqual(expected);
  });

  it("totals add up: lines added = additions + changes, removed = deletions + changes", () => {
    const a = lines(200, (i) => (i % 7 === 0 ? `old ${i}` : `same ${i}`));
    const b = lines(230, (i) => (i % 5 === 0 ? `new ${i}` : `same ${i}`));
    const s = diffStats(a, b);
    const kept = splitLines(a).filter((l, i) => l === splitLines(b)[i]).length;
    expect(s.additions + s.changes + kept).toBeLessThanOrEqual(230);
    expect(230 - (s.additions + s.changes)).toBe(200 - (s.deletions + s.changes));
  });

  it("handles repeated lines (blank lines, list markers) correctly", () => {
    expect(diffStats("x\n\n- a\n\ny\n", "x\n\n- a\n\n- b\n\ny\n")).toEqual({ additions: 2, deletions: 0, changes: 0 });
  });

  it("diffs two 5,000-line revisions fast: small edits, heavy edits and a full rewrite", () => {
    const base = lines(5000, (i) => `Line ${i}: the PRD says something about section ${i % 97}`);
    const cases = [
      [lines(5000, (i) => (i % 100 === 0 ? `edited ${i}` : `Line ${i}: the PRD says something about section ${i % 97}`)), 50],
      [lines(5000, (i) => (i % 3 === 0 ? `rewritten ${i}` : `Line ${i}: the PRD says something about section ${i % 97}`)), 1667],
      [lines(5000, (i) => `Completely different ${i}`), 5000],
    ] as const;
    for (const [to, changed] of cases) {
      const t = performance.now();
      const s = diffStats(base, to);
      const ms = performance.now() - t;
      expect(s).toEqual({ additions: 0, deletions: 0, changes: changed });
      expect(ms).toBeLessThan(1000);
    }
  });

  it("uses the multiset fallback when the time budget is exhausted (moved lines count as unchanged)", () => {
    const a = "x\ny\nx\ny\n";
    const b = "y\nx\ny\nx\n";
    expect(diffStats(a, b)).not.toEqual({ additions: 0, deletions: 0, changes: 0 });
    expect(diffStats(a, b, { timeoutMs: 0 })).toEqual({ additions: 0, deletions: 0, changes: 0 });
    expect(diffStats("p\nx\ny\ns\n", "p\nz\nx\nw\ns\n", { timeoutMs: 0 })).toEqual({ additions: 1, deletions: 0, changes: 1 });
  });

  it("stays bounded on a pathological input with a tiny budget", () => {
    const a = lines(4000, (i) => (i % 2 ? "- item" : `text ${i % 50}`));
    const b = lines(4000, (i) => (i % 3 ? "- item" : `text ${(i * 7) % 50}`));
    const t = performance.now();
    const s = diffStats(a, b, { timeoutMs: 5 });
    expect(performance.now() - t).toBeLessThan(1000);
    // common prefix/suffix and multiset-matched lines are unchanged; the rest pair up as changes
    expect(s.additions + s.changes).toBeLessThanOrEqual(4000);
    expect(4000 - (s.additions + s.changes)).toBe(4000 - (s.deletions + s.changes));
    expect(s.changes).toBeGreaterThan(0);
  });
});
