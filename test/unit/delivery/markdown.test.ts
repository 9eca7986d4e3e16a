import { describe, expect, it } from "vitest";
import { BlockDraft, validateBlockContent } from "../../../core/document/blocks";
import { extractBlocks, parseIntent, parseStory } from "../../../core/document/markdown";

const ID = "11111111-1111-4111-8111-111111111111";

const HUMAN_PRD = `# PRD: Faster login

Owner: Sam · Status: draft

## Background

Veterans must re-enter tokens every time they open the app [I1].

Impact: users abandon the app.

## Evidence

- “There’s no point of facial recognition if I have to log in through Defense Server every time.” — App Store review [I1]
- Login tickets doubled in May

## Target users

- **Veterans on the go** — check appointments from their phone
- **Caregivers**: help a spouse with low vision

## Success metrics

| KPI | Current | Goal | How measured |
|---|---|---|---|
| Login success rate | 82% | 95% | auth logs |
| Time to home screen | 40s | < 10s | |

## Proposed solution

Use biometrics after the first login.

- Remember the device for 30 days
- Face ID unlock

## Out of scope

- Replacing the identity provider

## User stories

- As a veteran, I want to unlock with Face ID, so that I get in quickly.
  - Face ID prompt appears on launch
  - Fallback to password after 3 failures
- As a caregiver, I want to stay signed in on a shared device

## Edge cases

- Device has no biometrics → fall back to password
- If the session expires mid-refill, the app keeps the draft refill
- User changes phones: device trust is revoked

## Risks

| Risk | Likelihood | Impact | Mitigation | Owner |
|---|---|---|---|---|
| Security review blocks device trust | Medium | High | Involve security in week 1 | Priya |

- Adoption lag. Likelihood: low; Impact: medium; Mitigation: in-app hint

## Rollout

- **Discovery** (week 1): interviews; security review
- **Build** (week 4)
  - Face ID
  - Remember device
- Beta: 2025-07-01

## Open questions

Do we need a PIN fallback?

[I1]: #insight-${ID} "Login friction"
`;

