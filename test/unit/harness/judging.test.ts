/**
 * The pure half of the post-flight (core/harness/claims.ts, contract.ts, rqs.ts, repair.ts) and the mid-stream
 * alerts (alerts.ts): what an answer claims, the contracts per workflow, the RQS formula, repair requests, and the
 * local engine's answer to one.
 */
import { describe, expect, it } from "vitest";
import { normalise, statementsOf } from "../../../core/harness/claims";
import { checkContract, type RunArtifacts } from "../../../core/harness/contract";
import { groundingOf, rqsOf, RQS_THRESHOLD } from "../../../core/harness/rqs";
import { parseRepairTurn, repairedInstructions, repairTurn, titleFromEvidence } from "../../../core/harness/repair";
import { StreamMonitor } from "../../../core/harness/alerts";
import type { WorkspaceSnapshot } from "../../../core/harness/profile";
import type { VerifierResult } from "../../../core/harness/verifier";
import { repairAnswer } from "../../../core/agent/local-engine";

const I1 = "11111111-1111-4111-8111-111111111111";
const S1 = "22222222-2222-4222-8222-222222222222";
const S2 = "33333333-3333-4333-8333-333333333333";

const ANSWER = [
  "From 1 of 3 insights in this workspace:",
  "",
  `1. **Sign-in loops after the update** (pain point, high, 2 sources) [insight ${I1}]`,
  `   > "I keep getting sent back to the login screen" (Ana) [source ${S1}]`,
  `This workspace has 3 research sources: 2 interviews, 1 support ticket (3 completed):`,
  `- **ana.md** (interview, completed, 4 mentions) [source ${S2}]`,
  "(3 sources, 2 insights, 1 recommendations, 0 documents.)",
].join("\n");

const base = (over: Partial<RunArtifacts> = {}): RunArtifacts => ({ text: ANSWER, evidenceUsed: true, insights: [], recommendations: [], documents: [], ...over });

describe("claims of an answer", () => {
  it("reads citations, attributed quotes and counts per statement", () => {
    const s = statementsOf(ANSWER);
    expect(s.map((x) => x.text.slice(0, 12))).toEqual(["From 1 of 3 ", "1. **Sign-in", `> "I keep ge`, "This workspa", "- **ana.md**", "(3 sources, "]);
    expect(s[0]!.counts).toEqual([]); // "of 3 insights" is a search's total, not a claim about the workspace
    expect(s[1]!.ids).toEqual([{ kind: "insight", id: I1 }]);
    expect(s[1]!.counts).toEqual([{ what: "insight_sources", insightId: I1, n: 2 }]);
    expect(s[2]!.quotes).toEqual([{ text: "I keep getting sent back to the login screen", sourceId: S1 }]);
    expect(s[3]!.counts).toEqual([
      { what: "sources_total", n: 3 },
      { what: "sources_of_type", type: "interview", n: 2 },
      { what: "sources_of_type", type: "support_ticket", n: 1 },
      { what: "sources_with_status", status: "completed", n: 3 },
    ]);
    expect(s[4]!.counts).toEqual([{ what: "source_mentions", sourceId: S2, n: 4 }]);
    expect(s[5]!.counts.map((c) => (c as { kind: string; n: number }).kind + c.n)).toEqual(["source3", "insight2", "recommendation1", "document0"]);
  });
});

