/**
 * The local engine's template-shaped answer (core/agent/local-template.ts), pure: sections in the template's order with
 * its headings, filled only from the evidence given, "Not enough evidence" where it cannot fill one, optional empty
 * sections left out, no placeholder or guidance comment left; the tag read back from a system prompt.
 */
import { describe, expect, it } from "vitest";
import { composeTemplated, evidenceNeeded, NOT_ENOUGH, sectionKind, templateOf, titleOf } from "../../../core/agent/local-template";
import { templateSections } from "../../../core/skill/format";
import { officialSkill, officialSkills } from "../../../core/skill/library";
import { skillSystemText } from "../../../core/skill/hook";
import type { SkillRecord } from "../../../core/skill";

const ID = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, "0")}`;
const evidence = {
  insights: [
    { id: ID(1), title: "Notes disappear when the signal comes back", severity: "medium", frequency: 1, insight_type: "pain_point", quotes: [{ text: "my notes disappear when the signal comes back", source_id: ID(11), speaker: "Sam" }] },
    { id: ID(2), title: "Users keep getting sent back to the login screen", severity: "high", frequency: 2, insight_type: "pain_point", quotes: [{ text: "I keep getting sent back to the login screen", source_id: ID(12), speaker: null }] },
  ],
  recommendations: [{ id: ID(21), title: "Keep users signed in across updates", status: "suggested", priority_rank: 1, impact_score: 8 }],
  sources: [{ id: ID(11), title: "Interview with Sam", source_type: "interview", processing_status: "completed" }],
};
const h2 = (md: string) => [...md.matchAll(/^## (.+)$/gm)].map((m) => m[1]);

describe("composeTemplated", () => {
  it("writes an official template's sections in order, strongest theme first, quotes with their sources, gaps said", () => {
    const t = officialSkill("interview-synthesis")!.output_template_md;
    const md = composeTemplated(t, evidence);
    expect(h2(md)).toEqual(templateSections(t).map((s) => s.heading));
    expect(md.startsWith("# Interview synthesis\n")).toBe(true);
    expect(md).not.toMatch(/\{\{|\}\}|<!--/);
    const themes = md.split("## Themes")[1]!.split("\n## ")[0]!;
    expect(themes.indexOf(ID(2))).toBeLessThan(themes.indexOf(ID(1)));
    expect(themes).toContain(`> "my notes disappear when the signal comes back" (Sam) [source ${ID(11)}]`);
    expect(md.split("## Contradictions and outliers")[1]!.split("\n## ")[0]!.trim()).toBe(NOT_ENOUGH);
    expect(md.split("## Opportunities to explore")[1]!).toContain(`[recommendation ${ID(21)}]`);
    expect(md).toContain(`Interview with Sam [source ${ID(11)}]`);
  });

  it("says there is not enough evidence in every section when the workspace has none, and invents nothing", () => {
    const t = officialSkill("rice-prioritization")!.output_template_md;
    const md = composeTemplated(t, { insights: [], recommendations: [], sources: [] });
    expect(h2(md)).toEqual(["Ranking", "Assumptions behind the numbers", "What would change the ranking", "Outside RICE"]);
    expect(md.match(new RegExp(NOT_ENOUGH.replace(/\./g, "\\."), "g"))).toHaveLength(4);
    expect(md).not.toMatch(/\[(insight|source|recommendation) /);
  });

  it("leaves out an optional section it cannot fill and keeps the required ones", () => {
    const t = officialSkill("release-notes")!.output_template_md;
    const md = composeTemplated(t, evidence);
    expect(h2(md)).toEqual(templateSections(t).filter((s) => !s.optional).map((s) => s.heading));
    expect(h2(md)).not.toContain("Action required");
    expect(titleOf(t)).toBe("");
  });

  it("never fills a section that asks for judgement (gaps, checks, open questions) with evidence lists", () => {
    for (const h of ["Open questions", "Evidence check", "Research gaps", "Assumptions behind the numbers", "Contradictions and outliers"]) expect(sectionKind(h)).toBeNull();
    expect(sectionKind("Themes")).toBe("themes");
    expect(sectionKind("What we already know")).toBe("findings");
    expect(sectionKind("Ranking")).toBe("recommendations");
    expect([...evidenceNeeded(officialSkill("research-plan")!.output_template_md)]).toEqual(["findings"]);
  });

  it("every official template yields its headings in order and no placeholder", () => {
    for (const s of officialSkills()) {
      const md = composeTemplated(s.output_template_md, evidence);
      // The evidence holds every kind, so only optional sections no evidence can fill are left out.
      expect(h2(md), s.slug).toEqual(templateSections(s.output_template_md).filter((x) => !(x.optional && sectionKind(x.heading) === null)).map((x) => x.heading));
      expect(h2(md).length, s.slug).toBeGreaterThan(0);
      expect(md, s.slug).not.toMatch(/\{\{|<!--/);
    }
  });
});

describe("templateOf", () => {
  it("reads back the template the skills hook put in the system prompt, and nothing from a prompt without one", () => {
    const skill = officialSkill("interview-synthesis")!;
    const system = `You are the copilot.\n${skillSystemText(skill as unknown as SkillRecord)}`;
    expect(templateOf(system)).toEqual({ slug: "interview-synthesis", template: skill.output_template_md });
    expect(templateOf("You are the copilot.")).toBeUndefined();
  });
});
