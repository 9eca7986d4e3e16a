import * as z from "zod";
import type { CallUsage, Model, ModelTier } from "../../ai/ports";
import { Errors } from "../../error";
import type { InsightInput } from "../../recommendation/engine/types";
import { normaliseForMatch } from "../../recommendation/engine/text";
import { BLOCK_CONTENT_SCHEMAS, type BlockType, DEFAULT_TITLES, blockToMarkdown, validateBlockContent } from "../blocks";
import { blockText, selectContext } from "./actions";
import { checkGrounding, refLabel, sourcesSection } from "./grounding";
import {
  type ActionBlock,
  ChallengeResult,
  DraftDocumentInput,
  type DocumentDraft,
  type DocumentType,
  type ExpandResult,
  SimulateResult,
} from "./types";

/**
 * Document drafting and block actions with the Model port (Bedrock Converse + tool use in AWS). Same inputs and
 * result shapes as the local engines (./local.ts, ./actions.ts).
 *
 * Grounding is enforced in code via the tool schemas (the Bedrock adapter repairs once, retries afresh, then throws
 * AppError INTERNAL — core/ai/bedrock.ts):
 * - drafts must cite insights as `[I1]…[In]` (at least one citation when insights exist), every `[In]` must exist, and
 *   every span in “…” must be a verbatim quote or title of a sent insight, the recommendation title or the user's
 *   instructions (./grounding.ts); the Sources section with the `[In]` link definitions is written by code, never by
 *   the model;
 * - expand returns content that must satisfy the block type's contract; its evidence may only cite sent insight ids
 *   with verbatim quotes of those insights; text the user already wrote is kept (a rewritten field keeps the
 *   original, list items the model dropped are put back).
 */

/** The sections each document type is written with (shared wording with the local engine). */
export const DOCUMENT_OUTLINES: Record<DocumentType, string> = {
  prd: "## Problem (statement, then **Impact:** line), ## Evidence (list: one verbatim quote per item with its [In]), ## Users (### one sub-section per persona with **Name:**, description, **Goals:** and **Pain points:** lists), ## Goals & success metrics (table: Metric | Kind | Baseline | Target | Measurement), ## Solution (summary paragraph, then **Details:**, **Alternatives considered:**, **Non-goals:** lists), ## User stories (### one per story: 'As a …, I want …, so that ….' then **Acceptance criteria:** list), ## Edge cases (list: 'scenario → expected behaviour'), ## Risks (list: 'risk. Likelihood: low|medium|high; Impact: low|medium|high; Mitigation: …'), ## Timeline (list of milestones: '**name** (week N)' with nested deliverables), ## Open questions",
  spec: "## Overview, ## Background (problem with **Evidence:** list), ## Requirements (summary, **Details:** list of numbered requirements R1…, **Non-goals:** list), ## Edge cases and error handling (list 'scenario → expected behaviour'), ## Success metrics (table Metric | Kind | Baseline | Target | Measurement), ## Risks (list with Likelihood/Impact/Mitigation), ## Rollout plan (milestones '**name** (week N)' with nested deliverables), ## Open questions",
  memo: "## Summary (3 sentences: recommendation, why, cost), ## Context (problem, **Impact:** line), ## What we heard (list of verbatim quotes with [In]), ## Proposal (summary, **Alternatives considered:** list), ## Risks (list with Likelihood/Impact/Mitigation), ## Decision needed, ## Open questions",
  user_story: "## Context (problem with **Evidence:** list), ## Users (### per persona with **Name:**, **Goals:**, **Pain points:**), ## User stories (### one per story: 'As a …, I want …, so that ….', **Priority:** must|should|could|wont, **Acceptance criteria:** list of testable criteria), ## Edge cases (list 'scenario → expected behaviour'), ## Open questions",
  roadmap_update: "## Summary, ## Roadmap: now / next / later (list: '**Now**', '**Next**', '**Later**' each with nested items citing [In]), ## Why: what we heard (list of verbatim quotes with [In]), ## Risks and dependencies (list with Likelihood/Impact/Mitigation), ## Open questions",
  release_notes: "## What's new (user-facing summary, **Details:** list of 'Fixed: …' / 'New: …' items), ## Why we built it ('You told us:' then a list of verbatim quotes with [In]), ## Still on our list, ## Feedback",
};

