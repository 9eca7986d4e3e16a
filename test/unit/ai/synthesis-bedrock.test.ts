import { readFileSync } from "node:fs";
import { BedrockRuntimeClient, ConverseCommand } from "@aws-sdk/client-bedrock-runtime";
import { mockClient } from "aws-sdk-client-mock";
import Papa from "papaparse";
import { beforeEach, describe, expect, it } from "vitest";
import { BedrockModel } from "../../../core/ai/bedrock";
import { sampleMentions, synthesizeWithModel } from "../../../core/ai/synthesis/bedrock";
import type { SynthesisSource } from "../../../core/ai/synthesis";
import { toMatrix } from "../../../core/ai/vectors";
import { fixture, hashEmbedder } from "./helpers";

const REVIEWS = "/work/shared/realdata/va-mobile-app/app-store-reviews-2024-05-partial.csv";
const NOTES = "/work/shared/realdata/va-mobile-app/interview-notes/2023-07-retention-study-participant-11.md";

/** 16 real app-store reviews (one mention each: m1..m16) and one sentence of real interview notes (m17). */
function sources(): SynthesisSource[] {
  const raw = readFileSync(REVIEWS, "utf8");
  const rows = Papa.parse<Record<string, string>>(raw, { header: true, skipEmptyLines: true }).data;
  const pick = [0, 25, 32, 35, 52, 65, 62, 12, 17, 39, 58, 20, 28, 50, 55, 51];
  return [
    {
      id: "reviews",
      title: "App store reviews May 2024",
      source_type: "survey",
      extracted_text: raw,
      units: pick.map((i) => ({ kind: "response" as const, text: rows[i].review, speaker: `row ${i + 2}`, fields: { question: "review" } })),
    },
    {
      id: "notes",
      title: "Retention study participant 11",
      source_type: "interview",
      extracted_text: readFileSync(NOTES, "utf8"),
      units: [{ kind: "paragraph" as const, text: "Having to remember all my logins and try to figure out where all my letters are." }],
    },
  ];
}

