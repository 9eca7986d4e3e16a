/**
 * The validation kit's rules (core/task/kit.ts): evidence strength from sources and mentions, the 2x2 of importance and
 * evidence, beliefs read from a document, the riskiest assumptions first, and documents that quote only what the
 * insights hold, verbatim.
 */
import { describe, expect, it } from "vitest";
import { assumptionMap, assumptionsOf, claimsOf, evidenceOf, interviewGuide, quadrantOf, researchPlan, type KitInput } from "../../../core/task/kit";

const insight = (id: string, over: Partial<KitInput["insights"][number]> = {}): KitInput["insights"][number] => ({
  id,
  title: `Insight ${id}`,
  description: "A finding.",
  insight_type: "pain_point",
  severity: "medium",
  frequency: 1,
  mention_count: 1,
  quotes: [],
  ...over,
});

describe("validation kit rules", () => {
  it("evidence: strong from 3 sources or 8 mentions, moderate from 2 sources or 3 mentions, else weak", () => {
    expect(evidenceOf({ frequency: 3, mention_count: 1 })).toBe("strong");
    expect(evidenceOf({ frequency: 1, mention_count: 8 })).toBe("strong");
    expect(evidenceOf({ frequency: 2, mention_count: 1 })).toBe("moderate");
    expect(evidenceOf({ frequency: 1, mention_count: 3 })).toBe("moderate");
    expect(evidenceOf({ frequency: 1, mention_count: 2 })).toBe("weak");
  });

  it("the 2x2: important and not strongly backed is tested first", () => {
    expect(quadrantOf("high", "weak")).toBe("test_first");
    expect(quadrantOf("medium", "moderate")).toBe("test_first");
    expect(quadrantOf("high", "strong")).toBe("validated");
    expect(quadrantOf("low", "strong")).toBe("monitor");
    expect(quadrantOf("low", "none")).toBe("park");
  });

  it("reads the beliefs a document states, not its other sentences", () => {
    const claims = claimsOf("# Plan\n\nWe believe field workers will sync every evening. The sky is blue today, as usual. Users will trust the automatic sync.");
    expect(claims).toEqual(["We believe field workers will sync every evening.", "Users will trust the automatic sync."]);
  });

  it("orders the riskiest first, maps every insight and claim, and quotes only the insights' own words", () => {
    const input: KitInput = {
      subject: "Offline notes",
      prompt: "Validate offline notes",
      insights: [
        insight("a", { severity: "low", frequency: 4, title: "Exports are slow" }),
        insight("b", { severity: "critical", frequency: 1, title: "Uploads lose work", quotes: [{ text: "I lost my notes twice.", source_id: "s1", speaker: "P1" }] }),
        insight("c", { severity: "high", frequency: 3, insight_type: "feature_request", title: "Offline mode" }),
      ],
      document: { id: "d", title: "Offline notes", content: "We believe technicians will sync notes every evening." },
      product: { product_name: "Field app", target_users: "Technicians" },
      sourceTypes: ["interview"],
    };
    const assumptions = assumptionsOf(input);
    expect(assumptions.map((a) => a.quadrant)).toEqual(["test_first", "test_first", "validated", "monitor"]);
    // Equally important: the claim no insight supports yet is riskier than the critical insight one source backs.
    expect(assumptions[0]!.basis.kind).toBe("document");
    expect(assumptions[1]!.basis).toMatchObject({ kind: "insight", insight: { id: "b" } });
    expect(assumptions.map((a) => a.n)).toEqual([1, 2, 3, 4]);
    const map = assumptionMap(input, assumptions);
    expect(map).toContain('> "I lost my notes twice." (P1) [source s1]');
    expect(map.match(/^\| \d+ \|/gm)).toHaveLength(4);
    const plan = researchPlan(input, assumptions, "map-id");
    expect(plan).toContain("document map-id");
    expect(plan).toContain("### A1. We believe technicians will sync notes every evening.");
    expect(plan).toContain("### A2.");
    expect(plan).not.toContain("### A3.");
    const guide = interviewGuide(input, assumptions, "plan-id");
    expect(guide).toContain('Probe: another person told us "I lost my notes twice."');
    expect(guide).toContain("Tell me about the last time you ran into uploads lose work.");
  });

  it("with nothing to map, says what to do", () => {
    const input: KitInput = { subject: "X", prompt: "X", insights: [], product: { product_name: null, target_users: null }, sourceTypes: [] };
    expect(assumptionMap(input, [])).toContain("No insight or claim to map yet");
    expect(researchPlan(input, [], null)).toContain("Start with 5 exploratory interviews");
  });
});
