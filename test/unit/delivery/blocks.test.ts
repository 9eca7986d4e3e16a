import { describe, expect, it } from "vitest";
import * as z from "zod";
import { AppError } from "../../../core/error";
import {
  BLOCK_CONTENT_SCHEMAS,
  BLOCK_TYPES,
  BlockDraft,
  BlockInput,
  type BlockLike,
  blockToMarkdown,
  blocksToMarkdown,
  classifyHeading,
  emptyBlockContent,
  validateBlockContent,
} from "../../../core/document/blocks";
import { extractBlocks } from "../../../core/document/markdown";

/** One realistic block of every type (with non-default titles, so markers are exercised). */
export const SAMPLE_BLOCKS: BlockLike[] = [
  {
    block_type: "problem",
    title: "Sign-in friction",
    content: {
      statement: "Veterans re-enter tokens every time they open the app.",
      evidence: [
        { insight_id: "11111111-1111-4111-8111-111111111111", quote: "There's no point of facial recognition if I have to log in every time.", note: "App Store review" },
        { note: "Login tickets doubled in May" },
      ],
      impact: "Users abandon the app before reaching their task.",
      affected_users: "Veterans on mobile",
    },
  },
  {
    block_type: "persona",
    title: "Veterans on the go",
    content: { name: "Dana, Army veteran", description: "Checks appointments from her phone between shifts.", goals: ["See the next appointment fast"], pain_points: ["Repeated sign-in"], quote: "I hate using my cell phone because I like a bigger screen." },
  },
  {
    block_type: "solution",
    title: "Trusted devices",
    content: { summary: "Remember the device after one strong sign-in.", details: ["Face ID unlock", "30-day device trust"], alternatives_considered: ["Longer sessions only"], non_goals: ["Replacing the identity provider"] },
  },
  {
    block_type: "metrics",
    title: "How we'll know",
    content: {
      metrics: [
        { name: "Login success rate", target: "95%", baseline: "82%", measurement: "auth logs", kind: "primary" },
        { name: "Support tickets about login", target: "no increase", kind: "guardrail" },
      ],
    },
  },
  {
    block_type: "user_story",
    title: "Unlock with Face ID",
    content: { as_a: "veteran", i_want: "to unlock with Face ID", so_that: "I get to my appointments quickly", acceptance_criteria: ["Face ID prompt appears on launch", "Fallback to password after 3 failures"], priority: "must" },
  },
  {
    block_type: "user_story",
    title: "Stay signed in as admin",
    content: { as_a: "administrator", i_want: "to stay signed in on my work laptop", so_that: "", acceptance_criteria: [] },
  },
  { block_type: "edge_case", title: "No biometrics enrolled", content: { scenario: "The phone has no biometrics enrolled", expected_behavior: "Fall back to the standard sign-in" } },
  { block_type: "risk", title: "Security review blocks device trust", content: { risk: "Security review may block remembered devices", likelihood: "medium", impact: "high", mitigation: "Involve security in week 1", owner: "Priya" } },
  { block_type: "risk", title: "Adoption lag", content: { risk: "Users may not notice the change", mitigation: "" } },
  {
    block_type: "timeline",
    title: "Plan",
    content: {
      milestones: [
        { name: "Discovery", week: 1, deliverables: ["Interviews", "Security review"] },
        { name: "Beta", week: 4, target_date: "2025-07-01", deliverables: [] },
      ],
    },
  },
  { block_type: "free_text", title: "Background notes", content: { markdown: "Some context.\n\n## A heading inside\n\n- a list\n\n```\n# not a heading\n```" } },
].map((b, position) => ({ ...b, position }) as BlockLike);

const norm = (blocks: BlockLike[]) =>
  blocks.map((b) => ({ block_type: b.block_type, title: b.title, content: validateBlockContent(b.block_type, b.content) }));

describe("block content contract", () => {
  it("has a schema for every block type", () => {
    expect([...BLOCK_TYPES].sort()).toEqual(Object.keys(BLOCK_CONTENT_SCHEMAS).sort());
  });

  it("fills list defaults and keeps provided fields", () => {
    expect(validateBlockContent("persona", { name: "Dana" })).toEqual({ name: "Dana", description: "", goals: [], pain_points: [] });
    expect(validateBlockContent("metrics", {})).toEqual({ metrics: [] });
  });

  it("gives an empty valid content for every type", () => {
    for (const t of BLOCK_TYPES) expect(() => validateBlockContent(t, emptyBlockContent(t))).not.toThrow();
  });

  it("rejects unknown keys, wrong enums and bad dates with a 422 and field locations", () => {
    const cases: [Parameters<typeof validateBlockContent>[0], unknown, (string | number)[]][] = [
      ["persona", { name: "x", pain_point: ["typo"] }, ["content"]],
      ["risk", { risk: "r", mitigation: "m", likelihood: "certain" }, ["content", "likelihood"]],
      ["timeline", { milestones: [{ name: "Beta", target_date: "next week" }] }, ["content", "milestones", 0, "target_date"]],
      ["problem", { statement: "s", evidence: [{}] }, ["content", "evidence", 0]],
      ["user_story", { i_want: "x" }, ["content", "as_a"]],
    ];
    for (const [type, content, loc] of cases) {
      try {
        validateBlockContent(type, content);
        expect.unreachable(`${type} should fail`);
      } catch (e) {
        expect(e).toBeInstanceOf(AppError);
        const err = e as AppError;
        expect(err.code).toBe("VALIDATION_ERROR");
        const errors = err.extra.errors as { loc: (string | number)[] }[];
        expect(errors.some((x) => JSON.stringify(x.loc.slice(0, loc.length)) === JSON.stringify(loc))).toBe(true);
      }
    }
  });

  it("rejects an unknown block type", () => {
    expect(() => validateBlockContent("chart" as never, {})).toThrow(/Unknown block_type/);
  });

  it("discriminates BlockInput on block_type", () => {
    expect(BlockInput.safeParse({ block_type: "edge_case", content: { scenario: "s", expected_behavior: "e" } }).success).toBe(true);
    expect(BlockInput.safeParse({ block_type: "edge_case", content: { markdown: "x" } }).success).toBe(false);
    expect(BlockDraft.safeParse({ block_type: "free_text", title: "t", position: 0, content: { markdown: "x" } }).success).toBe(true);
  });

  it("content schemas convert to JSON schema for model tools", () => {
    for (const t of BLOCK_TYPES) expect(() => z.toJSONSchema(BLOCK_CONTENT_SCHEMAS[t], { io: "input", unrepresentable: "any" })).not.toThrow();
  });
});

