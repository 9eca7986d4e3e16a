/** What an insight asserts (core/entropy/statements.ts): clauses, denied heads, scale poles, and when two disagree. */
import { describe, expect, it } from "vitest";
import { disagreements, readStatement } from "../../../core/entropy/statements";

describe("readStatement", () => {
  it("cuts clauses at punctuation and contrastive words, and denies the negation's head (with the noun its modifier qualifies)", () => {
    const s = readStatement("Low color contrast was not a major blocker for participants to complete tasks, but it was unpleasant.");
    expect(s.clauses).toHaveLength(2);
    const [claim, aside] = s.clauses;
    expect(claim!.negated).toBe(true);
    expect(claim!.denied).toEqual(["major", "blocker"]);
    expect(aside!.negated).toBe(false);
    expect(aside!.stance).toBe(-1); // "unpleasant"
    expect(s.topics).toEqual(new Set(["low", "color", "contrast", "blocker", "task"]));
  });

  it("replaces scale words by their scale, so opposite claims use the same words", () => {
    const easy = readStatement("Keyboard shortcuts are easy to find.").clauses[0]!;
    const hard = readStatement("Keyboard shortcuts are hard to find.").clauses[0]!;
    expect(easy.words).toEqual(hard.words);
    expect(easy.words.has("scale:ease")).toBe(true);
    expect([easy.poles.get("ease"), hard.poles.get("ease")]).toEqual([1, -1]);
  });

  it("flips a scale word after a negation cue (unable and lack count), and keeps generic words out", () => {
    expect(readStatement("The editor is not easy to use.").clauses[0]!.poles.get("ease")).toBe(-1);
    const unable = readStatement("Users are unable to export notebooks.");
    expect(unable.clauses[0]!.denied).toEqual(["export"]);
    expect(unable.topics.has("user")).toBe(false);
    expect(readStatement("The editor is easy to use and fast.").clauses[0]!.stance).toBe(2);
  });
});

describe("disagreements", () => {
  const d = (a: string, b: string) => disagreements(readStatement(a), readStatement(b));

  it("finds a denial of what the other affirms, and opposite ends of a scale, in clauses making the same claim", () => {
    expect(d("Users can export notebooks to PDF.", "Users cannot export notebooks to PDF.")).toEqual([{ rule: "negation", terms: ["export"] }]);
    expect(d("Binder builds are fast.", "Binder builds are slow.")).toEqual([{ rule: "opposite_scale", terms: ["speed", "fast", "slow"] }]);
    expect(d("Keyboard shortcuts are hard to find.", "Participants said keyboard shortcuts are easy to find.")).toEqual([{ rule: "opposite_scale", terms: ["ease", "easy", "hard"] }]);
  });

  it("is symmetric", () => {
    const a = "The table of contents is useful for navigating notebooks.";
    const b = "The table of contents is not useful for navigating notebooks.";
    expect(d(a, b)).toEqual(d(b, a));
    expect(d(a, b).map((r) => r.rule)).toEqual(["negation", "opposite_scale"]);
  });

  it("finds nothing between statements on different topics, that agree, or that are both negative", () => {
    expect(d("Binder builds are fast.", "Prescription refills are slow.")).toEqual([]);
    expect(d("Binder builds are slow.", "Binder builds take too long and are slow to start.")).toEqual([]);
    expect(d("Can't figure out how to install Jupyter on my Mac.", "I am unable to figure out how to install Jupyter on my Mac.")).toEqual([]);
  });

  it("ignores a shared word used in clauses that make different claims", () => {
    // Both mention support and true IDEs, in clauses sharing too few words to be the same claim.
    expect(d("No true built-in IDE support.", "Poor support compared to true IDEs like checking if modules are installed.")).toEqual([]);
  });

  it("falls back to opposite stance only when no stronger rule applies", () => {
    expect(d("The command palette is helpful.", "The command palette is buggy.")).toEqual([{ rule: "opposite_stance", terms: ["command", "palette"] }]);
  });
});