describe("synthesizeWithModel (Bedrock path, recorded response)", () => {
  const client = new BedrockRuntimeClient({ region: "us-east-1" });
  const mock = mockClient(client);
  beforeEach(() => mock.reset());
  const model = () => new BedrockModel({ client, retry: { retries: 2, minTimeoutMs: 1, maxTimeoutMs: 2 } });

  it("sends numbered mentions, rebuilds quotes from the cited mentions and grounds them", async () => {
    mock.on(ConverseCommand).resolves(fixture("converse-synthesis-insights.json"));
    const src = sources();

    const out = await synthesizeWithModel({ sources: src, model: model(), embedder: hashEmbedder() });

    const input = mock.commandCalls(ConverseCommand)[0].args[0].input;
    expect(input.toolConfig?.toolChoice).toEqual({ tool: { name: "record_insights" } });
    const prompt = (input.messages![0].content![0] as { text: string }).text;
    expect(prompt).toContain("m1 [survey: App store reviews May 2024; speaker: row 2; question: review] There’s no point of facial recognition");
    expect(prompt).toContain("m17 [interview: Retention study participant 11] Having to remember all my logins");
    expect(out.insights.map((d) => d.title)).toEqual([
      "Signing in is slow, repetitive and sometimes broken", // 2 sources
      "Claims, letters and updates fail to load", // 1 source, 5 mentions
      "Appointment reminders lack the details veterans need", // 1 source, 4 mentions
    ]);
    const login = out.insights[0];
    // Counts come from the citations, not from the model.
    expect(login.frequency).toBe(2);
    expect(login.source_ids).toEqual(["reviews", "notes"]);
    expect(login.mention_count).toBe(8);
    expect(login.insight_type).toBe("pain_point");
    const byId = new Map(src.map((s) => [s.id, s]));
    const citedTexts = new Set(src.flatMap((s) => s.units.map((u) => u.text)));
    for (const d of out.insights) {
      expect(d.quotes.length).toBeGreaterThanOrEqual(3);
      expect(d.quotes.length).toBeLessThanOrEqual(5);
      for (const q of d.quotes) {
        expect(byId.get(q.source_id)!.extracted_text.includes(q.text)).toBe(true);
        expect(citedTexts.has(q.text)).toBe(true);
      }
      expect(d.vector.length).toBe(64);
    }
    expect(login.quotes.some((q) => q.source_id === "notes" && q.speaker === null)).toBe(true);
    expect(out.summary).toMatch(/sign-in friction/);
    expect(out.usage).toMatchObject({ tier: "mid", inputTokens: 2875, outputTokens: 612, attempts: 1 });
    expect(out.usage!.costUsd).toBeCloseTo((2875 * 3 + 612 * 15) / 1e6, 12);
    expect(out.stats.quotes_grounded).toBe(out.stats.quotes_proposed);
  });

  it("repairs a response citing unknown mention ids or an invalid insight type", async () => {
    mock
      .on(ConverseCommand)
      .resolvesOnce(fixture("converse-synthesis-unknown-id.json"))
      .resolvesOnce(fixture("converse-synthesis-insights.json"));

    const out = await synthesizeWithModel({ sources: sources(), model: model(), embedder: hashEmbedder() });

    const calls = mock.commandCalls(ConverseCommand);
    expect(calls).toHaveLength(2);
    const repair = calls[1].args[0].input.messages![2].content![0].toolResult!;
    expect(repair.status).toBe("error");
    const text = (repair.content![0] as { text: string }).text;
    expect(text).toContain("unknown mention id");
    expect(text).toContain("insights.2.insight_type");
    expect(out.insights).toHaveLength(3);
    expect(out.usage!.inputTokens).toBe(2875 * 2);
  });

  it("drops quotes that are not verbatim in their source, and insights left without any", async () => {
    mock.on(ConverseCommand).resolves(fixture("converse-synthesis-insights.json"));
    const src = sources();
    // Break the extractor's invariant for the reviews: their text no longer occurs in extracted_text.
    src[0].extracted_text = src[0].extracted_text.replace(/[’']/g, "`").replace(/app/gi, "ap p").replace(/update/gi, "up date");

    const out = await synthesizeWithModel({ sources: src, model: model(), embedder: hashEmbedder() });

    expect(out.stats.quotes_grounded).toBeLessThan(out.stats.quotes_proposed);
    for (const d of out.insights) {
      for (const q of d.quotes) expect(src.find((s) => s.id === q.source_id)!.extracted_text.includes(q.text)).toBe(true);
    }
    // The login insight keeps only the grounded interview-notes quote.
    const login = out.insights.find((d) => d.title.startsWith("Signing in"))!;
    expect(login.quotes.map((q) => q.source_id)).toContain("notes");
    expect(login.quotes.every((q) => q.source_id === "notes" || src[0].extracted_text.includes(q.text))).toBe(true);
  });
});

describe("sampleMentions", () => {
  it("keeps every mention when under the cap, else samples across the semantic space", async () => {
    const emb = hashEmbedder(32);
    const groups = ["login password sign in", "appointment reminder details", "claims letters loading error"];
    const texts = groups.flatMap((g, gi) => Array.from({ length: 30 + gi * 20 }, (_, i) => `${g} variant ${i}`));
    const x = toMatrix(await emb.embed(texts), 32);

    expect(sampleMentions(x, 1000, 1)).toHaveLength(texts.length);
    const picked = sampleMentions(x, 12, 1);
    expect(picked.length).toBeLessThanOrEqual(12);
    expect(new Set(picked).size).toBe(picked.length);
    for (const g of groups) expect(picked.some((i) => texts[i].startsWith(g))).toBe(true);
    expect(sampleMentions(x, 12, 1)).toEqual(picked); // deterministic
  });
});
