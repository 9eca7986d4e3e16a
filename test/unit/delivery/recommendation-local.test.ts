import { describe, expect, it } from "vitest";
import { AppError } from "../../../core/error";
import { _internal, generateRecommendations } from "../../../core/recommendation/engine/local";
import { GenerateRecommendationsResult, type InsightInput, RecommendationDraft, effortFromWeeks } from "../../../core/recommendation/engine/types";
import { vaInsights } from "./fake-model";

const insight = (id: string, title: string, over: Partial<InsightInput> = {}): InsightInput => ({
  id,
  title,
  description: `${title}.`,
  insight_type: "pain_point",
  severity: "medium",
  frequency: 1,
  quotes: [{ text: `${title} is what I keep running into`, source_id: `s-${id}`, speaker: "P1" }],
  ...over,
});

describe("local recommendation engine", () => {
  const insights = vaInsights();
  const out = generateRecommendations({ insights });

  it("returns 3 to 7 valid recommendations and a summary", () => {
    expect(GenerateRecommendationsResult.safeParse(out).success).toBe(true);
    expect(out.recommendations.length).toBeGreaterThanOrEqual(3);
    expect(out.recommendations.length).toBeLessThanOrEqual(7);
    for (const r of out.recommendations) expect(RecommendationDraft.safeParse(r).success).toBe(true);
  });

  it("is grounded: addresses only input insights, cites their titles and verbatim quotes", () => {
    const ids = new Set(insights.map((i) => i.id));
    for (const r of out.recommendations) {
      expect(r.addresses_insight_ids!.length).toBeGreaterThan(0);
      for (const id of r.addresses_insight_ids!) expect(ids.has(id)).toBe(true);
      const addressed = insights.filter((i) => r.addresses_insight_ids!.includes(i.id));
      for (const i of addressed) expect(r.description).toContain(`“${i.title}”`);
      if (r.description.includes("In users' words")) {
        expect(addressed.some((i) => i.quotes.some((q) => r.description.includes(`In users' words: “${q.text}”`)))).toBe(true);
      }
    }
  });

  it("keeps effort_estimate consistent with effort_weeks and impact within 0..1", () => {
    for (const r of out.recommendations) {
      expect(r.effort_estimate).toBe(effortFromWeeks(r.effort_weeks!));
      expect(r.impact_score).toBeGreaterThanOrEqual(0);
      expect(r.impact_score).toBeLessThanOrEqual(1);
      expect(Number(r.impact_score!.toFixed(2))).toBe(r.impact_score);
      expect(r.success_metrics!.length).toBeGreaterThanOrEqual(1);
    }
  });

  it("groups related insights (the sign-in problems) into one recommendation", () => {
    const byTitle = new Map(insights.map((i) => [i.title, i.id]));
    const login = byTitle.get("Login asks for tokens and passwords on every visit")!;
    const loop = byTitle.get("Sign-in loops back to the sign-in screen")!;
    const rec = out.recommendations.find((r) => r.addresses_insight_ids!.includes(login));
    expect(rec).toBeDefined();
    expect(rec!.addresses_insight_ids).toContain(loop);
    expect(rec!.title).toMatch(/^Fix: .*\(\+\d+ related\)$/);
  });

  it("ranks by the documented score and explains the order and what was left out", () => {
    expect(out.prioritization_summary).toMatch(/by reach × severity ÷ effort/);
    expect(out.prioritization_summary).toMatch(/^1\. /m);
    expect(out.prioritization_summary).toMatch(/Not recommended now/);
    // the critical/high sign-in group ranks first
    expect(out.recommendations[0].addresses_insight_ids!.length).toBeGreaterThan(1);
    const scores = [...out.prioritization_summary.matchAll(/score (\d\.\d{3})/g)].slice(0, out.recommendations.length).map((m) => Number(m[1]));
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });

  it("never ranks praise above a critical problem, nor groups them, and takes the action from the lead insight", () => {
    const praise = insight("praise", "Users value app", {
      insight_type: "feedback_theme",
      severity: "high",
      frequency: 6,
      mention_count: 40,
      quotes: ["I love this app, sign in with my fingerprint is great", "Great app, easy to use", "Love the app"].map((text, k) => ({ text, source_id: `p${k}`, speaker: null })),
    });
    const loop = insight("loop", "Sign-in loops back to the sign-in screen", {
      severity: "critical",
      frequency: 2,
      mention_count: 6,
      quotes: [
        { text: "The new sign in page looks nice", source_id: "p0", speaker: null },
        { text: "I can't sign in, it keeps sending me back to the sign in screen", source_id: "p1", speaker: null },
      ],
    });
    const ask = insight("ask", "Automatic prescription refills requested", {
      insight_type: "feature_request",
      severity: "medium",
      frequency: 2,
      quotes: [
        { text: "Prescriptions are in the pharmacy tab", source_id: "p2", speaker: null },
        { text: "I wish the app would refill my prescriptions automatically", source_id: "p3", speaker: null },
      ],
    });
    const o = generateRecommendations({ insights: [praise, loop, ask] });
    const rankOf = (id: string) => o.recommendations.findIndex((r) => r.addresses_insight_ids!.includes(id));
    expect(rankOf("loop")).toBeLessThan(rankOf("praise"));
    expect(o.recommendations.find((r) => r.addresses_insight_ids!.includes("praise"))!.addresses_insight_ids).toEqual(["praise"]);
    const fix = o.recommendations[rankOf("loop")];
    expect(fix.title).toBe("Fix: Sign-in loops back to the sign-in screen");
    expect(fix.description).toMatch(/^Fix what breaks: sign-in loops back to the sign-in screen; verify/);
    // The quote shown is the one that says what breaks, not the lead's first quote.
    expect(fix.description).toContain("In users' words: “I can't sign in, it keeps sending me back to the sign in screen”");
    const build = o.recommendations[rankOf("ask")];
    expect(build.description).toMatch(/^Build what users ask for: automatic prescription refills requested/);
    expect(build.description).toContain("“I wish the app would refill my prescriptions automatically”");
    const keep = o.recommendations[rankOf("praise")];
    expect(keep.title).toBe("Keep: Users value app");
    for (const r of o.recommendations) expect(r.description).not.toMatch(/build on the feedback theme/i);
    // The documented scale: praise (high, 1 week) is worth less than a critical problem of equal reach (2 weeks).
    expect(fix.impact_score! / fix.effort_weeks!).toBeGreaterThan(keep.impact_score! / keep.effort_weeks!);
  });

  it("never groups praise or habits with problems on the VA set", () => {
    const kind = (t: string) => (t === "feedback_theme" ? "praise" : t === "behavior" || t === "user_behavior" ? "behavior" : "problem");
    for (const r of out.recommendations) {
      const kinds = new Set(insights.filter((i) => r.addresses_insight_ids!.includes(i.id)).map((i) => kind(i.insight_type)));
      expect(kinds.size).toBe(1);
    }
  });

  it("is deterministic", () => {
    expect(generateRecommendations({ insights: vaInsights() })).toEqual(out);
  });

  it("boosts focus-area matches", () => {
    const focused = generateRecommendations({ insights, focus_areas: ["medications and refills"] });
    const medsId = insights.find((i) => i.title.startsWith("Medications are hard to browse"))!.id;
    const rank = (o: typeof out) => o.recommendations.findIndex((r) => r.addresses_insight_ids!.includes(medsId));
    const before = rank(out);
    const after = rank(focused);
    expect(after).toBeGreaterThanOrEqual(0);
    expect(before === -1 || after < before).toBe(true);
    expect(focused.prioritization_summary).toMatch(/matches focus “medications and refills”/);
    const rec = focused.recommendations[after];
    expect(rec.rationale).toMatch(/focus match/);
  });

  it("names focus areas that matched nothing", () => {
    const o = generateRecommendations({ insights, focus_areas: ["quantum billing"] });
    expect(o.prioritization_summary).toMatch(/No selected insight matched focus area “quantum billing”/);
  });

  it("splits groups before inventing facets when there are few themes", () => {
    const three = [insight("a", "Login fails on Android"), insight("b", "Login fails on iOS after update"), insight("c", "Login fails with tokens on tablets")];
    const o = generateRecommendations({ insights: three });
    expect(o.recommendations).toHaveLength(3);
    expect(new Set(o.recommendations.flatMap((r) => r.addresses_insight_ids))).toEqual(new Set(["a", "b", "c"]));
    expect(o.recommendations.every((r) => !/^(Measure|Validate):/.test(r.title))).toBe(true);
  });

  it("turns a single insight into fix + measure + validate, saying so", () => {
    const o = generateRecommendations({ insights: [insight("only", "Exports time out for large workspaces", { severity: "high" })] });
    expect(o.recommendations.map((r) => r.title.split(":")[0])).toEqual(["Fix", "Measure", "Validate"]);
    for (const r of o.recommendations) expect(r.addresses_insight_ids).toEqual(["only"]);
    expect(o.recommendations[1].description).toMatch(/not separate evidence/);
    expect(o.prioritization_summary).toMatch(/fewer than 3 insights/);
  });

  it("estimates effort from type and scope", () => {
    const o = generateRecommendations({
      insights: [
        insight("x", "Tooltip wording is confusing", { insight_type: "pain_point", severity: "low" }),
        insight("y", "Sync with the third-party calendar API", { insight_type: "feature_request", severity: "high" }),
        insight("z", "Explore a marketplace for templates", { insight_type: "opportunity", severity: "medium" }),
      ],
    });
    const by = (id: string) => o.recommendations.find((r) => r.addresses_insight_ids!.includes(id))!;
    expect(by("x").effort_weeks).toBeLessThan(by("y").effort_weeks!);
    expect(by("y").effort_weeks).toBe(4.5); // 3 weeks base × 1.5 broad scope
    expect(by("z").effort_estimate).toBe("large");
  });

  it("rejects no insights and duplicate ids with VALIDATION_ERROR", () => {
    expect(() => generateRecommendations({ insights: [] })).toThrow(AppError);
    try {
      generateRecommendations({ insights: [] });
    } catch (e) {
      expect((e as AppError).code).toBe("VALIDATION_ERROR");
    }
    expect(() => generateRecommendations({ insights: [insight("d", "A"), insight("d", "B")] })).toThrow(/Duplicate insight id/);
    expect(() => generateRecommendations({ insights: [{ ...insight("e", "A"), severity: "urgent" as never }] })).toThrow(AppError);
  });

  it("folds sign-in vocabulary before keyword matching", () => {
    expect(_internal.canonical("Sign-in loops; logged out; Face ID")).toBe("login loops; logout; biometric");
  });
});
