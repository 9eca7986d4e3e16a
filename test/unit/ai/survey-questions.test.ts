/**
 * Surveys analysed one open question at a time (issue #11, core/ai/synthesis/questions.ts). A small survey of our
 * own: a much-answered question about what slows respondents down (five subjects, eight answers each) and a less
 * answered one about what they would add (two subjects, four answers each). Pooled under a small cap, the first
 * question's themes take every place; question by question, the second keeps its own. The bag-of-words test
 * embedder stands in for the model: answers sharing words are alike, which is all the fixture relies on.
 */
import { describe, expect, it } from "vitest";
import { synthesize, type SynthesisOutput, type SynthesisSource } from "../../../core/ai/synthesis";
import { allocateThemes, questionLabel, questionSegments, questionStems, surveyThemeCap } from "../../../core/ai/synthesis/questions";
import type { TextUnit } from "../../../core/extract/types";
import { hashEmbedder } from "./helpers";

const SLOW = "What slows you down most when you use the app?";
const ADD = "Feature #1:What one feature would you add to the app? (Anything goes.)";
const ADD2 = "Feature #2:What one feature would you add to the app? (Anything goes.)";

const slowAnswers: Record<string, string[]> = {
  sync: ["sync between phone and laptop", "the sync between devices", "phone sync is slow", "laptop sync lags", "waiting for sync", "sync conflicts between devices", "slow sync on my phone", "sync of notes between laptop and phone"],
  login: ["login every morning", "the login screen again", "login codes by email", "slow login", "login expires daily", "repeated login prompts", "login on every device", "login with two factor codes"],
  search: ["search misses old notes", "search results are wrong", "slow search", "search without filters", "search ignores tags", "search by date missing", "search for attachments fails", "search returns duplicates"],
  export: ["export to pdf breaks", "export loses formatting", "slow export", "export of attachments", "export to word fails", "export takes minutes", "export to csv missing", "export of tables breaks"],
  upload: ["upload of photos stalls", "upload fails on wifi", "slow upload", "photo upload limits", "upload progress hidden", "upload retries forever", "upload of videos fails", "upload queue stuck"],
};
const addAnswers: Record<string, string[]> = {
  dark: ["dark mode theme for the editor", "a dark mode theme at night", "dark mode theme please", "dark mode theme option"],
  calendar: ["calendar view of due notes", "calendar view with reminders", "weekly calendar view of notes", "calendar view of notes by week"],
};

function survey(sourceType: string): SynthesisSource {
  const units: TextUnit[] = [];
  let r = 0;
  for (const list of Object.values(slowAnswers)) for (const text of list) units.push({ kind: "response", text, speaker: `respondent ${++r}`, fields: { question: SLOW } });
  r = 0;
  for (const list of Object.values(addAnswers))
    list.forEach((text, i) => units.push({ kind: "response", text, speaker: `respondent ${++r}`, fields: { question: i % 2 ? ADD2 : ADD } }));
  return { id: `survey-${sourceType}`, title: "notes-app-survey.csv", source_type: sourceType, units, extracted_text: units.map((u) => `- ${u.text}`).join("\n") };
}

const themesOf = (out: SynthesisOutput) => out.insights.filter((d) => !/^\d+ respondents of “/.test(d.description));
const about = (out: SynthesisOutput, word: string) => themesOf(out).filter((d) => d.quotes.some((q) => q.text.includes(word)));

describe("a survey, one open question at a time", () => {
  it("gives the less answered question its own themes where pooling crowds them out", async () => {
    const embedder = hashEmbedder(256);
    const options = { maxInsights: 4 };
    // The same answers typed as feedback are one body of text: the first question's five subjects fill the cap.
    const pooled = await synthesize({ sources: [survey("feedback")], embedder, options });
    expect(themesOf(pooled)).toHaveLength(4);
    expect(about(pooled, "dark")).toHaveLength(0);
    expect(about(pooled, "calendar")).toHaveLength(0);

    const source = survey("survey");
    const out = await synthesize({ sources: [source], embedder, options });
    // Cap 4 + 10 for the second question; the first keeps four or more, the second both of its subjects.
    const themes = themesOf(out);
    expect(themes.length).toBeLessThanOrEqual(surveyThemeCap(4, 2));
    expect(about(out, "sync").length + about(out, "login").length + about(out, "search").length + about(out, "export").length + about(out, "upload").length).toBeGreaterThanOrEqual(4);
    for (const word of ["dark", "calendar"]) {
      const [d] = about(out, word);
      expect(d, word).toBeDefined();
      // Its quotes are answers to its own question only, and the description says which question that is.
      for (const q of d.quotes) expect(Object.values(addAnswers).flat()).toContain(q.text);
      expect(d.description).toContain("answering “What one feature would you add to the app?”");
    }
    for (const d of about(out, "sync")) expect(d.description).toContain(`answering “${SLOW}”`);
    for (const d of themes) for (const q of d.quotes) expect(source.extracted_text).toContain(q.text);
    expect(out.summary).toContain("question by question (2 open questions)");
  });

  it("groups the columns of one question, keeps a lone ' - ' header whole, and leaves mixed inputs pooled", () => {
    const stems = questionStems([ADD, ADD2, "Speed - anything else?", SLOW]);
    expect(stems.get(ADD)).toBe(stems.get(ADD2));
    expect(stems.get(ADD)).toBe("What one feature would you add to the app? (Anything goes.)");
    expect(stems.get("Speed - anything else?")).toBe("Speed - anything else?");
    expect(questionLabel(stems.get(ADD)!)).toBe("What one feature would you add to the app?");

    const s = survey("survey");
    const mentions = s.units.map((_, unitIndex) => ({ sourceIndex: 0, unitIndex }));
    const segments = questionSegments(mentions, [s])!;
    expect(segments.map((g) => [g.question, g.members.length])).toEqual([
      [SLOW, 40],
      ["What one feature would you add to the app?", 8],
    ]);
    const interview: SynthesisSource = { id: "i", title: "interview.md", source_type: "interview", units: [{ kind: "paragraph", text: "x" }], extracted_text: "x" };
    expect(questionSegments([...mentions, { sourceIndex: 1, unitIndex: 0 }], [s, interview])).toBeNull();
    // One open question: nothing to split.
    const one = { ...s, units: s.units.filter((u) => u.fields?.question === SLOW) };
    expect(questionSegments(one.units.map((_, unitIndex) => ({ sourceIndex: 0, unitIndex })), [one])).toBeNull();
  });

  it("shares the cap: a floor per question, the rest in proportion to answers, unused places to the others", () => {
    // Floors first (3 each), then D'Hondt on answers: 900 vs 100 answers.
    expect(allocateThemes([900, 100], [20, 20], 12)).toEqual([9, 3]);
    // A question with fewer themes than its share passes the rest on.
    expect(allocateThemes([900, 100], [4, 20], 12)).toEqual([4, 8]);
    // Floors go to the most answered questions when the cap cannot hold them all.
    expect(allocateThemes([10, 30, 20], [5, 5, 5], 7)).toEqual([1, 3, 3]);
    expect(allocateThemes([1, 1], [0, 2], 10)).toEqual([0, 2]);
    // The cap grows by 10 per extra question, at most three times the base.
    expect(surveyThemeCap(25, 1)).toBe(25);
    expect(surveyThemeCap(25, 2)).toBe(35);
    expect(surveyThemeCap(25, 8)).toBe(75);
    expect(surveyThemeCap(25, 40)).toBe(75);
  });
});