describe("extractBlocks", () => {
  const blocks = extractBlocks(HUMAN_PRD);
  const byType = (t: string) => blocks.filter((b) => b.block_type === t);

  it("returns valid, positioned drafts in document order", () => {
    expect(blocks.map((b) => b.position)).toEqual(blocks.map((_, i) => i));
    for (const b of blocks) expect(BlockDraft.safeParse(b).success).toBe(true);
    expect(blocks.map((b) => b.block_type)).toEqual([
      "free_text", "problem", "persona", "persona", "metrics", "solution", "user_story", "user_story",
      "edge_case", "edge_case", "edge_case", "risk", "risk", "timeline", "free_text",
    ]);
  });

  it("keeps the preamble (not the title) as an Introduction", () => {
    expect(blocks[0]).toMatchObject({ block_type: "free_text", title: "Introduction", content: { markdown: "Owner: Sam · Status: draft" } });
  });

  it("fills the problem from paragraphs, labels and the following Evidence section, resolving [I1] to the insight id", () => {
    const [p] = byType("problem");
    expect(p.title).toBe("Background");
    expect(p.content).toMatchObject({ statement: "Veterans must re-enter tokens every time they open the app [I1].", impact: "users abandon the app." });
    const ev = (p.content as { evidence: unknown[] }).evidence;
    expect(ev).toEqual([
      { insight_id: ID, quote: "There’s no point of facial recognition if I have to log in through Defense Server every time.", note: "App Store review" },
      { note: "Login tickets doubled in May" },
    ]);
  });

  it("makes one persona per list item", () => {
    expect(byType("persona").map((b) => b.content)).toEqual([
      { name: "Veterans on the go", description: "check appointments from their phone", goals: [], pain_points: [] },
      { name: "Caregivers", description: "help a spouse with low vision", goals: [], pain_points: [] },
    ]);
  });

  it("reads a metrics table with synonym headers", () => {
    expect(byType("metrics")[0].content).toEqual({
      metrics: [
        { name: "Login success rate", baseline: "82%", target: "95%", measurement: "auth logs" },
        { name: "Time to home screen", baseline: "40s", target: "< 10s" },
      ],
    });
  });

  it("attaches 'Out of scope' to the solution", () => {
    expect(byType("solution")[0].content).toEqual({
      summary: "Use biometrics after the first login.",
      details: ["Remember the device for 30 days", "Face ID unlock"],
      alternatives_considered: [],
      non_goals: ["Replacing the identity provider"],
    });
  });

  it("parses stories with nested acceptance criteria", () => {
    const [a, b] = byType("user_story");
    expect(a.content).toEqual({ as_a: "veteran", i_want: "to unlock with Face ID", so_that: "I get in quickly", acceptance_criteria: ["Face ID prompt appears on launch", "Fallback to password after 3 failures"] });
    expect(a.title).toBe("Unlock with Face ID");
    expect(b.content).toMatchObject({ as_a: "caregiver", i_want: "to stay signed in on a shared device", so_that: "" });
  });

  it("makes one edge case per list item, splitting scenario and expected behaviour", () => {
    expect(byType("edge_case").map((b) => b.content)).toEqual([
      { scenario: "Device has no biometrics", expected_behavior: "Fall back to password" },
      { scenario: "If the session expires mid-refill", expected_behavior: "The app keeps the draft refill" },
      { scenario: "User changes phones", expected_behavior: "Device trust is revoked" },
    ]);
  });

  it("reads risks from table rows and from labelled list items", () => {
    expect(byType("risk").map((b) => b.content)).toEqual([
      { risk: "Security review blocks device trust", likelihood: "medium", impact: "high", mitigation: "Involve security in week 1", owner: "Priya" },
      { risk: "Adoption lag", likelihood: "low", impact: "medium", mitigation: "in-app hint" },
    ]);
  });

  it("reads milestones with weeks, dates and deliverables", () => {
    expect(byType("timeline")[0]).toMatchObject({
      title: "Rollout",
      content: {
        milestones: [
          { name: "Discovery", week: 1, deliverables: ["interviews", "security review"] },
          { name: "Build", week: 4, deliverables: ["Face ID", "Remember device"] },
          { name: "Beta", target_date: "2025-07-01", deliverables: [] },
        ],
      },
    });
  });

  it("keeps unmapped sections (with link definitions) as free text", () => {
    const last = blocks[blocks.length - 1];
    expect(last.title).toBe("Open questions");
    expect((last.content as { markdown: string }).markdown).toContain("Do we need a PIN fallback?");
  });

  it("splits sub-sections of a multi-instance section into blocks, folding field-label headings", () => {
    const md = `## Personas\n\n### Dana\n\nNurse on night shifts.\n\n#### Goals\n\n- Chart fast\n\n#### Pain points\n\n- Slow login\n\n### Omar\n\nClinic admin.\n`;
    const b = extractBlocks(md);
    expect(b.map((x) => [x.block_type, x.title])).toEqual([["persona", "Dana"], ["persona", "Omar"]]);
    expect(b[0].content).toEqual({ name: "Dana", description: "Nurse on night shifts.", goals: ["Chart fast"], pain_points: ["Slow login"] });
  });

  it("reads timeline sub-sections as milestones", () => {
    const b = extractBlocks("## Timeline\n\n### Phase 1 (week 2)\n\n- Design\n\n### Phase 2\n\nBy 2025-09-01.\n\n- Build\n- Test\n");
    expect(b).toEqual([
      {
        block_type: "timeline",
        title: "Timeline",
        position: 0,
        content: { milestones: [{ name: "Phase 1", week: 2, deliverables: ["Design"] }, { name: "Phase 2", target_date: "2025-09-01", deliverables: ["Build", "Test"] }] },
      },
    ]);
  });

  it("honours block markers over heading heuristics", () => {
    const b = extractBlocks("<!-- block:risk -->\n## Vendor lock-in\n\nWe depend on one provider.\n\n- **Mitigation:** keep an export path\n");
    expect(b).toHaveLength(1);
    expect(b[0]).toMatchObject({ block_type: "risk", title: "Vendor lock-in", content: { risk: "We depend on one provider.", mitigation: "keep an export path" } });
  });

  it("keeps prose of a metrics section in a notes block instead of dropping it", () => {
    const b = extractBlocks("## Metrics\n\nWe care most about retention.\n\n- Retention: baseline 40% → target 50%\n");
    expect(b.map((x) => x.block_type)).toEqual(["metrics", "free_text"]);
    expect(b[0].content).toEqual({ metrics: [{ name: "Retention", baseline: "40%", target: "50%" }] });
    expect(b[1]).toMatchObject({ title: "Metrics — notes", content: { markdown: "We care most about retention." } });
  });

  it("turns a document without headings into one free-text block, and empty input into none", () => {
    expect(extractBlocks("Just a note.\n\nTwo paragraphs.")).toEqual([{ block_type: "free_text", title: "Notes", content: { markdown: "Just a note.\n\nTwo paragraphs." }, position: 0 }]);
    expect(extractBlocks("")).toEqual([]);
  });

  it("falls back to free text for a stories section with no story in it", () => {
    const b = extractBlocks("## User stories\n\nTo be written.\n");
    expect(b).toEqual([{ block_type: "free_text", title: "User stories", content: { markdown: "To be written." }, position: 0 }]);
  });

  it("never fails on oversized user content: it clamps to the contract's limits", () => {
    const huge = "word ".repeat(1000);
    const b = extractBlocks(`## ${"Long heading ".repeat(60)}\n\nx\n\n## Users\n\n- ${huge}\n\n## Edge cases\n\n${Array.from({ length: 150 }, (_, i) => `- case ${i} → ok`).join("\n")}\n`);
    expect(b[0].title.length).toBeLessThanOrEqual(500);
    expect((b[1].content as { name: string }).name.length).toBeLessThanOrEqual(2000);
    expect(b.filter((x) => x.block_type === "edge_case")).toHaveLength(150);
  });

  it("every draft's content passes its own contract", () => {
    for (const b of blocks) expect(() => validateBlockContent(b.block_type, b.content)).not.toThrow();
  });
});