describe("heading classification", () => {
  it.each([
    ["Problem", "problem"],
    ["Background", "problem"],
    ["Evidence", "problem"],
    ["Users", "persona"],
    ["Target users", "persona"],
    ["Personas", "persona"],
    ["Proposed solution", "solution"],
    ["Requirements", "solution"],
    ["Non-goals", "solution"],
    ["Goals & success metrics", "metrics"],
    ["KPIs", "metrics"],
    ["User stories", "user_story"],
    ["Edge cases", "edge_case"],
    ["Risks & mitigations", "risk"],
    ["Timeline", "timeline"],
    ["Rollout plan", "timeline"],
    ["Milestones", "timeline"],
    ["Open questions", "free_text"],
    ["Sources", "free_text"],
    ["Appendix", "free_text"],
    ["User research", "free_text"],
  ])("%s → %s", (h, t) => expect(classifyHeading(h)).toBe(t));
});

describe("rendering", () => {
  it("renders each type in a recognisable Markdown shape", () => {
    const md = blocksToMarkdown(SAMPLE_BLOCKS, { title: "PRD" });
    expect(md.startsWith("# PRD\n")).toBe(true);
    expect(md).toContain("**Impact:** Users abandon the app before reaching their task.");
    expect(md).toContain("## Personas\n\n### Veterans on the go\n\n**Name:** Dana, Army veteran");
    expect(md).toContain("| Login success rate | primary | 82% | 95% | auth logs |");
    expect(md).toContain("As a veteran, I want to unlock with Face ID, so that I get to my appointments quickly.");
    expect(md).toContain("As an administrator, I want to stay signed in on my work laptop.");
    expect(md).toContain("- [ ] Face ID prompt appears on launch");
    expect(md).toContain("- **Likelihood:** medium");
    expect(md).toContain("- **Beta** (week 4, 2025-07-01)");
    // free text headings are demoted below the block heading, code fences untouched
    expect(md).toContain("### A heading inside");
    expect(md).toContain("```\n# not a heading\n```");
  });

  it("adds a type marker only when the title alone would classify differently", () => {
    expect(blockToMarkdown({ block_type: "metrics", title: "Success metrics", content: { metrics: [] } })).not.toContain("<!--");
    expect(blockToMarkdown({ block_type: "metrics", title: "How we'll know", content: { metrics: [] } })).toContain("<!-- block:metrics -->");
  });

  it("round-trips: extractBlocks(blocksToMarkdown(blocks)) gives the same blocks", () => {
    const back = extractBlocks(blocksToMarkdown(SAMPLE_BLOCKS, { title: "PRD" }));
    const expected = norm(SAMPLE_BLOCKS);
    // free text headings are demoted by one level on the way out
    (expected[10].content as { markdown: string }).markdown = (expected[10].content as { markdown: string }).markdown.replace("## A heading", "### A heading");
    expect(back.map(({ position: _p, ...b }) => b)).toEqual(expected);
    expect(back.map((b) => b.position)).toEqual(SAMPLE_BLOCKS.map((_, i) => i));
  });

  it("round-trips every block alone, including with a title that hides its type", () => {
    for (const b of SAMPLE_BLOCKS) {
      const back = extractBlocks(blockToMarkdown(b));
      expect(back).toHaveLength(1);
      expect(back[0].block_type).toBe(b.block_type);
      expect(back[0].title).toBe(b.title);
      if (b.block_type !== "free_text") expect(back[0].content).toEqual(validateBlockContent(b.block_type, b.content));
    }
  });

  it("orders by position", () => {
    const md = blocksToMarkdown([
      { block_type: "free_text", title: "Second", content: { markdown: "b" }, position: 1 },
      { block_type: "free_text", title: "First", content: { markdown: "a" }, position: 0 },
    ]);
    expect(md.indexOf("First")).toBeLessThan(md.indexOf("Second"));
  });

  it("refuses invalid content", () => {
    expect(() => blockToMarkdown({ block_type: "risk", title: "r", content: { nope: 1 } })).toThrow(AppError);
  });
});