describe("contracts per workflow type", () => {
  it("passes a cited answer, fails an uncited one drawn from evidence, and an uncited block quote", () => {
    expect(checkContract("chat", base())).toMatchObject({ passed: true, score: 1, issues: [] });
    const uncited = checkContract("chat", base({ text: "Users struggle with signing in.\n> \"they keep sending me back\"" }));
    expect(uncited.passed).toBe(false);
    expect(uncited.failures.map((f) => f.kind)).toEqual(["uncited_answer", "uncited_quote"]);
    // No evidence read (a greeting, a model answering from nothing): nothing to cite.
    expect(checkContract("chat", base({ text: "This is a test", evidenceUsed: false })).passed).toBe(true);
    expect(checkContract("chat", base({ text: "  " })).failures.map((f) => f.kind)).toEqual(["empty_answer"]);
  });

  it("holds insights to quotes with sources and titles from the evidence (no stock prefix, no redaction marker)", () => {
    const quotes = [{ text: "The export button is impossible to find on the phone.", source_id: S1 }];
    const good = { id: I1, title: "The export button is impossible to find", description: "Export is hidden.", quotes };
    const r = checkContract("synthesis", base({ insights: [good] }));
    expect(r.passed).toBe(true);
    const bad = checkContract("synthesis", base({
      insights: [
        { id: "a", title: "Users struggle with export button", description: "d", quotes },
        { id: "b", title: "Export for [REDACTED] is hidden", description: "Export is hidden", quotes },
        { id: "c", title: "Payment reconciliation latency", description: "d", quotes },
        { id: "d", title: "Nothing quoted here", description: "d", quotes: [] },
      ],
    }));
    expect(bad.failures.map((f) => `${f.kind}:${(f as { target?: string }).target}`)).toEqual([
      "stock_title:a",
      "redacted_title:b",
      "title_not_from_evidence:c",
      "no_quotes:d",
    ]);
    expect(bad.issues[0]).toContain('stock prefix over keywords ("Users struggle with export button")');
    expect(bad.score).toBeCloseTo((bad.checks - 4) / bad.checks, 3);
  });

  it("holds recommendations to the insights they address, and a PRD to its sections and citations", () => {
    const rec = checkContract("recommendation", base({ recommendations: [{ id: "r1", title: "Fix sign-in", addresses_insight_ids: [] }] }));
    expect(rec.failures).toEqual([{ kind: "names_no_insight", target: "r1" }]);
    const prd = "# PRD\n\n## Problem\n\nUsers loop [I1].\n\n## Evidence\n\n- “quote” [I1]\n\n## Goals & success metrics\n\n| a |\n\n[I1]: #insight-" + I1;
    const doc = checkContract("drafting", base({ documents: [{ id: "d1", document_type: "prd", content: prd }] }));
    expect(doc.failures).toEqual([{ kind: "missing_section", target: "d1", section: "Solution" }]);
    const uncited = checkContract("drafting", base({ documents: [{ id: "d2", document_type: "memo", content: "## Context\n\nx\n\n## Proposal\n\ny" }] }));
    expect(uncited.failures).toEqual([{ kind: "cites_no_insight", target: "d2" }]);
  });
});

const verifier = (over: Partial<VerifierResult> = {}): VerifierResult => ({
  passed: true,
  score: 1,
  issues: [],
  feedback: "",
  claims: 4,
  failures: [],
  grounded: [0, 1],
  statements: 2,
  artifactQuotes: { insights: 0, grounded: 0 },
  validation: { citations: { total: 0, resolved: 0, unresolved: [] }, cross_source: { insights: 0, multi_source: 0, single_source: 0, ratio: null }, severity: { checked: 0, unsupported: [] } },
  ...over,
});

describe("RQS", () => {
  it("weighs contract, verifier and grounding, and caps a failed contract or verifier below the threshold", () => {
    expect(groundingOf({ grounded: [0], statements: 4, artifactQuotes: { insights: 0, grounded: 0 } })).toBe(0.25);
    expect(groundingOf({ grounded: [0, 1], statements: 2, artifactQuotes: { insights: 4, grounded: 3 } })).toBe(0.875);
    expect(rqsOf({ passed: true, score: 1 }, { passed: true, score: 1 }, 1)).toBe(100);
    // An answer with no checkable claim and nothing wrong: 35 + 40 = 75, above the threshold.
    expect(rqsOf({ passed: true, score: 1 }, { passed: true, score: 1 }, 0)).toBe(75);
    expect(rqsOf({ passed: false, score: 0.9 }, { passed: true, score: 1 }, 1)).toBe(69);
    expect(rqsOf({ passed: true, score: 1 }, { passed: false, score: 0.9 }, 1)).toBe(49);
    expect(69).toBeLessThan(RQS_THRESHOLD);
  });
});

