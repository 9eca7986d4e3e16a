import { describe, expect, it } from "vitest";
import { toolInputSchema } from "../../../core/ai/bedrock";
import { AppError } from "../../../core/error";
import { validateBlockContent } from "../../../core/document/blocks";
import {
  challengeBlockWithModel,
  draftDocumentWithModel,
  draftToolSchema,
  expandBlockWithModel,
  expandToolSchema,
  simulateBlockWithModel,
} from "../../../core/document/engine/bedrock";
import { checkGrounding } from "../../../core/document/engine/grounding";
import { documentEngine, localDocumentEngine } from "../../../core/document/engine";
import type { ActionBlock } from "../../../core/document/engine/types";
import { extractBlocks } from "../../../core/document/markdown";
import { INSIGHT_PROMPT_CHARS, generateRecommendationsWithModel, insightsForPrompt, recommendationsToolSchema } from "../../../core/recommendation/engine/bedrock";
import { localRecommendationEngine, recommendationEngine } from "../../../core/recommendation/engine";
import { BLOCK_TYPES } from "../../../core/document/blocks";
import { ReplayModel, fixture, vaInsights } from "./fake-model";

const all = vaInsights();
const pick = (titles: string[]) => titles.map((t) => all.find((i) => i.title === t)!);

describe("recommendations with the model (replayed)", () => {
  const f = fixture<{ insight_titles: string[] }>("generate.json");
  const insights = pick(f.insight_titles);

  it("sends the grounding rules, the insights with ids and quotes, and the focus areas", async () => {
    const model = ReplayModel.fromFixture("generate.json");
    const { result, usage } = await generateRecommendationsWithModel(model, { insights, focus_areas: ["sign-in"], product: { product_name: "VA app" } });
    const req = model.requests[0];
    expect(req.tier).toBe("mid");
    expect(req.tool.name).toBe("record_recommendations");
    expect(req.system).toMatch(/only ids from the list/);
    expect(req.system).toMatch(/copied verbatim/);
    const text = req.messages[0].text;
    for (const i of insights) expect(text).toContain(`id ${i.id}`);
    expect(text).toContain(`“${insights[0].quotes[0].text}”`);
    expect(text).toContain("Focus areas: sign-in");
    expect(text).toContain("Product: VA app");
    expect(result.recommendations).toHaveLength(4);
    expect(result.prioritization_summary).toMatch(/reach × impact/);
    expect(usage.inputTokens).toBe(3120);
    expect(usage.costUsd).toBeGreaterThan(0);
  });

  it("normalises effort_estimate from effort_weeks", async () => {
    const model = ReplayModel.fromFixture("generate.json");
    const { result } = await generateRecommendationsWithModel(model, { insights });
    expect(result.recommendations.map((r) => [r.effort_weeks, r.effort_estimate])).toEqual([[3, "medium"], [2, "small"], [2, "small"], [1.5, "small"]]);
  });

  it("rejects unknown insight ids and invented quotes, so the adapter repairs them", async () => {
    const model = ReplayModel.fromFixture("generate-repair.json");
    const { result, usage } = await generateRecommendationsWithModel(model, { insights });
    expect(model.rejected).toHaveLength(1);
    expect(model.rejected[0]).toMatch(/unknown insight id/);
    expect(model.rejected[0]).toMatch(/not a verbatim quote/);
    const ids = new Set(insights.map((i) => i.id));
    for (const r of result.recommendations) for (const id of r.addresses_insight_ids!) expect(ids.has(id)).toBe(true);
    expect(usage.attempts).toBe(2);
  });

  it("fails with INTERNAL when no grounded answer comes back", async () => {
    const bad = fixture<{ responses: { output: unknown; usage: { inputTokens: number; outputTokens: number } }[] }>("generate-repair.json").responses[0];
    await expect(generateRecommendationsWithModel(new ReplayModel([bad, bad]), { insights })).rejects.toMatchObject({ code: "INTERNAL" });
  });

  it("fits the largest request the API accepts (200 insights at their longest) in the prompt's room, strongest first in detail", async () => {
    const long = (n: number, word: string) => `${word} `.repeat(Math.ceil(n / (word.length + 1))).slice(0, n);
    const many = Array.from({ length: 200 }, (_, k) => ({
      id: `00000000-0000-4000-8000-${String(k).padStart(12, "0")}`,
      title: long(500, `title${k}`),
      description: long(10_000, "description"),
      insight_type: "pain_point",
      severity: k === 150 ? ("critical" as const) : ("low" as const),
      frequency: 1,
      mention_count: 3,
      quotes: Array.from({ length: 4 }, (_, q) => ({ text: long(5_000, `quote${k}x${q}`), source_id: "s1", speaker: "respondent" })),
    }));
    const shown = insightsForPrompt(many);
    expect(shown.text.length).toBeLessThanOrEqual(INSIGHT_PROMPT_CHARS);
    expect(shown.omitted).toBe(0);
    expect(shown.detailed).toBeGreaterThan(0);
    expect(shown.brief).toBe(200 - shown.detailed);
    for (const i of many) expect(shown.text).toContain(`id ${i.id}`);
    // the critical insight is ranked first, so it is among those shown with their quotes
    const critical = shown.text.slice(shown.text.indexOf(`id ${many[150]!.id}`)).split("\n- id ")[0]!;
    expect(critical).toContain("quotes:");
    // the model sees the same lines and is told how they were shortened
    const model = ReplayModel.fromFixture("generate.json");
    // the replayed answer cites the fixture's insights, not these: only the request matters here
    await generateRecommendationsWithModel(model, { insights: many }).catch(() => undefined);
    expect(model.requests[0].messages[0].text).toContain(`200 insights, the ${shown.detailed} strongest with description and quotes, ${shown.brief} by title only`);
    expect(model.requests[0].messages[0].text.length).toBeLessThan(INSIGHT_PROMPT_CHARS + 1_000);
  });

  it("a small request is sent whole, as before", () => {
    const shown = insightsForPrompt(insights);
    expect(shown).toMatchObject({ detailed: insights.length, brief: 0, omitted: 0 });
    expect(shown.text).toContain(`“${insights[0].quotes[0].text.replace(/\s+/g, " ").trim()}”`);
  });

  it("refuses an empty insight list before calling the model", async () => {
    const model = new ReplayModel([]);
    await expect(generateRecommendationsWithModel(model, { insights: [] })).rejects.toBeInstanceOf(AppError);
    expect(model.requests).toHaveLength(0);
  });

  it("tool schemas convert to Bedrock JSON schema", () => {
    expect(toolInputSchema(recommendationsToolSchema(insights))).toMatchObject({ type: "object", required: ["recommendations", "prioritization_summary"] });
    expect(toolInputSchema(draftToolSchema(insights, []))).toMatchObject({ type: "object" });
    for (const t of BLOCK_TYPES) expect(toolInputSchema(expandToolSchema(t, insights))).toMatchObject({ type: "object" });
  });

  it("engine selection: the model when configured, else local", async () => {
    expect(recommendationEngine(null)).toBe(localRecommendationEngine);
    const engine = recommendationEngine(ReplayModel.fromFixture("generate.json"));
    expect(engine.kind).toBe("model");
    expect((await engine.generate({ insights })).usage).not.toBeNull();
    expect((await localRecommendationEngine.generate({ insights })).usage).toBeNull();
  });
});

