/**
 * A block becomes a ticket (core/ticket/draft.ts): each field by its rule and traced to the block, the body citing
 * the block's insights with their verbatim quotes and source names, and the fixed ticket id per block.
 */
import { describe, expect, it } from "vitest";
import { citedInsightIds, draftTicket, effortOf, insightRefs, riskPriority, ticketIdOf, type EvidenceInsight, type TicketDraft } from "../../core/ticket/draft";

const DOC = { id: "d1", title: "Resumable uploads PRD", document_type: "prd" };
const INSIGHT: EvidenceInsight = {
  id: "i-1", title: "Uploads fail on flaky connections", insight_type: "pain_point", severity: "high", frequency: 2,
  quotes: [
    { text: "I lost a 2 GB upload twice\nand gave up", source_id: "s1", source_name: "Interview 3 (Ana).md", speaker: "Ana" },
    { text: "The upload restarts from zero every time.", source_id: "s2", source_name: "support-tickets.csv", speaker: null },
  ],
};
const draft = (block: Parameters<typeof draftTicket>[1], insights: EvidenceInsight[] = []) => draftTicket(DOC, block, insights) as TicketDraft;

describe("draftTicket", () => {
  it("a user story: title from i_want, MoSCoW priority, its criteria, effort from their number, evidence quoted verbatim with sources", () => {
    const t = draft({
      id: "b1", block_type: "user_story", title: "User story", position: 0,
      content: { as_a: "analyst", i_want: "to resume an interrupted upload [I1]", so_that: "I do not start over", acceptance_criteria: ["Resumes from the last chunk", "Shows progress", "Works after a reload", "Fails over 5 GB with a message"], priority: "must" },
    }, [INSIGHT]);
    expect(t.title).toBe("Resume an interrupted upload");
    expect(t.ticket_type).toBe("story");
    expect(t.priority).toBe("P1");
    expect(t.acceptance_criteria).toHaveLength(4);
    expect(t.estimated_effort).toBe("L");
    expect(t.labels).toEqual(["user-story", "pain-point"]);
    expect(t.body).toContain("As an analyst, I want to resume an interrupted upload [I1], so that I do not start over.");
    expect(t.body).toContain("## Evidence");
    for (const q of INSIGHT.quotes) expect(t.body).toContain(`“${q.text}”`);
    expect(t.body).toContain("— Ana, *Interview 3 (Ana).md*");
    expect(t.body).toContain("*support-tickets.csv*");
    expect(t.evidence_insight_ids).toEqual(["i-1"]);
    expect(t.trace).toMatchObject({ title: "user_story.i_want", priority: "user_story.priority (MoSCoW must)", acceptance_criteria: "user_story.acceptance_criteria", estimated_effort: "4 acceptance criteria" });
  });

  it("a block's own title wins; without a rating the cited insights' highest severity sets the priority, else P2", () => {
    const block = { id: "b2", block_type: "solution" as const, title: "Chunked resumable uploads", position: 1, content: { summary: "Upload in 8 MB chunks. Keep an offset.", details: ["Chunk API"] } };
    const withEvidence = draft(block, [{ ...INSIGHT, severity: "critical" }, { ...INSIGHT, id: "i-2", severity: "low" }]);
    expect(withEvidence).toMatchObject({ title: "Chunked resumable uploads", ticket_type: "feature", priority: "P0", estimated_effort: "S", acceptance_criteria: ["Chunk API"] });
    expect(withEvidence.trace.title).toBe("block.title");
    expect(withEvidence.trace.priority).toMatch(/critical/);
    const bare = draft({ ...block, title: "Solution" });
    expect(bare.title).toBe("Upload in 8 MB chunks");
    expect(bare.priority).toBe("P2");
    expect(bare.body).not.toContain("## Evidence");
  });

  it("a risk's priority is likelihood × impact; an edge case becomes a task with its expected behavior as criterion", () => {
    expect(riskPriority("high", "high")).toBe("P0");
    expect(riskPriority("high", "medium")).toBe("P1");
    expect(riskPriority("medium", "medium")).toBe("P2");
    expect(riskPriority("low", "medium")).toBe("P3");
    expect(riskPriority(undefined, "high")).toBe("P1");
    expect(riskPriority()).toBeNull();
    const risk = draft({ id: "b3", block_type: "risk", title: "Risk", position: 2, content: { risk: "Storage costs grow.", likelihood: "high", impact: "medium", mitigation: "Expire partial uploads after 24 h" } });
    expect(risk).toMatchObject({ title: "Mitigate: Storage costs grow", priority: "P1", acceptance_criteria: ["Expire partial uploads after 24 h"], labels: ["risk"] });
    const edge = draft({ id: "b4", block_type: "edge_case", title: "Edge case", position: 3, content: { scenario: "The network drops mid-chunk", expected_behavior: "The chunk is retried" } });
    expect(edge).toMatchObject({ ticket_type: "task", acceptance_criteria: ["The network drops mid-chunk: The chunk is retried"], estimated_effort: "S" });
  });

  it("skips blocks that describe no work: a won't story, an empty block", () => {
    expect(draftTicket(DOC, { id: "b5", block_type: "user_story", title: "", position: 0, content: { as_a: "admin", i_want: "SSO", priority: "wont" } }, [])).toEqual({ skip: "wont_do" });
    expect(draftTicket(DOC, { id: "b6", block_type: "metrics", title: "", position: 0, content: { metrics: [] } }, [])).toEqual({ skip: "empty" });
  });

  it("effort sizes by the number of criteria", () => {
    expect([0, 1, 2, 3, 4, 6, 7, 20].map(effortOf)).toEqual(["S", "S", "M", "M", "L", "L", "XL", "XL"]);
  });
});

describe("cited insights", () => {
  it("resolves [In] through the document's definitions, else related_insight_ids in order; evidence ids and #insight links count", () => {
    const refs = insightRefs("## Sources\n\n[I1]: #insight-aaa \"A\"\n[I3]: #insight-ccc \"C\"\n", ["r1", "r2", "r3"]);
    expect([...refs]).toEqual([[1, "aaa"], [2, "r2"], [3, "ccc"]]);
    expect(citedInsightIds({ block_type: "solution", content: { summary: "Do it [I3] and [I1], again [I3]", details: ["see [I2]"] } }, refs)).toEqual(["ccc", "aaa", "r2"]);
    expect(citedInsightIds({ block_type: "problem", content: { statement: "x", evidence: [{ insight_id: "e1" }, { quote: "q" }] } }, refs)).toEqual(["e1"]);
    expect(citedInsightIds({ block_type: "free_text", content: { markdown: "[why](#insight-zzz)" } }, refs)).toEqual(["zzz"]);
  });

  it("one fixed id per (document, block), a valid UUID", () => {
    const id = ticketIdOf("doc", "block");
    expect(id).toBe(ticketIdOf("doc", "block"));
    expect(id).not.toBe(ticketIdOf("doc", "other"));
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});
