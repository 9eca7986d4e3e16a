import { describe, expect, it } from "vitest";
import { Thesaurus } from "../../../core/ai/synthesis/thesaurus";
import type { PhraseOcc, RankedPhrase } from "../../../core/ai/synthesis/naming";

const occ = (...keys: string[]): PhraseOcc[] => keys.map((key) => ({ key, surface: key, words: key.split(" ").length }));
const top = (...keys: string[]): RankedPhrase[] => keys.map((key, i) => ({ key, surface: key, count: 1, score: 3 - i, domain: false }));
const times = (k: number, list: PhraseOcc[]) => Array.from({ length: k }, () => list);

/**
 * A survey's mentions: "git" and "version control" are written with the same company (diff, github, each other)
 * but mostly apart; "copy"/"paste" keep company of their own; "cell" is everywhere.
 */
const mentions: PhraseOcc[][] = [
  ...times(12, occ("git")),
  ...times(12, occ("version control")),
  ...times(6, occ("git", "diff")),
  ...times(6, occ("version control", "diff")),
  ...times(5, occ("git", "github")),
  ...times(4, occ("version control", "github")),
  ...times(4, occ("git", "version control")),
  ...times(10, occ("copy", "paste")),
  ...times(8, occ("section")),
  ...times(3, occ("copy", "section")),
  ...times(40, occ("cell")),
  ...times(6, occ("cell", "copy")),
  ...times(6, occ("cell", "git")),
  ...times(60, occ("kernel")),
];

describe("Thesaurus (distributional synonyms of the input's own phrases)", () => {
  const t = new Thesaurus(mentions);

  it("relates two names the respondents use as synonyms, though they rarely share an answer", () => {
    expect(t.relatedness(top("git"), top("version control"))).toBeGreaterThanOrEqual(0.33);
    expect(t.relatedness(top("git", "diff"), top("version control", "github"))).toBeGreaterThanOrEqual(0.33);
  });

  it("does not relate names that only keep different company", () => {
    expect(t.relatedness(top("git"), top("copy"))).toBeLessThan(0.2);
    expect(t.relatedness(top("version control"), top("kernel"))).toBeLessThan(0.1);
  });

  it("leaves out a phrase both names hold: sharing `cell` is not synonymy", () => {
    expect(t.relatedness(top("cell", "kernel"), top("cell", "copy"))).toBeLessThan(0.2);
  });

  it("is symmetric and bounded", () => {
    const ab = t.relatedness(top("git", "diff"), top("version control"));
    expect(ab).toBeCloseTo(t.relatedness(top("version control"), top("git", "diff")), 10);
    expect(ab).toBeLessThanOrEqual(1);
    expect(t.relatedness(top("git"), top("git"))).toBe(0);
    expect(t.relatedness(top("unknown"), top("git"))).toBe(0);
  });
});