describe("drafting with the model (replayed)", () => {
  const f = fixture<{ insight_titles: string[] }>("draft-prd.json");
  const insights = pick(f.insight_titles);
  const rec = {
    title: "Make sign-in remember trusted devices and stop the redirect loop",
    description: "Let biometric unlock replace repeated prompts.",
    addresses_insight_ids: insights.map((i) => i.id),
    effort_weeks: 3,
    success_metrics: ["Sessions needing re-entry fall by 50%"],
  };

  it("sends the outline, grounding rules, numbered insights and instructions; appends the Sources by code", async () => {
    const model = ReplayModel.fromFixture("draft-prd.json");
    const { result } = await draftDocumentWithModel(model, { document_type: "prd", recommendation: rec, insights: all, user_instructions: "Keep it short" });
    const req = model.requests[0];
    expect(req.system).toMatch(/cite only the numbers listed/);
    expect(req.system).toMatch(/Do not write a Sources or References section/);
    const text = req.messages[0].text;
    expect(text).toContain("## Goals & success metrics (table: Metric | Kind | Baseline | Target | Measurement)");
    insights.forEach((i, k) => expect(text).toContain(`[I${k + 1}] ${i.title}`));
    expect(text).not.toContain("[I4]"); // only the recommendation's insights are offered for citation
    expect(text).toContain("User instructions (verbatim): “Keep it short”");
    expect(result.title).toBe("PRD: Sign-in that remembers trusted devices");
    expect(result.content).toMatch(/^## Sources$/m);
    expect(result.content).toContain(`[I1]: #insight-${insights[0].id} `);
    expect(checkGrounding(result.content, insights, [rec.title])).toEqual([]);
  });

  it("the model's draft extracts into the PRD's typed blocks", async () => {
    const { result } = await draftDocumentWithModel(ReplayModel.fromFixture("draft-prd.json"), { document_type: "prd", recommendation: rec, insights: all });
    const types = extractBlocks(result.content).map((b) => b.block_type);
    for (const t of ["problem", "persona", "metrics", "solution", "user_story", "edge_case", "risk", "timeline"]) expect(types).toContain(t);
    const problem = extractBlocks(result.content).find((b) => b.block_type === "problem")!;
    expect((problem.content as { evidence: { insight_id?: string }[] }).evidence.map((e) => e.insight_id)).toEqual(insights.map((i) => i.id));
  });

  it("rejects invented quotes and a model-written Sources section (repair path)", async () => {
    const model = ReplayModel.fromFixture("draft-repair.json");
    const { result } = await draftDocumentWithModel(model, { document_type: "prd", recommendation: rec, insights: all });
    expect(model.rejected).toHaveLength(1);
    expect(model.rejected[0]).toMatch(/is not a verbatim quote/);
    expect(model.rejected[0]).toMatch(/do not write a Sources section/);
    expect(result.content.match(/^## Sources$/gm)).toHaveLength(1);
  });

  it("validates input before calling the model", async () => {
    const model = new ReplayModel([]);
    await expect(draftDocumentWithModel(model, { document_type: "prd", insights: [] })).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    expect(model.requests).toHaveLength(0);
  });
});

describe("block actions with the model (replayed)", () => {
  it("expand keeps what the user wrote and only cites listed insights", async () => {
    const f = fixture<{ block: ActionBlock; insight_titles: string[] }>("expand-problem.json");
    const insights = pick(f.insight_titles);
    const model = ReplayModel.fromFixture("expand-problem.json");
    const ctx = [{ id: "b-persona", position: 1, block_type: "persona", title: "Veterans", content: { name: "Veterans on mobile" } } as ActionBlock];
    const { result } = await expandBlockWithModel(model, f.block, ctx, insights);
    const c = validateBlockContent("problem", result.content);
    expect(c.evidence[0]).toEqual({ note: "Support says sign-in is the top complaint" });
    expect(c.evidence.slice(1).map((e) => e.insight_id)).toEqual(insights.map((i) => i.id));
    expect(c.statement).toBe("Signing in takes too long.");
    expect(result.added).toContain("impact");
    const req = model.requests[0];
    expect(req.tier).toBe("small");
    expect(req.messages[0].text).toContain("Surrounding blocks (1 nearest)");
    expect(req.messages[0].text).toContain("content contract: {statement, impact, evidence");
  });

  it("expand's tool schema rejects unknown insight ids and non-verbatim quotes", () => {
    const insights = pick(["Login asks for tokens and passwords on every visit"]);
    const schema = expandToolSchema("problem", insights);
    const ok = schema.safeParse({ content: { statement: "s", evidence: [{ insight_id: insights[0].id, quote: insights[0].quotes[0].text }] }, added: ["evidence"] });
    expect(ok.success).toBe(true);
    const bad = schema.safeParse({ content: { statement: "s", evidence: [{ insight_id: "nope", quote: "made up words here" }] }, added: ["evidence"] });
    expect(bad.success).toBe(false);
    expect(bad.error!.issues.map((i) => i.message).join(" ")).toMatch(/unknown insight id.*quote is not verbatim/);
  });

  it("challenge and simulate return the model's lists", async () => {
    const c = fixture<{ block: ActionBlock }>("challenge-metrics.json");
    const ch = await challengeBlockWithModel(ReplayModel.fromFixture("challenge-metrics.json"), c.block, []);
    expect(ch.result.weaknesses).toContain("The target “better” is not measurable.");
    const s = fixture<{ block: ActionBlock }>("simulate-timeline.json");
    const sim = await simulateBlockWithModel(ReplayModel.fromFixture("simulate-timeline.json"), s.block, []);
    expect(sim.result.scenarios).toHaveLength(3);
    expect(sim.result.scenarios[1].likelihood).toBe("medium");
  });

  it("passes at most 8 context blocks to the model", async () => {
    const s = fixture<{ block: ActionBlock }>("simulate-timeline.json");
    const ctx: ActionBlock[] = Array.from({ length: 15 }, (_, i) => ({ id: `c${i}`, position: i, block_type: "free_text", title: `Context ${i}`, content: { markdown: `ctx ${i}` } }));
    const model = ReplayModel.fromFixture("simulate-timeline.json");
    await simulateBlockWithModel(model, s.block, ctx);
    const text = model.requests[0].messages[0].text;
    expect(text).toContain("Surrounding blocks (8 nearest)");
    expect((text.match(/### Context \d+/g) ?? []).length).toBe(8);
    // the block sits at position 8: the nearest are positions 4..11
    expect(text).toContain("### Context 4\n");
    expect(text).toContain("### Context 11\n");
    expect(text).not.toContain("### Context 3\n");
    expect(text).not.toContain("### Context 12\n");
  });

  it("engine selection for documents", () => {
    expect(documentEngine(null)).toBe(localDocumentEngine);
    expect(documentEngine(new ReplayModel([])).kind).toBe("model");
  });
});
