import { describe, expect, it } from "vitest";
import { classifyType, cueShares, mentionCues, severityOf, type Cues } from "../../../core/ai/synthesis/classify";
import { unitMentions } from "../../../core/ai/synthesis/mentions";
import { displayForm, distinctTop, mentionPhrases, phraseKey, phraseSpread, rankPhrases, subjectOverlap, titleFor } from "../../../core/ai/synthesis/naming";
import { groundQuotes, pickQuotes } from "../../../core/ai/synthesis/quotes";
import { normalize } from "../../../core/ai/vectors";

const cues = (text: string, question?: string): Cues => {
  const [m] = unitMentions({ kind: question ? "response" : "comment", text });
  return mentionCues(m.tokens, m.text, question);
};

describe("cue lexicons with negation", () => {
  it("reads problems, wishes, praise, habits and gaps", () => {
    expect(cues("The login experience is significantly difficult.")).toMatchObject({ pain: true, positive: false });
    expect(cues("Once logged in, the features are useful and easy to use.")).toMatchObject({ pain: false, positive: true });
    expect(cues("It would be nice if I didn't have to fill everything just to save it as draft.").request).toBe(true);
    expect(cues("I use it every day for teaching my students.").behavior).toBe(true);
    expect(cues("There is no way to see the variables, so I end up printing them manually.").unmet).toBe(true);
  });

  it("flips polarity under negation", () => {
    expect(cues("The new home screen is not easy to read.")).toMatchObject({ pain: true, positive: false });
    expect(cues("The signing in on this app isn't working.").pain).toBe(true);
    expect(cues("Honestly the setup was not hard at all.").pain).toBe(false);
    // "work" as a noun is not praise
    expect(cues("This means the user lost days of work").positive).toBe(false);
    expect(cues("This means the user lost days of work")).toMatchObject({ pain: true, intense: true });
  });

  it("lends half-weight cues from the survey question", () => {
    const c = cues("the kernel on large dataframes", "What aspects of Jupyter Notebook make it difficult to use in your workflow?");
    expect(c.pain).toBe(false);
    expect(c.fromQuestion.pain).toBe(true);
    expect(cueShares([c]).pain).toBe(0.5);
    // "address" must not read as "add"
    expect(cues("data exploration and plotting", "What needs in your workflow does Jupyter Notebook address?").fromQuestion.request).toBe(false);
  });

  it("classifies clusters and grades severity", () => {
    const s = (o: Partial<ReturnType<typeof cueShares>>) => ({ pain: 0, request: 0, positive: 0, behavior: 0, unmet: 0, intense: 0, ...o });
    expect(classifyType(s({ pain: 0.5, request: 0.2 })).type).toBe("pain_point");
    expect(classifyType(s({ pain: 0.3, request: 0.35 })).type).toBe("pain_point"); // close: the problem wins
    expect(classifyType(s({ pain: 0.1, request: 0.6 })).type).toBe("feature_request");
    expect(classifyType(s({ pain: 0.25, positive: 0.4 })).type).toBe("pain_point"); // praise mixed with complaints
    expect(classifyType(s({ unmet: 0.4 })).type).toBe("opportunity");
    expect(classifyType(s({ behavior: 0.5 })).type).toBe("behavior");
    expect(classifyType(s({ positive: 0.6 }))).toEqual({ type: "feedback_theme", positive: true });
    expect(classifyType(s({ positive: 0.6, pain: 0.2 }))).toEqual({ type: "feedback_theme", positive: true });
    expect(classifyType(s({}))).toEqual({ type: "feedback_theme", positive: false });

    expect(severityOf("pain_point", 1, 10, 3, s({ pain: 0.8, intense: 0.4 }))).toBe("critical");
    expect(severityOf("pain_point", 0.1, 10, 0.3, s({ pain: 0.3 }))).toBe("low");
    expect(severityOf("feature_request", 1, 10, 3, s({ request: 0.9 }))).toBe("high");
    expect(severityOf("feature_request", 1, 10, 3, s({ pain: 1, intense: 1 }))).not.toBe("critical");
    expect(severityOf("behavior", 0.2, 10, 0.5, s({}))).toBe("low");
  });
});

