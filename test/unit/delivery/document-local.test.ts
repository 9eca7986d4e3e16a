import { describe, expect, it } from "vitest";
import { AppError } from "../../../core/error";
import { DocumentType } from "../../../core/document/engine/types";
import { draftDocument, parseInstructions } from "../../../core/document/engine/local";
import { checkGrounding } from "../../../core/document/engine/grounding";
import { extractBlocks } from "../../../core/document/markdown";
import { generateRecommendations } from "../../../core/recommendation/engine/local";
import { vaInsights } from "./fake-model";

const insights = vaInsights();
const rec = generateRecommendations({ insights }).recommendations[0];
const product = { product_name: "VA: Health and Benefits" };
const addressed = insights.filter((i) => rec.addresses_insight_ids!.includes(i.id));

/** The insights in the document's reference order, read back from its link definitions. */
function referenced(content: string) {
  const defs = [...content.matchAll(/^\[I(\d+)\]: #insight-(\S+) /gm)].map((m) => [Number(m[1]), m[2]] as const);
  return defs.sort((a, b) => a[0] - b[0]).map(([, id]) => insights.find((i) => i.id === id)!);
}

describe("local drafting: every document type", () => {
  for (const type of DocumentType.options) {
    describe(type, () => {
      const d = draftDocument({ document_type: type, recommendation: rec, insights, product });

      it("has a title and starts with it", () => {
        expect(d.title.length).toBeGreaterThan(3);
        expect(d.content.startsWith(`# ${d.title}\n`)).toBe(true);
      });

      it("is grounded: every [In] is defined, every quote is verbatim, every definition points at an input insight", () => {
        const refs = referenced(d.content);
        expect(refs.length).toBeGreaterThan(0);
        expect(refs.every(Boolean)).toBe(true);
        expect(checkGrounding(d.content, refs, [rec.title])).toEqual([]);
        const used = new Set([...d.content.matchAll(/\[I(\d+)\](?!:)/g)].map((m) => Number(m[1])));
        for (const n of used) expect(n).toBeLessThanOrEqual(refs.length);
      });

      it("extracts into typed blocks (not just free text)", () => {
        const blocks = extractBlocks(d.content);
        const types = new Set(blocks.map((b) => b.block_type));
        expect(types.has("problem")).toBe(true);
        expect([...types].filter((t) => t !== "free_text").length).toBeGreaterThanOrEqual(2);
      });
    });
  }

  it("writes the PRD sections in order, extracting to the expected block types", () => {
    const d = draftDocument({ document_type: "prd", recommendation: rec, insights, product });
    const headings = [...d.content.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(headings).toEqual(["Problem", "Evidence", "Users", "Goals & success metrics", "Solution", "User stories", "Edge cases", "Risks", "Timeline", "Open questions", "Sources"]);
    const types = extractBlocks(d.content).map((b) => b.block_type);
    for (const t of ["problem", "persona", "metrics", "solution", "user_story", "edge_case", "risk", "timeline"]) expect(types).toContain(t);
    const problem = extractBlocks(d.content).find((b) => b.block_type === "problem")!;
    const evidence = (problem.content as { evidence: { insight_id?: string; quote?: string }[] }).evidence;
    expect(evidence.length).toBeGreaterThan(0);
    for (const e of evidence) {
      const i = insights.find((x) => x.id === e.insight_id)!;
      expect(i).toBeDefined();
      expect(i.quotes.map((q) => q.text)).toContain(e.quote);
    }
  });

  it("cites the recommendation's insights first, in its order", () => {
    const d = draftDocument({ document_type: "prd", recommendation: rec, insights, product });
    expect(referenced(d.content).map((i) => i.id)).toEqual(addressed.map((i) => i.id).sort((a, b) => rec.addresses_insight_ids!.indexOf(a) - rec.addresses_insight_ids!.indexOf(b)));
  });

  it("is deterministic", () => {
    const a = draftDocument({ document_type: "spec", recommendation: rec, insights, product });
    expect(draftDocument({ document_type: "spec", recommendation: rec, insights: vaInsights(), product })).toEqual(a);
  });

  it("drafts from insights alone (no recommendation) and states what it drew on", () => {
    const d = draftDocument({ document_type: "memo", insights: insights.slice(0, 5) });
    expect(d.content).toMatch(/from 5 insights\./);
    expect(checkGrounding(d.content, referenced(d.content))).toEqual([]);
  });

  it("drafts from a recommendation without insights, making no research claims", () => {
    const d = draftDocument({ document_type: "prd", recommendation: { ...rec, addresses_insight_ids: [] }, insights: [] });
    expect(d.content).toMatch(/No insights were provided/);
    expect(d.content).not.toMatch(/\[I\d+\]/);
  });

  it("refuses to draft from nothing", () => {
    try {
      draftDocument({ document_type: "prd", insights: [] });
      expect.unreachable();
    } catch (e) {
      expect((e as AppError).code).toBe("VALIDATION_ERROR");
    }
    expect(() => draftDocument({ document_type: "poem" as never, insights })).toThrow(AppError);
  });
});

describe("user instructions", () => {
  it("parses audience, length, sections and focus", () => {
    expect(parseInstructions("Keep it brief for executives, include an FAQ section and no risks section. Focus on prescriptions.")).toMatchObject({
      audience: "executives",
      length: "brief",
      include: ["FAQ"],
      exclude: ["risks"],
      focus: "prescriptions",
    });
    expect(parseInstructions("A detailed version for engineers").length).toBe("detailed");
    expect(parseInstructions(undefined)).toMatchObject({ length: "normal", include: [], exclude: [] });
  });

  it("applies what it can and quotes the instructions with what was applied", () => {
    const instr = "Keep it brief for executives, include an FAQ section and no risks section";
    const d = draftDocument({ document_type: "prd", recommendation: rec, insights, product, user_instructions: instr });
    expect(d.content).toContain(`> **Instructions:** “${instr}”`);
    expect(d.content).toMatch(/Applied: audience: executives; length: brief; removed section: Risks; added placeholder section: FAQ/);
    expect(d.content).not.toMatch(/^## Risks$/m);
    expect(d.content).toMatch(/^## Summary$/m);
    expect(d.content).toMatch(/^## FAQ$/m);
    const normal = draftDocument({ document_type: "prd", recommendation: rec, insights, product });
    expect(d.content.length).toBeLessThan(normal.content.length);
    // the FAQ placeholder stays free text
    expect(extractBlocks(d.content).find((b) => b.title === "FAQ")?.block_type).toBe("free_text");
  });

  it("never removes the evidence, and says so", () => {
    const d = draftDocument({ document_type: "prd", recommendation: rec, insights, user_instructions: "skip the evidence section" });
    expect(d.content).toMatch(/^## Evidence$/m);
    expect(d.content).toMatch(/Not applied: kept “evidence”/);
  });

  it("adds a known section from the catalogue", () => {
    const d = draftDocument({ document_type: "memo", recommendation: rec, insights, user_instructions: "please include a timeline section" });
    expect(d.content).toMatch(/^## Timeline$/m);
    expect(d.content).toMatch(/added section: Timeline/);
  });

  it("focus reorders the cited insights", () => {
    const d = draftDocument({ document_type: "memo", insights, user_instructions: "focus on prescriptions and medications" });
    const first = referenced(d.content)[0];
    expect(first.title).toMatch(/medication|prescription/i);
    expect(d.content).toMatch(/focus: prescriptions and medications/);
  });

  it("says when nothing could be applied", () => {
    const d = draftDocument({ document_type: "memo", recommendation: rec, insights, user_instructions: "Use a warm tone" });
    expect(d.content).toMatch(/Nothing in them could be applied automatically/);
  });
});

describe("drafting from the evidence (issue #11)", () => {
  const q = (text: string, speaker: string | null = null, source_id = "s1") => ({ text, source_id, speaker });
  const base = { description: "", frequency: 2, mention_count: 4 };
  // Veterans are the participants; nurses are people they talk about (and a keyword template named a theme after them).
  const research = [
    {
      ...base,
      id: "nurse",
      title: "Users struggle with nurse and Neuro",
      insight_type: "pain_point",
      severity: "high" as const,
      quotes: [q("As a veteran I can't get the nurse line to call me back every time I need a refill", "P1"), q("The nurse told me to wait for the Neuro clinic and I never heard back", "P2")],
    },
    {
      ...base,
      id: "ask",
      title: "Participants want to message the clinic from the app",
      insight_type: "feature_request",
      severity: "medium" as const,
      quotes: [q("I wish I could message the clinic from the app instead of calling", "P3"), q("The nurse said to call the clinic", "P2")],
    },
    {
      ...base,
      id: "vague",
      title: "Feedback on Neuro",
      insight_type: "opportunity",
      severity: "low" as const,
      quotes: [q("Neuro is on the third floor of the building", "P4")],
    },
  ];

  it("names the persona after who the participants are, not after a frequent word", () => {
    const d = draftDocument({ document_type: "prd", insights: research });
    expect(d.content).toMatch(/^### Veterans$/m);
    expect(d.content).not.toMatch(/^### Nurses$/m);
    expect(d.content).toMatch(/As a veteran, I want/);
    // With no self-description anywhere, the persona is "users" and the open question asks who they are.
    const anon = draftDocument({ document_type: "prd", insights: [{ ...research[2], quotes: [q("Neuro is on the third floor of the building")] }] });
    expect(anon.content).toMatch(/^### Users$/m);
    expect(anon.content).toMatch(/Who is the primary user segment\?/);
  });

  it("writes the solution from what users ask for and what breaks, else marks it an open question", () => {
    const d = draftDocument({ document_type: "prd", insights: research });
    const solution = d.content.slice(d.content.indexOf("## Solution"), d.content.indexOf("## User stories"));
    expect(solution).toContain("Build what users ask for: “I wish I could message the clinic from the app instead of calling”");
    expect(solution).toContain("Fix what breaks (users struggle with nurse and Neuro): “As a veteran I can't get the nurse line");
    expect(solution).toMatch(/Open question: what should change for “Feedback on Neuro” \[I\d\]\?/);
    expect(checkGrounding(d.content, referenced2(d.content, research))).toEqual([]);
  });

  it("takes edge cases from conditions users reported, and marks everything else as an open question", () => {
    const d = draftDocument({ document_type: "prd", insights: research });
    const edge = d.content.slice(d.content.indexOf("## Edge cases"), d.content.indexOf("## Risks"));
    const items = edge.split("\n").filter((l) => l.startsWith("- "));
    expect(items.length).toBeGreaterThan(0);
    for (const item of items) expect(item).toMatch(/^- (Reported: “[^”]+” \[I\d\] → expected behaviour: open question|Open question)/);
    expect(edge).toContain("Reported: “As a veteran I can't get the nurse line to call me back every time I need a refill”");
    // No canned sign-in or network case: nobody mentioned them.
    expect(edge).not.toMatch(/biometric|network|first-time/i);
    const bare = draftDocument({ document_type: "prd", insights: [research[2]] });
    const bareEdge = bare.content.slice(bare.content.indexOf("## Edge cases"), bare.content.indexOf("## Risks"));
    expect(bareEdge).toMatch(/Open question: the research reports no edge case/);
  });
});

function referenced2(content: string, list: { id: string }[]) {
  const defs = [...content.matchAll(/^\[I(\d+)\]: #insight-(\S+) /gm)].map((m) => [Number(m[1]), m[2]] as const);
  return defs.sort((a, b) => a[0] - b[0]).map(([, id]) => list.find((i) => i.id === id)!) as never;
}
