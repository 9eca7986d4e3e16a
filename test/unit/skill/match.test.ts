/**
 * Skill matching (core/skill/match.ts): trigger keywords, display names and descriptions against a request, with
 * stems, stop words and -ise/-ize folded; and the version bumps of custom skill edits (core/skill bumpVersion).
 */
import { describe, expect, it } from "vitest";
import { normalizeWord, PROMPT_CHARS, reasonOf, SkillMatcher, stems, type MatchableSkill } from "../../../core/skill/match";
import { bumpOf, bumpVersion } from "../../../core/skill";

const skill = (slug: string, name: string, description: string, trigger_keywords: string[] = []): MatchableSkill => ({ slug, name, description, trigger_keywords });

const churn = skill("churn-debrief", "Churn debrief", "Explain why customers cancelled, from exit surveys and cancellation calls, with their own words.", ["churn interviews", "why customers left"]);
const pricing = skill("pricing-page-review", "Pricing page review", "Critique a pricing page: plans, anchors, the decoy, and the questions buyers ask before paying.", ["pricing page"]);
const onboarding = skill("onboarding-audit", "Onboarding audit", "Walk the signup and first-run flow step by step and list where new users drop off.");

describe("SkillMatcher", () => {
  const m = new SkillMatcher([churn, pricing, onboarding]);

  it("matches a trigger keyword whose words appear in any order and form", () => {
    const [hit] = m.match("Can you go through the interviews about churn?");
    expect(hit).toMatchObject({ slug: "churn-debrief", kind: "keyword", keywords: ["churn interviews"] });
    expect(m.match("Why have so many customers left this quarter?")[0]).toMatchObject({ slug: "churn-debrief", kind: "keyword" });
  });

  it("needs a keyword's words together: scattered over the request they are not the keyword", () => {
    const prd = new SkillMatcher([skill("prd-review", "PRD review", "Review a PRD before engineering commits.", ["review the prd"])]);
    expect(prd.match("Please review the PRD")[0]).toMatchObject({ kind: "keyword" });
    expect(prd.match("PRD review, please")[0]).toMatchObject({ kind: "keyword" });
    expect(prd.match("Take the reviews all the way to a PRD")).toEqual([]);
    expect(m.match("Churn went up; see the notes from the user interviews")).toEqual([]);
  });

  it("matches every word of the display name", () => {
    expect(m.match("We need an audit of the onboarding, please")[0]).toMatchObject({ slug: "onboarding-audit", kind: "name" });
  });

  it("matches a description on three or more specific shared words, not on two", () => {
    expect(m.match("List where people drop off during signup")[0]).toMatchObject({ slug: "onboarding-audit", kind: "description" });
    expect(m.match("Where do people drop off?")).toEqual([]);
  });

  it("does not count stop words or generic words", () => {
    expect(m.match("What can you do for the team?")).toEqual([]);
    expect(stems("the and of what which")).toEqual([]);
  });

  it("folds -ise spellings and inflections into one stem", () => {
    expect(normalizeWord("prioritisation")).toBe(normalizeWord("prioritization"));
    expect(normalizeWord("synthesise")).toBe(normalizeWord("synthesis"));
    expect(normalizeWord("interviews")).toBe(normalizeWord("interview"));
  });

  it("ranks a keyword match above a name or description match", () => {
    const both = new SkillMatcher([onboarding, skill("signup-review", "Signup review", "x", ["signup flow", "drop off"])]);
    expect(both.match("Audit our onboarding: where do users drop off in the signup flow?").map((r) => r.slug)).toEqual(["signup-review", "onboarding-audit"]);
  });

  it("ignores a keyword left with no content word, and reads only the start of a long request", () => {
    const m2 = new SkillMatcher([skill("odd", "Odd", "x", ["what is it"])]);
    expect(m2.match("What is it?")).toEqual([]);
    expect(m.match(`${"lorem ipsum ".repeat(PROMPT_CHARS / 12 + 10)} pricing page`)).toEqual([]);
  });

  it("says why a skill matched", () => {
    const [hit] = m.match("Review our pricing page");
    expect(reasonOf(hit!, "Pricing page review")).toBe('Your request mentions "pricing page", a trigger of the Pricing page review skill.');
  });
});

describe("version bumps of custom skill edits", () => {
  const before = { output_template_md: "# T", instructions_md: "Do it.", sample_output_md: "", name: "A", description: "D", category: undefined, icon: undefined, trigger_keywords: ["a"] };

  it("major for the template, minor for instructions or sample, patch for the rest, none for no change", () => {
    expect(bumpOf(before as never, { output_template_md: "# T2", name: "B" })).toBe("major");
    expect(bumpOf(before as never, { instructions_md: "Do it better." })).toBe("minor");
    expect(bumpOf(before as never, { sample_output_md: "Example" })).toBe("minor");
    expect(bumpOf(before as never, { trigger_keywords: ["a", "b"] })).toBe("patch");
    expect(bumpOf(before as never, { category: "research" })).toBe("patch");
    expect(bumpOf(before as never, { name: "A", instructions_md: "Do it.", category: null })).toBeNull();
  });

  it("moves the right part and resets the ones below", () => {
    expect([bumpVersion("1.4.2", "major"), bumpVersion("1.4.2", "minor"), bumpVersion("1.4.2", "patch")]).toEqual(["2.0.0", "1.5.0", "1.4.3"]);
  });
});
