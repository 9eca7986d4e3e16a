/**
 * Closed survey questions as quantitative insights (issue #11): every figure a quantitative insight states is
 * recomputed here from the survey file itself, parsed independently with papaparse (header row; an answer is blank
 * when it is empty after trimming), never from the engine's units or code.
 *
 * Files: our own fixture (test/fixtures/surveys/product-survey.csv: single choice, multi-select, a 1–5 rating, a
 * ranking grid of one column per option and a "[option]: n" ranking column, free text) and the real Jupyter 2015
 * UX survey export (/work/shared/realdata/jupyter). Both go through the production CSV extractor, mention vectors
 * precomputed as at ingestion (embedding cache shared with the other real-data tests), then `synthesize`.
 *
 * Also checked: every quote of a quantitative insight is verbatim in the source and is a span of a free-text
 * answer (never a closed answer or a number cell) written by a respondent behind the lead figure; no quote of any
 * insight holds a "[option]: n" rank pair; the cap on quantitative insights holds.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalEmbedder } from "../../../core/ai/local-embedder";
import { embedUnits, synthesize, type InsightDraft, type SynthesisOutput, type SynthesisSource } from "../../../core/ai/synthesis";
import { collectMentions } from "../../../core/ai/synthesis";
import { synthesizeWithModel } from "../../../core/ai/synthesis/bedrock";
import { SURVEY_INSIGHTS_MAX } from "../../../core/ai/synthesis/survey";
import { isStockTitle, REDACTION_RE } from "../../../core/ai/synthesis/naming";
import type { Model } from "../../../core/ai/ports";
import type { TextUnit } from "../../../core/extract/types";
import { hashEmbedder } from "./helpers";
import { extractCsv } from "../../../core/extract/csv";
import { cachedEmbedder } from "./embed-cache";
import { cell, checkFigures, checkQuotes, isQuantitative, parse } from "./survey-figures";

const FIXTURE = new URL("../../fixtures/surveys/product-survey.csv", import.meta.url).pathname;
const JUPYTER = "/work/shared/realdata/jupyter/surveys/2015-notebook-ux-survey-export.csv";
const embedder = cachedEmbedder(new LocalEmbedder());


async function run(file: string, title: string): Promise<{ source: SynthesisSource; out: SynthesisOutput }> {
  const ex = extractCsv(readFileSync(file, "utf8"));
  const base = { id: `src-${title}`, title, source_type: "survey", units: ex.units, extracted_text: ex.extracted_text };
  const source: SynthesisSource = { ...base, vectors: await embedUnits(base.units, embedder), vectors_embedder_id: embedder.id };
  return { source, out: await synthesize({ sources: [source], embedder }) };
}

const quantitative = (out: SynthesisOutput) => out.insights.filter(isQuantitative);

let fixture: { source: SynthesisSource; out: SynthesisOutput };
let jupyter: { source: SynthesisSource; out: SynthesisOutput };

beforeAll(async () => {
  fixture = await run(FIXTURE, "product-survey.csv");
  jupyter = await run(JUPYTER, "2015-notebook-ux-survey-export.csv");
}, 300_000);

afterAll(() => LocalEmbedder.shutdown());

describe("quantitative insights from closed survey questions", () => {
  it("fixture: single choice, multi-select, rating and both ranking forms, every figure recomputed from the file", () => {
    const f = parse(FIXTURE);
    const idCol = f.header.indexOf("Respondent ID");
    const rowOf = (speaker: string) => f.rows.findIndex((r) => cell(r, idCol) === speaker);
    const free = [f.header.indexOf("What is the biggest problem you face with the product?"), f.header.indexOf("What would you like us to build next?")];
    const q = quantitative(fixture.out);
    const titles = q.map((d) => d.title).join("\n");
    // The four kinds are all there (the fixture is built so each deserves an insight).
    expect(titles).toMatch(/^\d+% of respondents \(\d+ of 40\) answered “Daily” for “How often do you use the product\?”$/m);
    expect(titles).toMatch(/chose “Dashboards” for “Which features do you use\?/);
    expect(titles).toMatch(/^Mean rating [\d.]+ on a 1–5 scale for “How satisfied/m);
    expect(titles).toMatch(/^“Installation” ranked first on average for “Rank these challenges/m);
    expect(titles).toMatch(/ranked first on average for “Order these improvements by importance”/);
    expect(q.length).toBeLessThanOrEqual(SURVEY_INSIGHTS_MAX);
    for (const d of q) {
      const lead = checkFigures(d, f, rowOf);
      checkQuotes(d, fixture.source, f, lead, rowOf, free);
      expect(d.frequency).toBe(1);
      expect(d.severity).not.toBe("critical");
    }
    // The challenge ranking is a problem; the satisfaction rating (mean above the midpoint) is not.
    expect(q.find((d) => d.title.includes("Rank these challenges"))!.insight_type).toBe("pain_point");
    expect(q.find((d) => d.title.startsWith("Mean rating"))!.insight_type).toBe("feedback_theme");
    // No rank cell leaks anywhere.
    for (const d of fixture.out.insights) for (const qt of d.quotes) expect(qt.text).not.toMatch(/\[[^\]]+\]\s*:\s*\d/);
  });

  it("Jupyter 2015 survey: usage frequency, how it is run and the words that describe it, every figure recomputed", () => {
    const f = parse(JUPYTER);
    // No id column: the extractor names respondents by data row ("respondent 12" = 12th data row).
    const rowOf = (speaker: string) => Number(/^respondent (\d+)$/.exec(speaker)![1]) - 1;
    const free = f.header.flatMap((h, c) => (/^(What,|Tool|Workflow|Aspect|Feature|Enhancement|Other)/.test(h) ? [c] : []));
    const q = quantitative(jupyter.out);
    const titles = q.map((d) => d.title).join("\n");
    expect(titles).toContain("answered “Daily” for “How often do you use Jupyter Notebook?”");
    expect(titles).toContain("answered “As a standalone application” for “How do you run the Jupyter Notebook?”");
    expect(titles).toContain("chose “convenient” for “Select all the words that best describe Jupyter Notebook.”");
    expect(q.length).toBeGreaterThanOrEqual(4);
    expect(q.length).toBeLessThanOrEqual(SURVEY_INSIGHTS_MAX);
    for (const d of q) checkQuotes(d, jupyter.source, f, checkFigures(d, f, rowOf), rowOf, free);
    // The closed answers never became mentions: the themes' quotes are free text only.
    const closed = new Set(f.header.filter((h) => /^(How often|Roughly how long|How do you run|Select all|How many)/.test(h)).map((h) => f.header.indexOf(h)));
    for (const d of jupyter.out.insights)
      for (const qt of d.quotes) expect(f.rows.some((r) => [...closed].some((c) => cell(r, c) === qt.text.trim()))).toBe(false);
  });

  it("never lets a rank cell become a mention, whether a survey answer or a row of a ranking export", async () => {
    const pair = "[Getting others within your company / community to use the software]: 4";
    const units: TextUnit[] = [
      { kind: "response", text: pair, speaker: "respondent 1", fields: { question: "Rank the challenges" } },
      { kind: "row", text: `Organisation: Acme; ${pair}; [Installing the software]: 1`, locator: "row 2" },
      { kind: "response", text: "Installing it behind our proxy took two days of back and forth with IT.", speaker: "respondent 1", fields: { question: "What got in the way?" } },
    ];
    const source = { id: "s", title: "ranking.csv", source_type: "survey", units, extracted_text: units.map((u) => u.text).join("\n") };
    const corpus = await collectMentions([source], hashEmbedder());
    expect(corpus.mentions.map((m) => m.span.text)).toEqual(["Installing it behind our proxy took two days of back and forth with IT."]);
    expect(corpus.stats.dropped.structured_answer_units).toBe(2);
  });

  it("the model engines (Bedrock, openai-compatible) state the same figures, computed from the answers, and never send a closed answer to the model", async () => {
    const prompts: string[] = [];
    // A model that finds no theme: whatever the engine returns besides is computed, not generated.
    const model: Model = {
      async structured<T>(req: { messages: { text: string }[] }) {
        prompts.push(req.messages.map((m) => m.text).join("\n"));
        const usage = { modelId: "fake", tier: "mid" as const, inputTokens: 0, outputTokens: 0, costUsd: 0, latencyMs: 0, attempts: 1 };
        return { output: { insights: [], summary: "No theme." } as T, usage };
      },
    } as Model;
    const out = await synthesizeWithModel({ sources: [fixture.source], model, embedder });
    const strip = (d: InsightDraft) => ({ ...d, vector: Array.from(d.vector) });
    expect(out.insights.map(strip)).toEqual(quantitative(fixture.out).map(strip));
    expect(prompts.join("\n")).not.toMatch(/\] (Daily|Weekly|Monthly)$|\[Speed\]: \d/m);
  });
});

describe("a survey's open questions (Jupyter 2015 UX survey)", () => {
  const themes = () => jupyter.out.insights.filter((d) => !isQuantitative(d));
  const questionOf = (d: InsightDraft) => /answering “([^”]*)”/.exec(d.description)?.[1] ?? "";

  it("titles are the answers' own words: at most 1 in 5 is a keyword template, none carries a redaction marker", () => {
    const all = themes();
    const stock = all.filter((d) => isStockTitle(d.title));
    expect(all.length).toBeGreaterThanOrEqual(30);
    expect(stock.length, stock.map((d) => d.title).join("\n")).toBeLessThanOrEqual(all.length / 5);
    for (const d of all) expect(d.title).not.toMatch(REDACTION_RE);
  });

  it("one question's answers naming one subject in the respondents' synonyms are one theme (git / version control)", () => {
    const features = themes().filter((d) => questionOf(d).startsWith("What new features or changes"));
    expect(features.length).toBeGreaterThanOrEqual(10);
    const versionControl = features.filter((d) => (d.keyphrases ?? []).slice(0, 2).some((k) => /^(git\b|version control|source control|diffs?$)/i.test(k)));
    expect(versionControl.map((d) => d.title)).toHaveLength(1);
    // …and that theme holds the answers of both wordings.
    const quotes = versionControl[0]!.quotes.map((q) => q.text).join("\n");
    expect(quotes).toMatch(/\bgit/i);
    expect(versionControl[0]!.mention_count).toBeGreaterThanOrEqual(40);
  });
});