describe("keyphrases and titles", () => {
  const phrasesOf = (t: string) => mentionPhrases(unitMentions({ kind: "response", text: t })[0]);

  it("extracts noun phrases with their shorter endings, keyed case- and plural-insensitively", () => {
    const keys = phrasesOf("Exploratory data analysis with inline plots").map((p) => p.key);
    expect(keys).toEqual(expect.arrayContaining(["exploratory data analysis", "data analysis", "analysis", "inline plot", "plot"]));
    expect(phraseKey(["Kernels"])).toBe("kernel");
    expect(phraseKey(["libraries"])).toBe("library");
    expect(phraseKey(["analysis"])).toBe("analysis");
    expect(phrasesOf("Lots of things about the stuff").map((p) => p.key)).toEqual([]);
  });

  it("ranks by class-based TF-IDF, damps domain words, avoids repeats", () => {
    const cluster = [
      "no variable inspector in notebooks",
      "a variable inspector like RStudio",
      "variable inspector for the notebook",
      "the notebook needs a debugger",
    ].map(phrasesOf);
    const other = ["the notebook is slow to open", "my notebook crashed again", "export the notebook to PDF"].map(phrasesOf);
    const global = new Map<string, number>();
    for (const list of [...cluster, ...other]) for (const p of list) global.set(p.key, (global.get(p.key) ?? 0) + 1);
    const spread = phraseSpread([cluster, other]);
    expect(spread.get("notebook")).toBe(1);
    const ranked = rankPhrases(cluster, global, 3.5, spread);
    expect(ranked[0].key).toBe("variable inspector");
    expect(ranked.find((r) => r.key === "notebook")?.domain).toBe(true);
    const top = distinctTop(ranked, 3);
    expect(top.map((t) => t.key)).not.toContain("inspector");
    expect(titleFor("feature_request", false, top)).toMatch(/^Users ask for variable inspector/);
    expect(titleFor("pain_point", false, top)).toMatch(/^Users struggle with variable inspector/);
    expect(titleFor("feedback_theme", true, top)).toMatch(/^Users value /);
    expect(titleFor("feedback_theme", false, top)).toMatch(/^Feedback on /);
  });

  it("measures how much two titles' subjects say the same thing", () => {
    const r = (key: string, score: number) => ({ key, surface: key, count: 5, score, domain: false });
    // "text and editing" (two strong phrases) reads the same as "text editing".
    expect(subjectOverlap([r("text", 1), r("editing", 0.8)], [r("text editing", 1)])).toBe(1);
    // The second phrase is not in the title when it is under half as strong, so it does not count.
    expect(subjectOverlap([r("text", 1), r("editing", 0.4)], [r("text editing", 1)])).toBe(0.5);
    expect(subjectOverlap([r("kernels", 1)], [r("kernel", 1)])).toBe(1);
    expect(subjectOverlap([r("version control", 1)], [r("git integration", 1)])).toBe(0);
    expect(subjectOverlap([], [r("git", 1)])).toBe(0);
  });

  it("shows a phrase in the form users write it", () => {
    expect(displayForm(new Map([["Inline plots", 3], ["inline plots", 2]]))).toBe("inline plots");
    expect(displayForm(new Map([["GitHub", 5], ["github", 1]]))).toBe("GitHub");
    expect(displayForm(new Map([["PDF", 4], ["pdf", 2]]))).toBe("PDF");
  });
});

describe("quotes", () => {
  const sources = new Map([
    ["s1", { extracted_text: "P16: I have to log in every single time.\nP16: The red writing stood out." }],
    ["s2", { extracted_text: "review: Login is slow" }],
  ]);

  it("keeps only quotes that are verbatim substrings of their own source", () => {
    const kept = groundQuotes(
      [
        { text: "I have to log in every single time.", source_id: "s1", speaker: "P16" },
        { text: "I have to log in every time.", source_id: "s1", speaker: "P16" }, // paraphrase
        { text: "Login is slow", source_id: "s1", speaker: null }, // wrong source
        { text: "Login is slow", source_id: "s2", speaker: null },
        { text: "Login is slow", source_id: "s2", speaker: null }, // duplicate
        { text: "login is slow", source_id: "s2", speaker: null }, // case differs
        { text: "", source_id: "s2", speaker: null },
        { text: "anything", source_id: "missing", speaker: null },
      ],
      sources,
    );
    expect(kept).toEqual([
      { text: "I have to log in every single time.", source_id: "s1", speaker: "P16" },
      { text: "Login is slow", source_id: "s2", speaker: null },
    ]);
    expect(groundQuotes([{ text: "Login is slow", source_id: "s2", speaker: null }], { s2: sources.get("s2")! })).toHaveLength(1);
  });

  it("picks central, diverse, on-topic quotes from several sources", () => {
    const v = (...x: number[]) => normalize(x);
    const q = (text: string, source_id: string) => ({ text, source_id, speaker: null });
    const picked = pickQuotes(
      [
        { quote: q("Login takes forever every morning.", "a"), sim: 0.9, vector: v(1, 0, 0) },
        { quote: q("Login takes forever every morning!", "a"), sim: 0.89, vector: v(1, 0.01, 0) },
        { quote: q("Signing in asks for two tokens each time.", "b"), sim: 0.8, vector: v(0.7, 0.7, 0), onTopic: true },
        { quote: q("I keep getting logged out of the app.", "c"), sim: 0.75, vector: v(0.6, 0, 0.8) },
        { quote: q("ok", "d"), sim: 0.95, vector: v(0, 0, 1) },
      ],
      3,
      4,
    );
    expect(picked.map((p) => p.source_id)).toEqual(expect.arrayContaining(["a", "b", "c"]));
    expect(picked.map((p) => p.text)).not.toContain("Login takes forever every morning!"); // near-duplicate
    expect(new Set(picked.map((p) => p.text)).size).toBe(picked.length);
  });
});
