/**
 * The official skill library (core/skill/official/<slug>/, compiled into core/skill/official.generated.ts by
 * scripts/skills-build.ts): the compiled module is what the folders say now, every skill validates as an Agent Skill
 * and carries what the copilot needs (instructions, a sample output, an output template, trigger keywords), and each
 * skill's own trigger keywords select it among the others.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { buildOfficialModule, GENERATED_MODULE, OFFICIAL_DIR } from "../../../scripts/skills-build";
import { OFFICIAL_SKILL_FILES } from "../../../core/skill/official.generated";
import { officialSkills } from "../../../core/skill/library";
import { parseSkillMd, readSkillFolder, templateSections } from "../../../core/skill/format";
import { SkillMatcher } from "../../../core/skill/match";

describe("the compiled library", () => {
  it("is up to date with the skill folders (run npm run skills:build after editing one)", () => {
    expect(readFileSync(GENERATED_MODULE, "utf8")).toBe(buildOfficialModule(OFFICIAL_DIR));
  });

  it("holds every folder's files", () => {
    expect(Object.keys(OFFICIAL_SKILL_FILES).length).toBeGreaterThanOrEqual(10);
    for (const [folder, files] of Object.entries(OFFICIAL_SKILL_FILES)) {
      expect(Object.keys(files).sort(), folder).toEqual(["SKILL.md", "assets/sample-output.md", "assets/template.md"]);
    }
  });
});

describe.each(Object.entries(OFFICIAL_SKILL_FILES))("official skill %s", (folder, files) => {
  const { content, unused } = readSkillFolder({ ...files }, ["official", folder], folder);

  it("validates as an Agent Skill whose name is its folder's", () => {
    expect(parseSkillMd(files["SKILL.md"]!, ["SKILL.md"], folder).name).toBe(folder);
    expect(unused).toEqual([]);
  });

  it("carries a version, category, icon, display name and specific trigger keywords", () => {
    expect(content.version).toMatch(/^\d+\.\d+\.\d+$/);
    expect(content.category).toMatch(/^(research|discovery|prioritization|delivery)$/);
    expect(content.icon).toBeTruthy();
    expect(content.name).not.toBe(folder);
    expect(content.trigger_keywords.length).toBeGreaterThanOrEqual(5);
    expect(content.description.length).toBeGreaterThan(200);
    expect(content.description).toMatch(/Use when/);
  });

  it("has instructions that say how to gather evidence and to follow the output template", () => {
    expect(content.instructions_md.split("\n").length).toBeGreaterThan(25);
    expect(content.instructions_md).toMatch(/output template/i);
    // The agent's real tools, by name: instructions that name tools the agent lacks would send it nowhere.
    expect(content.instructions_md).toMatch(/`(list_sources|search_insights|list_recommendations|list_documents|get_document|read_source_text)`/);
  });

  it("has an output template of sections with placeholders, and a sample that follows it", () => {
    const template = templateSections(content.output_template_md);
    expect(template.length).toBeGreaterThanOrEqual(3);
    expect(content.output_template_md).toMatch(/\{\{[^}]+\}\}/);
    expect(content.sample_output_md).not.toMatch(/\{\{/);
    // The sample's sections are the template's required ones, in order (the sample shows the template filled in).
    const sample = templateSections(content.sample_output_md).map((s) => s.heading);
    let at = 0;
    for (const { heading } of template.filter((t) => !t.optional && t.heading)) {
      const found = sample.indexOf(heading, at);
      expect(found, `${folder}: sample lacks "## ${heading}" in order`).toBeGreaterThanOrEqual(0);
      at = found + 1;
    }
  });
});

describe("matching the official library", () => {
  const skills = officialSkills();
  const matcher = new SkillMatcher(skills);

  it("each skill's trigger keywords select that skill first", () => {
    const wrong: string[] = [];
    for (const s of skills) {
      for (const k of s.trigger_keywords) {
        const [best] = matcher.match(`Could you help with ${k} for our product?`);
        if (best?.slug !== s.slug) wrong.push(`"${k}" -> ${best?.slug ?? "nothing"} (wanted ${s.slug})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it.each([
    ["Synthesise last week's interviews into themes", "interview-synthesis"],
    ["Write the notes for this release, version 2.29", "release-notes"],
    ["Score our backlog with reach, impact, confidence and effort", "rice-prioritization"],
    ["Please review the PRD for biometric sign-in before engineering picks it up", "prd-review"],
    ["Turn the retention PRD into a story map with a walking skeleton", "user-story-mapping"],
    ["What job are veterans hiring the app to do? Write job stories", "jobs-to-be-done"],
  ])("%j -> %s", (prompt, slug) => {
    expect(matcher.match(prompt)[0]?.slug).toBe(slug);
  });

  it.each(["What do users struggle with?", "Which interviews do we have?", "Draft a PRD for the export feature", "Summarize the attached source", "Analyze the survey"])(
    "%j calls for no skill",
    (prompt) => {
      expect(matcher.match(prompt)).toEqual([]);
    },
  );
});
