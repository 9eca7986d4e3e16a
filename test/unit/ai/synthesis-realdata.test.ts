/**
 * The local synthesis engine on real research (/work/shared/realdata): the whole VA mobile app workspace and a
 * Jupyter subset (GitHub issues, mybinder survey, usability findings, podcast transcript). The full Jupyter
 * workspace runs in bench/synthesis.ts. Embeddings are cached in a temp file across runs (embed-cache.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalEmbedder } from "../../../core/ai/local-embedder";
import { embedUnits, matchExisting, synthesize, type SynthesisOutput, type SynthesisSource } from "../../../core/ai/synthesis";
import { dot } from "../../../core/ai/vectors";
import { isStockTitle, REDACTION_RE } from "../../../core/ai/synthesis/naming";
import { cachedEmbedder } from "./embed-cache";
import { loadWorkspace } from "./realdata";

const embedder = cachedEmbedder(new LocalEmbedder());
let va: { sources: SynthesisSource[]; out: SynthesisOutput };
let jupyter: { sources: SynthesisSource[]; out: SynthesisOutput };

beforeAll(async () => {
  const vaSources = await loadWorkspace("va-mobile-app");
  const jSources = await loadWorkspace("jupyter", /support-tickets|mybinder|usability|transcripts/);
  va = { sources: vaSources, out: await synthesize({ sources: vaSources, embedder }) };
  jupyter = { sources: jSources, out: await synthesize({ sources: jSources, embedder }) };
}, 240_000);

afterAll(() => LocalEmbedder.shutdown());

const titles = (o: SynthesisOutput) => o.insights.map((d) => d.title.toLowerCase()).join(" | ");

describe.each([
  ["va-mobile-app", () => va],
  ["jupyter subset", () => jupyter],
])("synthesis on %s", (_name, get) => {
  it("grounds every quote verbatim in its own source, 3 to 5 per insight", () => {
    const { sources, out } = get();
    const byId = new Map(sources.map((s) => [s.id, s]));
    expect(out.insights.length).toBeGreaterThanOrEqual(5);
    expect(out.stats.quotes_grounded).toBe(out.stats.quotes_proposed);
    for (const d of out.insights) {
      expect(d.quotes.length).toBeGreaterThanOrEqual(Math.min(3, d.mention_count));
      expect(d.quotes.length).toBeLessThanOrEqual(5);
      for (const q of d.quotes) {
        expect(byId.get(q.source_id)!.extracted_text.includes(q.text)).toBe(true);
        expect(d.source_ids).toContain(q.source_id);
        expect(q.speaker === null || typeof q.speaker === "string").toBe(true);
      }
    }
  });

  it("counts sources and mentions consistently", () => {
    const { sources, out } = get();
    const ids = new Set(sources.map((s) => s.id));
    for (const d of out.insights) {
      expect(d.frequency).toBe(new Set(d.source_ids).size);
      expect(d.source_ids.every((id) => ids.has(id))).toBe(true);
      expect(d.mention_count).toBeGreaterThanOrEqual(d.quotes.length);
      expect(["pain_point", "feature_request", "opportunity", "behavior", "feedback_theme"]).toContain(d.insight_type);
      expect(["low", "medium", "high", "critical"]).toContain(d.severity);
      // Themes count mentions; quantitative insights from closed survey questions count respondents (survey.ts).
      expect(d.description).toMatch(new RegExp(`^${d.mention_count} (mentions? across ${d.frequency} sources?|respondents of “)`));
      expect(d.vector.length).toBe(512);
      expect(Math.sqrt(dot(d.vector, d.vector))).toBeCloseTo(1, 4);
    }
    expect(out.summary).toContain(`${out.insights.length} insights`);
  });

  it("never returns two insights about the same thing", () => {
    const { out } = get();
    const norm = out.insights.map((d) => d.title.toLowerCase().replace(/[^a-z ]/g, ""));
    expect(new Set(norm).size).toBe(norm.length);
    const firstPhrases = out.insights.map((d) => d.keyphrases[0].toLowerCase());
    expect(new Set(firstPhrases).size).toBe(firstPhrases.length);
    for (let a = 0; a < out.insights.length; a++) {
      for (let b = a + 1; b < out.insights.length; b++) {
        expect(dot(out.insights[a].vector, out.insights[b].vector)).toBeLessThan(0.95);
      }
    }
  });
});

describe("themes a product manager would recognise", () => {
  it("VA app: sign-in (as a problem), appointments, prescriptions, claims and appeals", () => {
    const t = titles(va.out);
    expect(t).toMatch(/log.?in|sign.?in|password/);
    expect(t).toMatch(/appointment/);
    expect(t).toMatch(/prescription|medication|refill/);
    expect(t).toMatch(/claim|appeal/);
    const login = va.out.insights.filter((d) => /log.?in|sign.?in|password/.test(d.title.toLowerCase()));
    expect(login.some((d) => d.insight_type === "pain_point")).toBe(true);
    // Issue #11 target: the VA login pain point from two or more sources (interviews, notes and reviews say it).
    expect(Math.max(...login.filter((d) => d.insight_type === "pain_point").map((d) => new Set(d.quotes.map((q) => q.source_id)).size))).toBeGreaterThanOrEqual(2);
    expect(Math.max(...login.filter((d) => d.insight_type === "pain_point").map((d) => d.frequency))).toBeGreaterThanOrEqual(2);
  });

  it("Jupyter: Binder start-up speed, GitHub repos, autosave, connection errors, navigation", () => {
    const t = titles(jupyter.out);
    expect(t).toMatch(/loading time|speed|startup|launch/);
    expect(t).toMatch(/github|repo/);
    expect(t).toMatch(/auto.?sav|checkpoint/);
    expect(t).toMatch(/kernel|server|connection|error/);
    expect(t).toMatch(/command palette|screen reader|navigation|theme|customization/);
  });

  it("names themes with sentences from the evidence: at most 1 title in 5 is a stock prefix, none carries a redaction marker", () => {
    const all = [...va.out.insights, ...jupyter.out.insights];
    const stock = all.filter((d) => isStockTitle(d.title));
    console.log(`[titles] ${stock.length}/${all.length} stock-prefix titles:\n${all.map((d) => `  ${isStockTitle(d.title) ? "T" : "S"} ${d.title}`).join("\n")}`);
    expect(stock.length * 5).toBeLessThanOrEqual(all.length);
    for (const d of all) {
      expect(d.title).not.toMatch(REDACTION_RE);
      expect(d.title).toMatch(/^[A-Z0-9“"']/);
    }
  });

  it("claims blocking failures only in the words of the insight's own sources, and critical only with them", () => {
    for (const [run, d] of [...va.out.insights.map((d) => [va, d] as const), ...jupyter.out.insights.map((d) => [jupyter, d] as const)]) {
      expect(d.description).not.toMatch(/severe impact|crashes, lost work/);
      const claim = /describe a blocking failure \(([^)]*)\)/.exec(d.description);
      const texts = run.sources.filter((s) => d.source_ids.includes(s.id)).map((s) => s.extracted_text.toLowerCase()).join("\n");
      for (const m of claim?.[1].matchAll(/“([^”]+)”/g) ?? []) expect(texts, `${d.title}: ${m[1]}`).toContain(m[1]);
      if (d.severity === "critical") expect(claim, d.title).not.toBeNull();
    }
  });

  it("only says 'Users struggle with' for pain points", () => {
    for (const d of [...va.out.insights, ...jupyter.out.insights]) {
      if (d.title.startsWith("Users struggle with")) expect(d.insight_type).toBe("pain_point");
    }
  });
});

describe("determinism, precomputed vectors and workspace dedup", () => {
  it("gives the same output for the same input, in whatever order the sources come", async () => {
    const again = await synthesize({ sources: [...va.sources].reverse(), embedder });
    const strip = (o: SynthesisOutput) => ({ s: o.summary, i: o.insights.map((d) => ({ ...d, vector: Array.from(d.vector) })) });
    expect(strip(again)).toEqual(strip(va.out));
  });

  it("reuses vectors precomputed at ingestion and finds the same themes", async () => {
    const withVectors = await Promise.all(
      va.sources.map(async (s) => ({ ...s, vectors: await embedUnits(s.units, embedder), vectors_embedder_id: embedder.id })),
    );
    const out = await synthesize({ sources: withVectors, embedder });
    expect(out.stats.vectors_computed).toBe(0);
    expect(out.stats.vectors_reused).toBe(va.out.stats.vectors_computed);
    expect(out.insights.map((d) => d.title)).toEqual(va.out.insights.map((d) => d.title));
  });

  it("marks insights that duplicate existing workspace insights for merging", async () => {
    const existing = va.out.insights.map((d, i) => ({ id: `ins-${i}`, title: d.title, description: d.description, vector: d.vector }));
    const out = await synthesize({ sources: va.sources, embedder, existing });
    expect(out.insights.map((d) => d.merge_into)).toEqual(existing.map((e) => e.id));

    // An insight typed in by hand (no vector) is matched by its text.
    const login = va.out.insights.findIndex((d) => /log.?in|sign.?in|password/.test(d.title.toLowerCase()));
    const manual = [{ id: "manual-1", title: "Signing in to the app is painful", description: "Veterans say logging in takes too long, passwords fail and they must sign in again every time." }];
    const matches = await matchExisting(va.out.insights, manual, embedder);
    expect(matches[login]).toBe("manual-1");
    expect(matches.filter((m) => m === "manual-1").length).toBeLessThanOrEqual(2);
  });
});