const DRAFT_SYSTEM = [
  "You are a senior product manager writing a product document in Markdown for your team.",
  "Grounding rules: the insights are numbered [I1], [I2], …; every research claim (a problem, a number of sources or",
  "mentions, what users said) cites its insight as [In] right after the claim; cite only the numbers listed; put user",
  "quotes in “curly quotes” and copy them verbatim from the insight's quotes (you may shorten a quote only by cutting",
  "its end); never invent users, numbers, baselines, dates, owners or quotes — write unknowns as open questions.",
  "Do not write a Sources or References section: it is appended automatically.",
  "Structure: start with '# <title>', then use exactly the sections given for the document type, in that order, in",
  "the list and table formats given (they are parsed into typed blocks). Follow the user's instructions about audience,",
  "length and sections unless they conflict with the grounding rules. Answer only by calling the tool.",
].join(" ");

function quoteCorpus(insights: InsightInput[], extra: string[] = []): string[] {
  return [...insights.flatMap((i) => [i.title, ...i.quotes.map((q) => q.text)]), ...extra].map(normaliseForMatch);
}

/** Tool schema for a draft: title + Markdown content, grounded against the insights sent ([I1] = insights[0]). */
export function draftToolSchema(insights: InsightInput[], allowedQuoted: string[]) {
  return z
    .object({
      title: z.string().min(3).max(300),
      content: z.string().min(50).max(100_000).describe("The whole document in Markdown, starting with '# <title>'"),
    })
    .superRefine((d, ctx) => {
      for (const p of checkGrounding(d.content, insights, allowedQuoted)) ctx.addIssue({ code: "custom", path: ["content"], message: p.detail });
      if (insights.length && !/\[I\d+\]/.test(d.content)) ctx.addIssue({ code: "custom", path: ["content"], message: "no insight is cited: cite research claims as [I1], [I2], …" });
      if (/^#{1,3}\s*(sources|references)\s*$/im.test(d.content)) ctx.addIssue({ code: "custom", path: ["content"], message: "do not write a Sources section; it is appended automatically" });
    });
}

function insightBlock(i: InsightInput, k: number): string {
  const sources = Math.max(i.frequency, new Set(i.quotes.map((q) => q.source_id)).size);
  const quotes = i.quotes.map((q) => `    - “${q.text.replace(/\s+/g, " ")}”${q.speaker ? ` — ${q.speaker}` : ""}`).join("\n");
  return `[${refLabel(k)}] ${i.title} (${i.insight_type}, severity ${i.severity}, ${sources} sources, ${i.mention_count ?? i.quotes.length} mentions)\n  ${i.description.replace(/\s+/g, " ")}${quotes ? `\n  quotes:\n${quotes}` : "\n  (no verbatim quote recorded)"}`;
}

/** Orders the insights for citation: the recommendation's own first, then the rest; at most `max`. */
function citationOrder(input: DraftDocumentInput, max = 25): InsightInput[] {
  const byId = new Map(input.insights.map((i) => [i.id, i]));
  const own = (input.recommendation?.addresses_insight_ids ?? []).map((id) => byId.get(id)).filter((i): i is InsightInput => !!i);
  const ownIds = new Set(own.map((i) => i.id));
  const rest = input.insights.filter((i) => !ownIds.has(i.id));
  return [...own, ...(own.length && input.document_type !== "roadmap_update" ? [] : rest)].slice(0, max);
}

/**
 * Drafts a document with the model.
 *
 * @returns `{ result: { title, content }, usage }`; `content` ends with the code-written Sources section
 * @throws AppError VALIDATION_ERROR for malformed input or nothing to ground on; AppError INTERNAL /
 *   SERVICE_UNAVAILABLE from the adapter when the model cannot produce grounded output
 */
export async function draftDocumentWithModel(
  model: Model,
  input: DraftDocumentInput,
  opts: { tier?: ModelTier } = {},
): Promise<{ result: DocumentDraft; usage: CallUsage }> {
  const parsed = DraftDocumentInput.safeParse(input);
  if (!parsed.success) throw Errors.validation(parsed.error.issues.map((i) => ({ loc: i.path.map((p) => (typeof p === "number" ? p : String(p))), msg: i.message, type: i.code })));
  const inp = parsed.data;
  if (!inp.recommendation && !inp.insights.length)
    throw Errors.validation([{ loc: ["recommendation_id"], msg: "Drafting needs a recommendation or at least one insight to ground the document on", type: "missing" }]);
  const insights = citationOrder(inp);
  const rec = inp.recommendation;
  const allowed = [rec?.title ?? "", inp.user_instructions ?? ""].filter(Boolean);
  const p = inp.product;
  const text = [
    `Document type: ${inp.document_type}`,
    `Sections and formats: ${DOCUMENT_OUTLINES[inp.document_type]}`,
    p?.product_name ? `Product: ${p.product_name}${p.product_description ? ` — ${p.product_description}` : ""}` : "",
    p?.target_users ? `Target users: ${p.target_users}` : "",
    rec
      ? `Recommendation: “${rec.title}”\n  ${rec.description}\n  rationale: ${rec.rationale ?? "—"}\n  effort: ${rec.effort_estimate ?? "—"} (${rec.effort_weeks ?? "?"} weeks), impact score ${rec.impact_score ?? "—"}\n  success metrics: ${(rec.success_metrics ?? []).join("; ") || "—"}`
      : "",
    insights.length ? `Insights:\n${insights.map(insightBlock).join("\n")}` : "Insights: none — make no research claims.",
    inp.user_instructions?.trim() ? `User instructions (verbatim): “${inp.user_instructions.trim()}”` : "",
  ].filter(Boolean);
  const { output, usage } = await model.structured({
    tier: opts.tier ?? "mid",
    system: DRAFT_SYSTEM,
    messages: [{ role: "user", text: `${text.join("\n\n")}\n\nWrite the document.` }],
    tool: {
      name: "write_document",
      description: "Write the document: its title and its full Markdown content.",
      schema: draftToolSchema(insights, allowed),
    },
    maxTokens: 8000,
    temperature: 0.2,
  });
  let content = output.content.trim();
  if (!/^#\s/.test(content)) content = `# ${output.title}\n\n${content}`;
  const cited = insights.filter((_, k) => content.includes(`[${refLabel(k)}]`));
  // Keep reference numbering stable: define every listed insight up to the highest one cited.
  const highest = cited.length ? Math.max(...cited.map((i) => insights.indexOf(i))) : -1;
  const sources = sourcesSection(insights.slice(0, highest + 1));
  return { result: { title: output.title.trim(), content: `${content}${sources ? `\n\n${sources}` : ""}\n` }, usage };
}

// ---------------------------------------------------------------------------------------------------------------
// Block actions
// ---------------------------------------------------------------------------------------------------------------

const CONTRACTS: Record<BlockType, string> = {
  problem: "{statement, impact, evidence: [{insight_id?, quote?, source_id?, note?}], affected_users?}",
  persona: "{name, description, goals: string[], pain_points: string[], quote?}",
  solution: "{summary, details: string[], alternatives_considered: string[], non_goals: string[]}",
  metrics: "{metrics: [{name, target, baseline?, measurement?, kind?: primary|secondary|guardrail}]}",
  user_story: "{as_a, i_want, so_that, acceptance_criteria: string[], priority?: must|should|could|wont}",
  edge_case: "{scenario, expected_behavior}",
  risk: "{risk, likelihood?: low|medium|high, impact?: low|medium|high, mitigation, owner?}",
  timeline: "{milestones: [{name, target_date? (YYYY-MM-DD), week?, deliverables: string[]}]}",
  free_text: "{markdown}",
};

const ACTION_SYSTEM = [
  "You are a senior product manager reviewing one typed block of a product document.",
  "Use the block's content contract, the surrounding blocks and the listed insights. Grounding rules: cite insights",
  "only by the ids listed; quote users only verbatim from the listed quotes; never invent numbers, baselines, dates",
  "or owners — say what is missing instead. Answer only by calling the tool.",
].join(" ");

function actionPrompt(block: ActionBlock, context: ActionBlock[], insights: InsightInput[], task: string): string {
  const ctx = selectContext(block, context);
  const render = (b: ActionBlock) => {
    try {
      return blockToMarkdown({ ...b, content: validateBlockContent(b.block_type, b.content ?? {}) }, 3);
    } catch {
      return `### ${b.title ?? b.block_type}\n(${b.block_type}, invalid content)`;
    }
  };
  const ins = relatedFirst(block, insights).slice(0, 12);
  return [
    `Task: ${task}`,
    `Block type: ${block.block_type}; content contract: ${CONTRACTS[block.block_type]}`,
    `Block (position ${block.position}): ${JSON.stringify({ title: block.title ?? null, content: block.content })}`,
    ctx.length ? `Surrounding blocks (${ctx.length} nearest):\n\n${ctx.map(render).join("\n\n")}` : "Surrounding blocks: none",
    ins.length
      ? `Insights:\n${ins.map((i) => `- id ${i.id}: ${i.title} (${i.insight_type}, ${i.severity}, ${i.frequency} sources)${i.quotes.slice(0, 3).map((q) => `\n    “${q.text.replace(/\s+/g, " ")}” [source ${q.source_id}]`).join("")}`).join("\n")}`
      : "Insights: none",
  ].join("\n\n");
}

function relatedFirst(block: ActionBlock, insights: InsightInput[]): InsightInput[] {
  const words = new Set(normaliseForMatch(blockText(block)).split(/\W+/).filter((w) => w.length > 3));
  const score = (i: InsightInput) => normaliseForMatch(`${i.title} ${i.description}`).split(/\W+/).filter((w) => words.has(w)).length;
  return insights.map((i, k) => ({ i, k, s: score(i) })).sort((a, b) => b.s - a.s || a.k - b.k).map((x) => x.i);
}

/** Tool schema for expand: the type's content contract, with evidence/quotes grounded in the sent insights. */
export function expandToolSchema(type: BlockType, insights: InsightInput[]) {
  const byId = new Map(insights.map((i) => [i.id, i]));
  const corpus = quoteCorpus(insights);
  return z
    .object({
      content: BLOCK_CONTENT_SCHEMAS[type] as z.ZodType<Record<string, unknown>>,
      added: z.array(z.string().min(3).max(300)).max(20).describe("What you added, one short phrase per addition"),
    })
    .superRefine((out, ctx) => {
      const c = out.content as Record<string, unknown>;
      if (type === "problem") {
        (c.evidence as { insight_id?: string; quote?: string }[]).forEach((e, k) => {
          if (e.insight_id && !byId.has(e.insight_id)) ctx.addIssue({ code: "custom", path: ["content", "evidence", k, "insight_id"], message: "unknown insight id: cite only listed ids" });
          if (e.quote) {
            const pool = e.insight_id && byId.has(e.insight_id) ? quoteCorpus([byId.get(e.insight_id)!]) : corpus;
            const span = normaliseForMatch(e.quote);
            if (!pool.some((q) => q.includes(span))) ctx.addIssue({ code: "custom", path: ["content", "evidence", k, "quote"], message: "quote is not verbatim from the cited insight" });
          }
        });
      }
      const quoted = type === "persona" ? [c.quote as string | undefined] : type === "free_text" ? [...String(c.markdown).matchAll(/“([^“”]+)”/g)].map((m) => m[1]) : [];
      for (const q of quoted) {
        if (q && normaliseForMatch(q).length >= 12 && !corpus.some((x) => x.includes(normaliseForMatch(q))))
          ctx.addIssue({ code: "custom", path: ["content"], message: `“${q.slice(0, 80)}” is not a verbatim quote of a listed insight` });
      }
    });
}

/** Puts back what the user wrote: original list items the model dropped, and original text the model rewrote. */
function keepOriginal(original: Record<string, unknown>, next: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...next };
  for (const [k, v] of Object.entries(original)) {
    const n = next[k];
    if (typeof v === "string") {
      if (v.trim() && (typeof n !== "string" || !normaliseForMatch(n).includes(normaliseForMatch(v)))) out[k] = v;
    } else if (Array.isArray(v)) {
      const arr = Array.isArray(n) ? [...n] : [];
      const keys = new Set(arr.map((x) => JSON.stringify(x)));
      const missing = v.filter((x) => !keys.has(JSON.stringify(x)));
      out[k] = [...missing, ...arr];
    } else if (v !== undefined && n === undefined) out[k] = v;
  }
  return out;
}

/**
 * Expands a block with the model (spec 01 `POST /api/blocks/{id}/expand`).
 * @returns `{ result: { block_type, title, content, added }, usage }` — content satisfies the type's contract
 * @throws AppError VALIDATION_ERROR when the block's content violates its contract
 */
export async function expandBlockWithModel(
  model: Model,
  block: ActionBlock,
  context: ActionBlock[] = [],
  insights: InsightInput[] = [],
  opts: { tier?: ModelTier } = {},
): Promise<{ result: ExpandResult; usage: CallUsage }> {
  const original = validateBlockContent(block.block_type, block.content ?? {}) as Record<string, unknown>;
  const { output, usage } = await model.structured({
    tier: opts.tier ?? "small",
    system: ACTION_SYSTEM,
    messages: [{ role: "user", text: actionPrompt({ ...block, content: original }, context, insights, "Expand this block: add the detail its contract expects and it lacks, grounded in the insights and the surrounding blocks. Keep everything the user wrote.") }],
    tool: { name: "expand_block", description: "Return the expanded block content and what was added.", schema: expandToolSchema(block.block_type, insights) },
    maxTokens: 3000,
  });
  const merged = validateBlockContent(block.block_type, keepOriginal(original, output.content)) as Record<string, unknown>;
  return {
    result: { block_type: block.block_type, title: block.title?.trim() || DEFAULT_TITLES[block.block_type], content: merged, added: output.added },
    usage,
  };
}

/**
 * Challenges a block with the model (spec 01 `POST /api/blocks/{id}/challenge`).
 * @returns `{ result: { strengths, weaknesses, questions, suggestions }, usage }`
 */
export async function challengeBlockWithModel(
  model: Model,
  block: ActionBlock,
  context: ActionBlock[] = [],
  insights: InsightInput[] = [],
  opts: { tier?: ModelTier } = {},
): Promise<{ result: ChallengeResult; usage: CallUsage }> {
  const content = validateBlockContent(block.block_type, block.content ?? {});
  const { output, usage } = await model.structured({
    tier: opts.tier ?? "small",
    system: ACTION_SYSTEM,
    messages: [{ role: "user", text: actionPrompt({ ...block, content }, context, insights, "Challenge this block adversarially: what is strong, what is weak or missing against its contract, what contradicts the surrounding blocks, what questions a sceptical reviewer would ask, and concrete suggestions.") }],
    tool: {
      name: "challenge_block",
      description: "Return the critique as four lists.",
      schema: ChallengeResult.extend({ questions: z.array(z.string().min(3)).min(1) }),
    },
    maxTokens: 2000,
  });
  return { result: output, usage };
}

/**
 * Simulates a block's real-world implications with the model (spec 01 `POST /api/blocks/{id}/simulate`).
 * @returns `{ result: { scenarios, assumptions, signals_to_watch }, usage }`
 */
export async function simulateBlockWithModel(
  model: Model,
  block: ActionBlock,
  context: ActionBlock[] = [],
  insights: InsightInput[] = [],
  opts: { tier?: ModelTier } = {},
): Promise<{ result: SimulateResult; usage: CallUsage }> {
  const content = validateBlockContent(block.block_type, block.content ?? {});
  const { output, usage } = await model.structured({
    tier: opts.tier ?? "small",
    system: ACTION_SYSTEM,
    messages: [{ role: "user", text: actionPrompt({ ...block, content }, context, insights, "Simulate what happens in the real world if this block is shipped as written: 3 to 5 distinct scenarios with likelihood and concrete consequences, the assumptions they rest on, and the signals to watch.") }],
    tool: {
      name: "simulate_block",
      description: "Return the scenarios, assumptions and signals to watch.",
      schema: SimulateResult.extend({ scenarios: SimulateResult.shape.scenarios.max(6) }),
    },
    maxTokens: 2500,
  });
  return { result: output, usage };
}