describe("parseStory", () => {
  it.each([
    ["As a nurse, I want a summary header so that I can find vitals fast.", { as_a: "nurse", i_want: "a summary header", so_that: "I can find vitals fast" }],
    ["As an admin I need to export users, so that audits pass", { as_a: "admin", i_want: "to export users", so_that: "audits pass" }],
    ["as a caregiver, I'd like to see refills", { as_a: "caregiver", i_want: "to see refills", so_that: "" }],
  ])("%s", (s, expected) => expect(parseStory(s)).toEqual(expected));
  it("returns null without the pattern", () => expect(parseStory("Users want faster login")).toBeNull());
});

describe("parseIntent", () => {
  const text =
    "Our nurses keep losing their place in long patient charts, which is frustrating. We should add a sticky summary header. " +
    "Aim to cut time-on-chart by 20%. What if the chart is empty? Security might be a concern. Ship by Q3. " +
    "As a nurse, I want a summary header so that I can find vitals fast. The weather is nice.";
  const blocks = parseIntent(text);

  it("produces a typed skeleton in a fixed order with positions", () => {
    expect(blocks.map((b) => b.block_type)).toEqual(["problem", "persona", "solution", "user_story", "metrics", "edge_case", "risk", "timeline", "free_text"]);
    expect(blocks.map((b) => b.position)).toEqual(blocks.map((_, i) => i));
  });

  it("fills each block from the matching sentences", () => {
    const get = (t: string) => blocks.find((b) => b.block_type === t)!.content as Record<string, unknown>;
    expect(get("problem").statement).toBe("Our nurses keep losing their place in long patient charts, which is frustrating.");
    expect(get("persona").name).toBe("Nurses");
    expect(get("solution").summary).toBe("We should add a sticky summary header.");
    expect(get("user_story")).toMatchObject({ as_a: "nurse", i_want: "a summary header", so_that: "I can find vitals fast" });
    expect(get("metrics")).toEqual({ metrics: [{ name: "Aim to cut time-on-chart by 20%", target: "by 20%" }] });
    expect(get("edge_case").scenario).toBe("What if the chart is empty");
    expect(get("risk").risk).toBe("Security might be a concern");
    expect((get("timeline").milestones as { name: string }[])[0].name).toBe("Ship by Q3");
    expect(get("free_text").markdown).toBe("The weather is nice.");
  });

  it("always returns a problem and a solution, empty when the text has none", () => {
    const b = parseIntent("The weather is nice.");
    expect(b.map((x) => x.block_type)).toEqual(["problem", "solution", "free_text"]);
    expect(b[0].content).toMatchObject({ statement: "" });
    expect(b[1].content).toMatchObject({ summary: "" });
  });
});