describe("repair", () => {
  it("asks for the answer's failed points in words and as directives the local engine reads", () => {
    const contract = checkContract("chat", base());
    const v = verifier({
      passed: false,
      failures: [
        { kind: "quote_not_verbatim", quote: "I keep getting sent back to the login screen", source_ids: [S1], statement: 2 },
        { kind: "count_false", claim: { what: "sources_total", n: 3 }, actual: 4, statement: 3 },
      ],
      issues: ["quote issue", "count issue"],
    });
    const turn = repairTurn(contract, v, ANSWER)!;
    expect(turn.issues).toEqual(["quote issue", "count issue"]);
    const d = parseRepairTurn(turn.text)!;
    expect(d.drop_quotes).toEqual(["I keep getting sent back to the login screen"]);
    expect(d.drop_counts[0]!.statement).toBe("This workspace has 3 research sources: 2 interviews, 1 support ticket (3 completed):");

    const fixed = repairAnswer(ANSWER, d);
    expect(fixed).not.toContain("I keep getting sent back");
    expect(fixed).not.toContain("3 research sources");
    expect(fixed).toContain(`[insight ${I1}]`);
    expect(fixed).toContain("removed 1 quote that is not verbatim in its source, 1 count that the workspace does not bear out");
    // Nothing the answer says failed: no repair request at all.
    expect(repairTurn(contract, verifier(), ANSWER)).toBeUndefined();
  });

  it("titles an insight from a sentence of its quotes, and keeps the sections a document type requires", () => {
    expect(titleFromEvidence({ quotes: [{ text: "Hi. I can never find the export button on my phone. It is hidden.", source_id: S1 }] })).toBe("I can never find the export button on my phone");
    expect(titleFromEvidence({ quotes: [{ text: "Yes.", source_id: S1 }] })).toBeUndefined();
    expect(repairedInstructions("Keep it brief, without a solution section.", "prd", ["Solution"])).toBe("Keep it brief. Include a Solution section. Cite the insights each claim rests on.");
    expect(repairedInstructions("No risks section", "prd", [])).toContain("No risks section");
  });
});

describe("mid-stream alerts", () => {
  const snapshot: WorkspaceSnapshot = { counts: { sources: 1, insights: 1, recommendations: 0, documents: 0 }, ids: new Set([I1, S1]), texts: ["the export button is impossible to find"] };

  it("checks at 500, 2,000 and 5,000 characters, each issue once", () => {
    const sent: { event: string; data: any }[] = [];
    const m = new StreamMonitor(snapshot, (event, data) => sent.push({ event, data }));
    m.push("Users mostly talk about exports. ".repeat(14)); // ~460 characters: no checkpoint yet
    expect(sent).toEqual([]);
    m.push(`They said "the export button is impossible to find" and "nobody ever reads the release notes at all". `);
    expect(sent.map((s) => [s.data.checkpoint, s.data.severity, s.data.issue.slice(0, 40)])).toEqual([
      [500, "warning", "500 characters in, the answer cites no i"],
      [500, "critical", "The answer quotes text that is not in th"],
    ]);
    m.push("w".repeat(1600));
    expect(sent.at(-1)!.data).toMatchObject({ checkpoint: 2000, severity: "critical" });
    const before = sent.length;
    m.push(`[insight 44444444-4444-4444-8444-444444444444] ${"y".repeat(3000)}`);
    expect(sent.slice(before).map((s) => s.data.checkpoint)).toEqual([5000]);
    expect(sent.at(-1)!.data.issue).toContain("44444444-4444-4444-8444-444444444444");
  });

  it("accepts quotes and ids the run's tools returned", () => {
    const sent: unknown[] = [];
    const m = new StreamMonitor(snapshot, (_e, d) => sent.push(d));
    const id = "55555555-5555-4555-8555-555555555555";
    m.observeTool({ text: "The participant said:\nnobody ever reads the release notes", id });
    m.push(`"nobody ever reads the release notes" [source ${id}] ${"z".repeat(500)}`);
    expect(sent).toEqual([]);
  });
});

describe("normalise (verbatim comparison)", () => {
  it("unifies quotes, dashes and ellipses, makes every run of whitespace one space, trims and lower-cases", () => {
    expect(normalise("  He said “It’s broken” — again…\n\tReally  ")).toBe('he said "it\'s broken" - again... really');
    expect(normalise("a\u00a0b")).toBe("a b");
    expect(normalise("a \t b")).toBe("a b");
    expect(normalise("x\u2003\u2003y\r\nz")).toBe("x y z");
    expect(normalise("Plain text stays")).toBe("plain text stays");
    expect(normalise(" \n ")).toBe("");
  });
});
