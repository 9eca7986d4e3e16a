/**
 * A ticket fits one DynamoDB item (400 KB) and the trackers' limits (GitHub takes 65,536 characters of issue body):
 * a generated body is cut to TICKET_BODY_MAX with its evidence in a budget of its own (quotes whole, the rest
 * counted), criteria in three-byte characters are left out past the ticket's byte budget, and a review whose texts
 * pass that budget together answers 422 (it was a 500 from the store).
 */
import { describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { sourceWith } from "../support/sources";
import { expectEnvelope } from "./_helpers";
import { EVIDENCE_MAX_CHARS } from "../../core/ticket/draft";
import { TICKET_BODY_MAX, TICKET_TEXT_MAX_BYTES } from "../../core/ticket";

/** A distinct, readable line of about `chars` characters. */
const longLine = (k: number, chars: number) => `Quote ${k}: ${"the export stalls at ninety percent and I start again ".repeat(Math.ceil(chars / 53))}`.slice(0, chars);

describe("ticket size bounds", () => {
  it("generate cuts a long block's body and its evidence to fit, leaves out criteria past the byte budget; a review over the budget is 422", async () => {
    const { owner, workspace } = await newWorkspace("Ticket bounds");
    const token = owner.token;
    // Eight insights with three quotes of 5,000 characters each: 120,000 characters of evidence before the bound.
    const lines = Array.from({ length: 24 }, (_, k) => longLine(k, 5_000));
    const sourceId = await sourceWith(token, workspace.id, lines, "Long interviews.md");
    const insightIds: string[] = [];
    for (let i = 0; i < 8; i++) {
      const res = await call("POST", "/api/insights", {
        token,
        body: {
          workspace_id: workspace.id, insight_type: "pain_point", title: `Exports stall ${i}`, description: "Exports stall near the end.", severity: "high", source_ids: [sourceId],
          quotes: [0, 1, 2].map((q) => ({ text: lines[i * 3 + q]!, source_id: sourceId, speaker: "Ana" })),
        },
      });
      expect(res.status, res.text).toBe(201);
      insightIds.push(res.body.id);
    }
    const doc = await call("POST", "/api/documents", { token, body: { workspace_id: workspace.id, document_type: "prd", title: "Exports", content: "# Exports\n" } });
    expect(doc.status, doc.text).toBe(201);
    const block = async (block_type: string, title: string, content: Record<string, unknown>) => {
      const res = await call("POST", `/api/documents/${doc.body.id}/blocks`, { token, body: { block_type, title, content } });
      expect(res.status, res.text).toBe(201);
      return res.body.id as string;
    };
    const cites = insightIds.map((id) => `[evidence](#insight-${id})`).join(" ");
    const freeText = await block("free_text", "Exports", { markdown: `Make exports resumable. ${cites}\n\n${"Exports restart from zero after a stall. ".repeat(2_400)}`.slice(0, 100_000) });
    // 40 criteria of 2,000 three-byte characters: 240 KB of criteria alone (a block's content holds 256 KB).
    const solution = await block("solution", "Chunked exports", { summary: "Export in chunks.", details: Array.from({ length: 40 }, (_, k) => `${k}${"漢".repeat(1_999)}`.slice(0, 2_000)) });

    const gen = await call("POST", "/api/execution/generate", { token, body: { workspace_id: workspace.id, document_id: doc.body.id, include_block_types: ["free_text", "solution"] } });
    expect(gen.status, gen.text).toBe(200);
    const of = (blockId: string) => (gen.body.tickets as any[]).find((t) => t.block_id === blockId)!;
    const long = of(freeText);
    expect(long.body.length).toBeLessThanOrEqual(TICKET_BODY_MAX);
    expect(long.body).toContain("… (cut: the block is longer than a ticket holds; the document has the whole text)");
    expect(long.trace.body).toMatch(/\(cut to fit\)/);
    const evidence = long.body.slice(long.body.indexOf("## Evidence"), long.body.indexOf("\n\n---\n\n"));
    expect(evidence.length).toBeLessThanOrEqual(EVIDENCE_MAX_CHARS);
    // Quotes stay whole: the first one is there verbatim, the ones past the budget are counted.
    expect(evidence).toContain(`“${lines[0]}”`);
    expect(evidence).toMatch(/\(\d+ more quotes of the cited insights left out: a ticket holds 20,000 characters of evidence\)/);
    expect(long.evidence_insight_ids).toEqual(insightIds);

    const wide = of(solution);
    const bytes = (t: any) => [t.title, t.body, ...t.acceptance_criteria, ...t.labels].reduce((n: number, x: string) => n + Buffer.byteLength(x), 0);
    expect(bytes(wide)).toBeLessThanOrEqual(TICKET_TEXT_MAX_BYTES);
    expect(wide.acceptance_criteria.length).toBeGreaterThan(0);
    expect(wide.acceptance_criteria.length).toBeLessThan(40);
    expect(wide.acceptance_criteria[0]).toBe(`0${"漢".repeat(1_999)}`);
    expect(wide.trace.acceptance_criteria).toMatch(new RegExp(`the last ${40 - wide.acceptance_criteria.length} left out: the ticket's size limit`));

    // A review whose texts pass the budget together: 422, and the ticket is as it was.
    const big = { body: "漢".repeat(TICKET_BODY_MAX), acceptance_criteria: Array.from({ length: 50 }, (_, k) => `${k}${"漢".repeat(1_990)}`) };
    const refused = await call("PATCH", `/api/execution/tickets/${wide.id}`, { token, body: big });
    expectEnvelope(refused, 422, "VALIDATION_ERROR");
    expect(refused.body.errors[0]).toMatchObject({ loc: ["body"], type: "too_long" });
    const listed = await call("GET", `/api/execution/${doc.body.id}/tickets`, { token });
    expect(listed.body.tickets.find((t: any) => t.id === wide.id)).toMatchObject({ status: "generated", body: wide.body });
    // Within the budget the same review fields are taken.
    const fine = await call("PATCH", `/api/execution/tickets/${wide.id}`, { token, body: { body: big.body, acceptance_criteria: ["Chunks resume"] } });
    expect(fine.status, fine.text).toBe(200);
    expect(fine.body).toMatchObject({ status: "reviewed", body: big.body });
  });
});
