import { describe, expect, it } from "vitest";
import { AppError } from "../../../core/error";
import { validateBlockContent } from "../../../core/document/blocks";
import { challengeBlock, expandBlock, selectContext, simulateBlock } from "../../../core/document/engine/actions";
import { ChallengeResult, SimulateResult, type ActionBlock } from "../../../core/document/engine/types";
import { vaInsights } from "./fake-model";

const insights = vaInsights();
const login = insights.find((i) => i.title.startsWith("Login asks"))!;

const blk = (position: number, block_type: ActionBlock["block_type"], content: unknown, title: string = block_type): ActionBlock => ({ id: `b${position}`, position, block_type, title, content });

describe("selectContext (spec 01 Limits: up to 8 surrounding blocks)", () => {
  const doc = Array.from({ length: 20 }, (_, i) => blk(i, "free_text", { markdown: `block ${i}` }));
  it("takes the 8 nearest by position, excluding the block, in position order", () => {
    expect(selectContext(doc[10], doc).map((b) => b.position)).toEqual([6, 7, 8, 9, 11, 12, 13, 14]);
    expect(selectContext(doc[0], doc).map((b) => b.position)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(selectContext(doc[19], doc).map((b) => b.position)).toEqual([11, 12, 13, 14, 15, 16, 17, 18]);
  });
  it("returns fewer when the document is small, and honours a lower limit", () => {
    expect(selectContext(doc[1], doc.slice(0, 3))).toHaveLength(2);
    expect(selectContext(doc[10], doc, 2).map((b) => b.position)).toEqual([9, 11]);
  });
  it("the actions never look beyond the 8 nearest blocks", () => {
    const story = blk(0, "user_story", { as_a: "veteran", i_want: "to refill", so_that: "I have my meds", acceptance_criteria: [] });
    const far = blk(20, "edge_case", { scenario: "Pharmacy is closed", expected_behavior: "Queue the refill" });
    const fillers = Array.from({ length: 8 }, (_, i) => blk(i + 1, "free_text", { markdown: "x" }));
    const out = expandBlock(story, [...fillers, far]);
    expect(JSON.stringify(out.content)).not.toContain("Pharmacy is closed");
    const near = expandBlock(story, [far]);
    expect(JSON.stringify(near.content)).toContain("pharmacy is closed");
  });
});

describe("expandBlock", () => {
  it("adds linked evidence with verbatim quotes to a problem, keeping what was there", () => {
    const b = blk(0, "problem", { statement: "Login asks for tokens and passwords every time veterans open the app.", evidence: [{ note: "support says so" }] });
    const out = expandBlock(b, [blk(1, "persona", { name: "Veterans on mobile" })], insights);
    const c = validateBlockContent("problem", out.content);
    expect(c.evidence[0]).toEqual({ note: "support says so" });
    const added = c.evidence.find((e) => e.insight_id === login.id)!;
    expect(added.quote).toBe(login.quotes[0].text);
    expect(c.impact).toMatch(/highest severity/);
    expect(c.affected_users).toBe("Veterans on mobile");
    expect(out.added.length).toBeGreaterThanOrEqual(3);
  });

  it("adds happy, error, accessibility and edge-case criteria to a user story", () => {
    const s = blk(2, "user_story", { as_a: "veteran", i_want: "to unlock with Face ID", so_that: "I get in quickly", acceptance_criteria: ["Prompt on launch"] });
    const e = blk(3, "edge_case", { scenario: "No biometrics enrolled", expected_behavior: "Fall back to password" });
    const c = validateBlockContent("user_story", expandBlock(s, [e]).content);
    expect(c.acceptance_criteria[0]).toBe("Prompt on launch");
    expect(c.acceptance_criteria).toContain("When no biometrics enrolled, then fall back to password");
    expect(c.acceptance_criteria.some((a) => /retry/.test(a))).toBe(true);
    expect(c.acceptance_criteria.some((a) => /accessible/.test(a))).toBe(true);
  });

  it("fills metrics measurements, a metric per uncovered problem and a guardrail", () => {
    const m = blk(4, "metrics", { metrics: [{ name: "Login success rate", target: "95%" }] });
    const p = blk(3, "problem", { statement: "Claims fail to load for veterans." });
    const c = validateBlockContent("metrics", expandBlock(m, [p]).content);
    expect(c.metrics[0].measurement).toBeDefined();
    expect(c.metrics.some((x) => x.name.startsWith("Reports of: Claims fail to load"))).toBe(true);
    expect(c.metrics.some((x) => x.kind === "guardrail")).toBe(true);
  });

  it("assesses and mitigates a bare risk, using insight severity for impact", () => {
    const r = blk(5, "risk", { risk: "Login changes might weaken token security" });
    const c = validateBlockContent("risk", expandBlock(r, [], insights).content);
    expect(c.impact).toBe("high");
    expect(c.likelihood).toBe("medium");
    expect(c.mitigation).toMatch(/Security/);
  });

  it("adds deliverables and beta/GA milestones to a thin timeline", () => {
    const t = blk(6, "timeline", { milestones: [{ name: "Build", week: 3 }] });
    const c = validateBlockContent("timeline", expandBlock(t, []).content);
    expect(c.milestones.map((m) => m.name)).toEqual(["Build", "Beta", "General availability"]);
    expect(c.milestones[0].deliverables.length).toBeGreaterThan(0);
    expect(c.milestones[1].week).toBe(4);
  });

  it("covers every type and keeps content valid", () => {
    const all: ActionBlock[] = [
      blk(0, "persona", { name: "Veterans", goals: [], pain_points: [] }),
      blk(1, "solution", { summary: "Trusted devices for login" }),
      blk(2, "edge_case", { scenario: "Token expires" }),
      blk(3, "free_text", { markdown: "Login tokens and passwords are a pain." }),
    ];
    for (const b of all) {
      const out = expandBlock(b, all, insights);
      expect(() => validateBlockContent(b.block_type, out.content)).not.toThrow();
      expect(out.added.length).toBeGreaterThan(0);
    }
  });

  it("rejects a block whose content breaks its contract", () => {
    expect(() => expandBlock(blk(0, "risk", { risk: "x", likelihood: "sure" }), [])).toThrow(AppError);
  });
});

describe("challengeBlock", () => {
  const check = (b: ActionBlock, ctx: ActionBlock[] = []) => {
    const r = challengeBlock(b, ctx, insights);
    expect(ChallengeResult.safeParse(r).success).toBe(true);
    expect(r.questions.length).toBeGreaterThan(0);
    return r;
  };

  it("flags metrics without baselines or numeric targets, vague wording, and no guardrail", () => {
    const r = check(blk(0, "metrics", { metrics: [{ name: "Login success rate", target: "better" }] }));
    expect(r.weaknesses.join(" ")).toMatch(/no baseline/);
    expect(r.weaknesses.join(" ")).toMatch(/no numeric target/);
    expect(r.weaknesses.join(" ")).toMatch(/Vague wording \(“better”\)/);
    expect(r.suggestions.join(" ")).toMatch(/guardrail/);
  });

  it("praises well-formed metrics", () => {
    const r = check(blk(0, "metrics", { metrics: [{ name: "Login success", baseline: "82%", target: "95%", kind: "primary", measurement: "logs" }, { name: "Tickets", target: "no increase", kind: "guardrail", baseline: "40/wk", measurement: "helpdesk" }] }));
    expect(r.weaknesses).toEqual([]);
    expect(r.strengths.join(" ")).toMatch(/baseline and a numeric target/);
  });

  it("flags user stories without criteria or benefit, and personas the document does not define", () => {
    const r = check(blk(1, "user_story", { as_a: "pharmacist", i_want: "to see refills", so_that: "" }), [blk(0, "persona", { name: "Veteran on mobile" })]);
    expect(r.weaknesses.join(" ")).toMatch(/No acceptance criteria/);
    expect(r.weaknesses.join(" ")).toMatch(/No benefit/);
    expect(r.questions.join(" ")).toMatch(/for “pharmacist”, but the document's personas are “Veteran on mobile”/);
  });

  it("flags problems without evidence, impact or users, and solution-shaped statements", () => {
    const r = check(blk(0, "problem", { statement: "We should add a faster login." }));
    expect(r.weaknesses.join(" ")).toMatch(/No evidence/);
    expect(r.weaknesses.join(" ")).toMatch(/Impact is missing/);
    expect(r.weaknesses.join(" ")).toMatch(/describes a solution/);
    expect(r.suggestions.join(" ")).toMatch(/metrics block/);
    const linked = check(blk(0, "problem", { statement: "Veterans re-enter tokens.", impact: "abandonment", evidence: [{ insight_id: login.id, quote: login.quotes[0].text }, { note: "x" }] }));
    expect(linked.weaknesses.join(" ")).toMatch(/1 of 2 evidence items are not linked/);
  });

  it("flags risks without mitigation or assessment", () => {
    const r = check(blk(0, "risk", { risk: "Vendor outage", mitigation: "" }));
    expect(r.weaknesses.join(" ")).toMatch(/No mitigation/);
    expect(r.weaknesses.join(" ")).toMatch(/likelihood and impact missing/);
  });

  it("finds contradictions with the context and inside the block", () => {
    const sol = check(
      blk(1, "solution", { summary: "A new onboarding video", details: ["Replace the identity provider login"], alternatives_considered: [], non_goals: ["Replace the identity provider"] }),
      [blk(0, "problem", { statement: "Claims status fails to load for veterans with pending appeals." })],
    );
    expect(sol.weaknesses.join(" ")).toMatch(/shares no key terms with the problem/);
    expect(sol.weaknesses.join(" ")).toMatch(/Contradiction: the detail .* overlaps the non-goal/);
    expect(sol.weaknesses.join(" ")).toMatch(/No alternatives considered/);
    const m = check(blk(1, "metrics", { metrics: [{ name: "Login success rate", target: "95%", baseline: "80%" }] }), [blk(2, "metrics", { metrics: [{ name: "login success rate", target: "90%" }] }, "Other metrics")]);
    expect(m.weaknesses.join(" ")).toMatch(/Contradiction: “Login success rate” targets 95% here but 90% in “Other metrics”/);
    const t = check(blk(0, "timeline", { milestones: [{ name: "Build", week: 5, deliverables: ["x"] }, { name: "Design", week: 2, deliverables: [] }] }));
    expect(t.weaknesses.join(" ")).toMatch(/weeks go backwards/);
    expect(t.weaknesses.join(" ")).toMatch(/no deliverables/);
  });

  it("covers the remaining types", () => {
    expect(check(blk(0, "persona", { name: "users" })).weaknesses.join(" ")).toMatch(/no specific name/);
    expect(check(blk(0, "edge_case", { scenario: "Offline" })).weaknesses.join(" ")).toMatch(/No expected behaviour/);
    expect(check(blk(0, "free_text", { markdown: "Conversion is 34% lower on Android." })).questions.join(" ")).toMatch(/without citing an insight/);
  });
});

describe("simulateBlock", () => {
  it("returns 3+ scenarios with likelihoods, assumptions and signals for every type", () => {
    const blocks: ActionBlock[] = [
      blk(0, "problem", { statement: "Login asks for tokens every visit", evidence: [{ insight_id: login.id }] }),
      blk(1, "persona", { name: "Veterans", goals: ["See appointments"], pain_points: ["Login"] }),
      blk(2, "solution", { summary: "Trusted devices", details: ["a", "b", "c", "d", "e", "f"] }),
      blk(3, "metrics", { metrics: [{ name: "Login success", target: "95%", baseline: "82%" }] }),
      blk(4, "user_story", { as_a: "veteran", i_want: "Face ID", so_that: "fast", acceptance_criteria: ["retry on error"] }),
      blk(5, "edge_case", { scenario: "No biometrics", expected_behavior: "Password" }),
      blk(6, "risk", { risk: "Security review blocks it", likelihood: "high", impact: "high", mitigation: "Review early" }),
      blk(7, "timeline", { milestones: [{ name: "Build", week: 4, deliverables: ["Unlock"] }] }),
      blk(8, "free_text", { markdown: "Notes" }),
    ];
    for (const b of blocks) {
      const r = simulateBlock(b, blocks, insights);
      expect(SimulateResult.safeParse(r).success).toBe(true);
      expect(r.scenarios.length).toBeGreaterThanOrEqual(3);
      expect(r.signals_to_watch.length).toBeGreaterThan(0);
    }
    const sol = simulateBlock(blocks[2], blocks, insights);
    expect(sol.scenarios.map((s) => s.name)).toContain("Scope creep");
    expect(sol.signals_to_watch[0]).toMatch(/Login success \(target 95%\)/);
    const tl = simulateBlock(blocks[7], blocks);
    expect(tl.scenarios[1].description).toMatch(/week 6/);
    const risk = simulateBlock(blocks[6], []);
    expect(risk.scenarios.find((s) => s.name === "Does not materialise")!.likelihood).toBe("low");
  });
});
