import { describe, expect, it } from "vitest";
import { classifyType, cueShares, impactClause, mentionCues, severityOf, strongPhrases, type Cues } from "../../../core/ai/synthesis/classify";
import { unitMentions } from "../../../core/ai/synthesis/mentions";
import {
  clausesOf,
  compressClause,
  displayForm,
  distinctTop,
  insightTitle,
  isStockTitle,
  mentionPhrases,
  phraseKey,
  phraseSpread,
  rankPhrases,
  REDACTION_RE,
  sentenceTitle,
  subjectOverlap,
  titleFor,
  titleSubject,
  type RankedPhrase,
  type TitleMention,
} from "../../../core/ai/synthesis/naming";
import { groundQuotes, MAX_QUOTE_CHARS, pickQuotes } from "../../../core/ai/synthesis/quotes";
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
    const s = (o: Partial<ReturnType<typeof cueShares>>) => ({ pain: 0, request: 0, positive: 0, behavior: 0, unmet: 0, intense: 0, strong: 0, strongMentions: 0, ...o });
    expect(classifyType(s({ pain: 0.5, request: 0.2 })).type).toBe("pain_point");
    expect(classifyType(s({ pain: 0.3, request: 0.35 })).type).toBe("pain_point"); // close: the problem wins
    expect(classifyType(s({ pain: 0.1, request: 0.6 })).type).toBe("feature_request");
    expect(classifyType(s({ pain: 0.25, positive: 0.4 })).type).toBe("pain_point"); // praise mixed with complaints
    expect(classifyType(s({ unmet: 0.4 })).type).toBe("opportunity");
    expect(classifyType(s({ behavior: 0.5 })).type).toBe("behavior");
    expect(classifyType(s({ positive: 0.6 }))).toEqual({ type: "feedback_theme", positive: true });
    expect(classifyType(s({ positive: 0.6, pain: 0.2 }))).toEqual({ type: "feedback_theme", positive: true });
    expect(classifyType(s({}))).toEqual({ type: "feedback_theme", positive: false });

    expect(severityOf("pain_point", 1, 10, 3, s({ pain: 0.8, intense: 0.4, strong: 0.4, strongMentions: 4 }))).toBe("critical");
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
    // A three-word compound also gives its two-word modifier, which other mentions use alone.
    expect(phrasesOf("Having access to the community care letters would help").map((p) => p.key)).toContain("community care");
    // A leading abbreviation is dropped, not the phrase.
    expect(phrasesOf("I was at the D.C Medical center last week").map((p) => p.key)).toContain("medical center");
    // However signing in is written, it is one phrase, shown as written; a light verb makes no phrase.
    for (const [t, surface] of [["It logs me in where I need to be", "logs me in"], ["My healthy Vet log-in is what I use", "log-in"], ["I had to sign in twice", "sign in"]]) {
      expect(phrasesOf(t).find((p) => p.key === "login")?.surface, t).toBe(surface);
    }
    expect(phrasesOf("I signed the form and logged the hours").map((p) => p.key)).not.toContain("login");
    expect(phrasesOf("Having ways to reach my doctor").map((p) => p.key)).not.toContain("having way");
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
    const third = ["sharing a notebook with a colleague", "my team opens the notebook"].map(phrasesOf);
    const global = new Map<string, number>();
    for (const list of [...cluster, ...other, ...third]) for (const p of list) global.set(p.key, (global.get(p.key) ?? 0) + 1);
    const spread = phraseSpread([cluster, other, third]);
    expect(spread.get("notebook")).toBe(1);
    // Two themes of two sharing a phrase do not make it the product's name: a domain word needs three themes.
    expect(phraseSpread([cluster, other]).get("notebook")).toBe(0);
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

  it("names a two-mention theme of one voice by a phrase of either mention, and only one voice's", () => {
    const pair = ["I have a pending claim that has been sitting for 3 years.", "I'm trying to get a hold of my rep, but he just tells me it's still sitting."].map(phrasesOf);
    const global = new Map<string, number>();
    for (const list of pair) for (const p of list) global.set(p.key, (global.get(p.key) ?? 0) + 1);
    const ranked = rankPhrases(pair, global, 2, new Map(), 20, ["note", "note"]);
    expect(ranked[0]?.key).toBe("pending claim");
    // Two people's single remarks share nothing: no name.
    expect(rankPhrases(pair, global, 2, new Map(), 20, ["r1", "r2"])).toEqual([]);
    // When the two mentions share a phrase, only shared phrases name it.
    const shared = ["My healthy Vet log-in is what I usually use.", "If you can log in with my Healthy vet, it would be okay."].map(phrasesOf);
    const g2 = new Map<string, number>();
    for (const list of shared) for (const p of list) g2.set(p.key, (g2.get(p.key) ?? 0) + 1);
    expect(rankPhrases(shared, g2, 2, new Map(), 20, ["note", "note"]).every((p) => p.count === 2)).toBe(true);
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

  it("cuts a quote past MAX_QUOTE_CHARS at a word break, keeping its beginning: still verbatim, and 12 of them fit an item", () => {
    // One paragraph with no sentence break (a mention kept whole): 60,000 characters.
    const paragraph = Array.from({ length: 6_000 }, (_, i) => `word${i % 97}`).join(" ");
    const [quote] = groundQuotes([{ text: paragraph, source_id: "long", speaker: null }], { long: { extracted_text: `Intro. ${paragraph} Outro.` } });
    expect(quote!.text.length).toBeLessThanOrEqual(MAX_QUOTE_CHARS);
    expect(quote!.text.length).toBeGreaterThan(MAX_QUOTE_CHARS / 2);
    expect(paragraph.startsWith(quote!.text)).toBe(true);
    expect(paragraph[quote!.text.length]).toBe(" ");
    expect(Buffer.byteLength(JSON.stringify(Array(12).fill(quote)))).toBeLessThan(100_000);
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

describe("severity words come from the evidence", () => {
  it("finds explicit blocking failures only where a mention says them", () => {
    expect(strongPhrases("The app crashes every time I open my letters")).toEqual(["crashes"]);
    expect(strongPhrases("I can't log in since the update and I'm locked out")).toEqual(["can't log in", "locked out"]);
    expect(strongPhrases("This means the user lost days of work")).toEqual(["lost days of work"]);
    expect(strongPhrases("It never crashed, not once")).toEqual([]);
    expect(strongPhrases("Login is very slow and really annoying")).toEqual([]);
    // Emphatic pain is intense but not blocking.
    expect(cues("Login is very slow and really annoying")).toMatchObject({ pain: true, intense: true, strong: [] });
    expect(cues("The app crashes every time I open my letters")).toMatchObject({ pain: true, intense: true, strong: ["crashes"] });
  });

  it("grades critical only with explicit blocking evidence in at least two mentions", () => {
    const annoyed = ["Login is very slow and really annoying", "Signing in is so frustrating", "The login is extremely tedious", "I hate the login so much"].map((t) => cues(t));
    const sharesA = cueShares(annoyed);
    expect(sharesA.pain).toBe(1);
    expect(sharesA.strongMentions).toBe(0);
    // Widespread and intensely worded, but nobody says it blocks them: high at most.
    expect(severityOf("pain_point", 1, 10, 3, sharesA)).toBe("high");
    const blocked = ["I can't log in since the update", "I was locked out again this morning", "Login is very slow and really annoying", "Signing in is so frustrating"].map((t) => cues(t));
    expect(severityOf("pain_point", 1, 10, 3, cueShares(blocked))).toBe("critical");
    // One blocking mention is not enough.
    const once = ["I can't log in since the update", ...annoyed.slice(1)];
    expect(severityOf("pain_point", 1, 10, 3, cueShares(once.map((t) => (typeof t === "string" ? cues(t) : t))))).not.toBe("critical");
  });

  it("describes impact with the words the mentions used, and says nothing when none did", () => {
    const annoyed = ["Login is very slow and really annoying", "Signing in is so frustrating"].map((t) => cues(t));
    expect(impactClause(annoyed)).toBe("");
    const blocked = ["I can't log in since the update", "I still can't log in to the app today", "I was locked out again this morning", "Signing in is so frustrating"].map((t) => cues(t));
    const clause = impactClause(blocked);
    expect(clause).toBe("; 3 of 4 describe a blocking failure (“can't log in”, “locked out”)");
    expect(clause).not.toMatch(/crash|lost|data/);
  });
});

describe("sentence titles from the evidence", () => {
  const tokens = (t: string) => unitMentions({ kind: "response", text: t })[0].tokens;
  const users = { noun: "Users", plural: true };
  const one = { noun: "The participant", plural: false };

  it("compresses a clause: fillers and hedges out, first person to the subject, implied subjects restored", () => {
    expect(compressClause(tokens("Honestly, I think I have to re-enter my password every single time I open the app"), users)).toBe(
      "Users have to re-enter their password every single time they open the app",
    );
    expect(compressClause(tokens("I use the refill feature every week to order my meds"), one)).toBe("The participant uses the refill feature every week to order their meds");
    expect(compressClause(tokens("Can't log in after the update"), users)).toBe("Users can't log in after the update");
    expect(compressClause(tokens("So you need to test your infrastructure before every release"), one)).toBe("The participant needs to test their infrastructure before every release");
    expect(compressClause(tokens("Keeps asking me to re-enter my password"), users)).toBe("It keeps asking users to re-enter their password");
    expect(compressClause(tokens("Add a way to save drafts of my messages"), users)).toBe("Users ask to add a way to save drafts of their messages");
    expect(compressClause(tokens("Shorten the loading time of the binder please"), users, undefined, true)).toBe("Users ask to shorten the loading time of the binder");
    expect(compressClause(tokens("The veteran said that the pharmacy tab is hard to find"), users)).toBe("The pharmacy tab is hard to find");
    expect(compressClause(tokens("You know, I really just love the refill feature"), users)).toBe("Users love the refill feature");
    // A note's "Having to …" is the participant's burden, given its subject.
    expect(compressClause(tokens("Having to remember all my logins and passwords"), one)).toBe("The participant has to remember all their logins and passwords");
    expect(compressClause(tokens("Having to remember all my logins and passwords"), users)).toBe("Users have to remember all their logins and passwords");
  });

  it("cuts long clauses at a boundary and rejects fragments", () => {
    const long = compressClause(tokens("I'm stuck on a loop where I complete the sign in process and it brings me back to the sign in all over again"), users);
    expect(long).toBe("Users are stuck on a loop where they complete the sign in process");
    expect(long!.length).toBeLessThanOrEqual(80);
    expect(compressClause(tokens("If the app crashes again I will delete it"), users)).toBeUndefined(); // subordinate opening
    expect(compressClause(tokens("A prompt that allows users to move focus to the main area"), users)).toBeUndefined(); // no main verb
    expect(compressClause(tokens("Of the assistive tech used by participants in this study"), users)).toBeUndefined();
    expect(compressClause(tokens("Great app"), users)).toBeUndefined(); // too short to state a finding
  });

  it("keeps a short aside in parentheses, leaves a long one out, drops one a cut left open, and rejects restarts and pleasantries", () => {
    expect(compressClause(tokens("The notebook (and all documents) are auto-saved every 2 minutes by default"), users)).toBe(
      "The notebook (and all documents) are auto-saved every 2 minutes by default",
    );
    expect(compressClause(tokens("I prefer binder over Colab (particularly because I can bundle in files and the environment with the repository"), users)).toBe(
      "Users prefer binder over Colab",
    );
    const span = unitMentions({ kind: "paragraph", text: "Coarse grain (moving between large sections like the main document area, menu bar, side bars, etc.) navigation needs much more attention." })[0];
    const [clause] = clausesOf(span);
    expect(compressClause(clause, users)).toBe("Coarse grain navigation needs much more attention");
    expect(compressClause(tokens("We are they are they want a particular situation"), users)).toBeUndefined();
    expect(compressClause(tokens("I thank you for having me on the show today"), users)).toBeUndefined();
  });

  it("a survey answer that is a noun phrase names its theme as it stands (verbless), never given a subject", () => {
    expect(compressClause(tokens("A prompt that allows users to move focus"), users)).toBeUndefined();
    expect(compressClause(tokens("Quick data exploration and visualization"), users, undefined, false, true)).toBe("Quick data exploration and visualization");
    expect(compressClause(tokens("Complicated data analysis"), users, undefined, false, true)).toBe("Complicated data analysis");
    expect(compressClause(tokens("Docker containers"), users, undefined, false, true)).toBeUndefined(); // too short to name a finding
  });

  // A pain-point cluster about passwords from four voices, plus one respondent's own words and a redacted line.
  const mention = (text: string, sim: number, voice: string): TitleMention => ({ span: unitMentions({ kind: "response", text })[0], sim, voice });
  const cluster = [
    mention("REDACTED has to re-enter the password every time", 0.95, "v5"),
    mention("I love that the password screen is blue", 0.9, "v1"),
    mention("I have to re-enter my password every time I open the app", 0.8, "v2"),
    mention("Having to type the password every time is a pain", 0.75, "v3"),
    mention("The password resets every time and I have to re-enter it", 0.7, "v4"),
    mention("My password smells of quetzal feathers and libertad", 0.85, "v6"),
  ];
  const phrase = (key: string, count: number): RankedPhrase => ({ key, surface: key, count, score: 1, domain: false });

  it("names a theme with its most central shared clause that states the finding, never a redaction or one voice's words", () => {
    const title = sentenceTitle(cluster, [phrase("password", 6)], "pain_point", false, users);
    expect(title).toBe("Users have to re-enter their password every time they open the app");
    expect(title).not.toMatch(REDACTION_RE);
    expect(isStockTitle(title!)).toBe(false);
    // Praise is never the title of a problem; a complaint never the title of praise.
    const praise = sentenceTitle(cluster, [phrase("password", 6)], "feedback_theme", true, users);
    expect(praise ?? "").not.toMatch(/re-enter|pain/);
  });

  it("falls back to the keyphrase template only when no clause qualifies", () => {
    const noSentence = [mention("the password", 0.9, "v1"), mention("Password again!", 0.8, "v2"), mention("password, password", 0.7, "v3")];
    expect(sentenceTitle(noSentence, [phrase("password", 3)], "pain_point", false, users)).toBeUndefined();
    expect(insightTitle(noSentence, [phrase("password", 3)], "pain_point", false, users)).toBe("Users struggle with password");
    expect(isStockTitle("Users struggle with password")).toBe(true);
    // A keyphrase only one voice uses does not name a multi-voice theme.
    expect(sentenceTitle(cluster, [phrase("libertad", 3)], "pain_point", false, users)).toBeUndefined();
    // Without the shared clauses, the one-voice clause (most words its own) still does not become the title.
    expect(sentenceTitle([cluster[5], cluster[0], cluster[1]], [phrase("password", 3)], "pain_point", false, users)).toBeUndefined();
  });

  it("damps a phrase only one respondent uses in a theme with several voices", () => {
    const phrasesOf = (t: string) => mentionPhrases(unitMentions({ kind: "response", text: t })[0]);
    const members = ["libertad para todos", "more libertad please", "libertad and justice", "the mission statement is vague", "our mission statement is clear"].map(phrasesOf);
    const global = new Map<string, number>();
    for (const list of members) for (const p of list) global.set(p.key, (global.get(p.key) ?? 0) + 1);
    const score = (ranked: RankedPhrase[], key: string) => ranked.find((r) => r.key === key)!.score;
    const plain = rankPhrases(members, global, 5);
    const voiced = rankPhrases(members, global, 5, new Map(), Infinity, ["r1", "r1", "r1", "r2", "r3"]);
    expect(score(voiced, "libertad")).toBeCloseTo(0.3 * score(plain, "libertad"), 9);
    expect(score(voiced, "mission statement")).toBeCloseTo(score(plain, "mission statement"), 9);
    expect(voiced[0].key).toBe("mission statement");
    // With one voice there is no one else to share a word with: nothing is damped.
    const single = rankPhrases(members, global, 5, new Map(), Infinity, ["r1", "r1", "r1", "r1", "r1"]);
    expect(score(single, "libertad")).toBeCloseTo(score(plain, "libertad"), 9);
  });

  it("says who: one voice is the participant, interviews are participants, the rest users", () => {
    expect(titleSubject(1, ["interview"])).toEqual({ noun: "The participant", plural: false });
    expect(titleSubject(3, ["interview"])).toEqual({ noun: "Participants", plural: true });
    expect(titleSubject(3, ["interview", "feedback"])).toEqual({ noun: "Users", plural: true });
  });

  it("recognises redaction markers", () => {
    for (const t of ["REDACTED", "[redacted]", "[Name]", "XXX", "***", "<name>", "{name}", "█"]) expect(`Users value ${t} and project`).toMatch(REDACTION_RE);
    for (const t of ["Users value the project", "Export to XLSX", "a 3-star review"]) expect(t).not.toMatch(REDACTION_RE);
  });
});
