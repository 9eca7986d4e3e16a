/**
 * Repairs (issue #21): what the harness does with a run below the quality threshold before it judges it again. Each
 * repair fixes the failed point itself, on every engine, and says what it changed; nothing is hidden:
 *
 * - the answer: the agent loop goes on with one more user turn, the repair request ({@link repairTurn}), naming each
 *   failed check; a model rewrites its answer, the local engine rewrites its own (core/agent/local-engine.ts reads
 *   the request's machine-readable part: it drops a quote not found verbatim, a citation that does not resolve, a
 *   false count, and says so in the answer);
 * - an insight whose title is a stock prefix over keywords, carries a redaction marker or is not drawn from its
 *   evidence: retitled with a sentence of its own quotes ({@link titleFromEvidence}); one with no quote cannot be;
 * - a recommendation that names no insight: linked to the insights its words share most with;
 * - a document that lacks a required section or cites no insight: drafted again by the document engine from the same
 *   recommendation and insights, with the instruction to include the section (a user's "without X" does not remove a
 *   section its type's contract requires), saved with an `ai_draft` revision that says why.
 *
 * Every repair writes on the version it read (a document's `version`, an insight's or recommendation's `updated_at`),
 * and only while the artifact still fails as judged (the same title; still no insight named): an artifact edited or
 * deleted meanwhile keeps the member's change, and the repair is abandoned (reported, never an error of the run).
 */
import { REDACTION_RE } from "../ai/synthesis/markers";
import { model } from "../ai/select";
import type { CallUsage } from "../ai/ports";
import { db } from "../db/service";
import { AppError } from "../error";
import * as Insight from "../insight";
import * as Recommendation from "../recommendation";
import * as Document from "../document";
import { loadInsights, toEngineInput } from "../insight/inputs";
import { productContext } from "../workspace";
import type { ContractFailure, ContractResult, InsightArtifact } from "./contract";
import { REQUIRED_SECTIONS, titleEvidenceShare, MIN_TITLE_EVIDENCE } from "./contract";
import type { VerifierFailure, VerifierResult } from "./verifier";

import { REPAIR_MARK, type RepairDirectives } from "./repair-turn";

export { REPAIR_MARK, parseRepairTurn, type RepairDirectives } from "./repair-turn";

/**
 * The repair request for the answer (a user turn), or undefined when nothing in the answer failed. Natural language
 * for a model, followed by the directives as one JSON line after `repair:` for the local engine. Failures of writes
 * the run only queued (targets not in `storedIds`) are named too: a corrected write is the agent's to queue.
 */
export function repairTurn(contract: ContractResult, verifier: VerifierResult, answer: string, storedIds: ReadonlySet<string> = new Set()): { text: string; directives: RepairDirectives; issues: string[] } | undefined {
  const lines = answer.split("\n").map((l) => l.trim()).filter((l) => l && !/^#{1,6}\s/.test(l) && !/^[-*_]{3,}$/.test(l) && !/^\[[^\]]+\]:\s/.test(l));
  const directives: RepairDirectives = { drop_quotes: [], drop_ids: [], drop_counts: [], cite: false };
  const issues: string[] = [];
  contract.failures.forEach((f, k) => {
    if (f.kind === "uncited_answer" || f.kind === "uncited_quote" || f.kind === "empty_answer") {
      directives.cite ||= f.kind !== "empty_answer";
      issues.push(contract.issues[k]!);
    } else if ("target" in f && !storedIds.has(f.target)) {
      // A write the run queued (not stored yet): only the agent can queue a corrected one.
      issues.push(contract.issues[k]!);
    }
  });
  verifier.failures.forEach((f, k) => {
    if (!("statement" in f) || f.statement === undefined) return;
    issues.push(verifier.issues[k]!);
    if (f.kind === "quote_not_verbatim") directives.drop_quotes.push(f.quote);
    if (f.kind === "unresolved_id") directives.drop_ids.push(f.id);
    if (f.kind === "count_false") directives.drop_counts.push({ statement: lines[f.statement] ?? "", n: f.claim.n });
  });
  if (!issues.length) return undefined;
  const text = [
    `${REPAIR_MARK} Your previous answer failed these checks against the workspace:`,
    ...issues.map((i) => `- ${i}`),
    "Rewrite the whole answer so that every point holds: cite insights and sources by id as [insight <id>] and [source <id>], quote only text that appears verbatim in its source, state only counts the tools returned, and leave out what you cannot support. Say briefly what you corrected.",
    `repair: ${JSON.stringify(directives)}`,
  ].join("\n");
  return { text, directives, issues };
}

/**
 * A title for an insight from its own evidence: the first sentence of its quotes that has 4 to 18 words, is no
 * question and carries no redaction marker, without its closing punctuation and its first letter capitalised.
 * @returns the title, or undefined when no quote offers one (the insight stays as it is, and fails again)
 */
export function titleFromEvidence(insight: Pick<InsightArtifact, "quotes">): string | undefined {
  for (const q of insight.quotes) {
    for (const sentence of q.text.split(/(?<=[.!?])\s+|\n+/)) {
      const s = sentence.trim().replace(/^["“'‘(]+|["”'’)]+$/g, "").trim();
      const words = s.split(/\s+/).length;
      if (words < 4 || words > 18 || s.endsWith("?") || REDACTION_RE.test(s)) continue;
      const title = s.replace(/[.!,;:]+$/, "");
      if (titleEvidenceShare({ title, description: "", quotes: insight.quotes }) >= MIN_TITLE_EVIDENCE) return title.charAt(0).toUpperCase() + title.slice(1);
    }
  }
  return undefined;
}

const contentWords = (s: string) => new Set(s.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w.length >= 4));

/** What a repair of artifacts did, in words (for `harness_retry`), and the model usage it cost. */
export interface ArtifactRepair {
  fixed: string[];
  unfixable: string[];
  /**
   * Repairs given up because a member changed or deleted the artifact while it was being repaired: their change
   * stands, and the artifact (`target`) is not repaired again in this run.
   */
  abandoned: { target: string; note: string }[];
  /** Every model call the repairs made, abandoned ones included (spent, so charged). */
  usage: CallUsage[];
}

/**
 * Repair the stored artifacts a contract or the verifier failed (see the file's header). Writes go through the areas'
 * own operations as the member who ran the stream (whose request was the approval of these writes, as for the stream
 * variants' operations).
 */
export async function repairArtifacts(userId: string, workspaceId: string, contract: ContractResult, _verifier: VerifierResult): Promise<ArtifactRepair> {
  const out: ArtifactRepair = { fixed: [], unfixable: [], abandoned: [], usage: [] };
  const titles = contract.failures.filter((f): f is Extract<ContractFailure, { kind: "stock_title" | "redacted_title" | "title_not_from_evidence" }> =>
    f.kind === "stock_title" || f.kind === "redacted_title" || f.kind === "title_not_from_evidence",
  );
  for (const f of uniqueBy(titles, (f) => f.target)) {
    const { data } = await db().entities.insight.get({ workspace_id: workspaceId, id: f.target }).go({ consistent: true });
    if (!data || data.title !== f.title) {
      // Deleted or retitled since the contract judged it: the member's change stands.
      out.abandoned.push({ target: f.target, note: `insight ${f.target} was ${data ? "retitled" : "deleted"} after it was judged; the member's change stands and the repair was dropped` });
      continue;
    }
    const title = titleFromEvidence({ quotes: data.quotes ?? [] });
    if (!title) {
      out.unfixable.push(`insight ${f.target}: no sentence of its quotes can title it`);
      continue;
    }
    try {
      // On the version read: a member's edit between this read and the write wins.
      await Insight.update(userId, f.target, { title }, { expectedUpdatedAt: data.updated_at });
    } catch (err) {
      if (!changedOrGone(err)) throw err;
      out.abandoned.push({ target: f.target, note: `insight ${f.target} was changed while it was retitled; the member's change stands and the repair was dropped` });
      continue;
    }
    out.fixed.push(`retitled insight ${f.target} from its evidence: "${f.title}" → "${title}"`);
  }
  for (const f of contract.failures) {
    if (f.kind === "no_quotes" || f.kind === "quote_without_source") out.unfixable.push(`insight ${f.target}: it has no quote of a source to ground it`);
  }
  const unlinked = contract.failures.filter((f): f is Extract<ContractFailure, { kind: "names_no_insight" }> => f.kind === "names_no_insight");
  if (unlinked.length) {
    const { data: insights } = await db().entities.insight.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", attributes: ["id", "title", "description", "is_archived"] });
    for (const f of unlinked) {
      const { data: rec } = await db().entities.recommendation.get({ workspace_id: workspaceId, id: f.target }).go({ consistent: true });
      if (!rec || rec.addresses_insight_ids?.length) {
        // Deleted or linked since the contract judged it: the member's change stands.
        out.abandoned.push({ target: f.target, note: `recommendation ${f.target} was ${rec ? "linked" : "deleted"} after it was judged; the member's change stands and the repair was dropped` });
        continue;
      }
      const words = contentWords(`${rec.title} ${rec.description}`);
      const ranked = insights
        .filter((i) => !i.is_archived)
        .map((i) => ({ id: i.id!, shared: [...contentWords(`${i.title} ${i.description}`)].filter((w) => words.has(w)).length }))
        .filter((x) => x.shared > 0)
        .sort((a, b) => b.shared - a.shared)
        .slice(0, 3);
      if (!ranked.length) {
        out.unfixable.push(`recommendation ${f.target}: no insight shares its words`);
        continue;
      }
      try {
        await Recommendation.update(userId, f.target, { addresses_insight_ids: ranked.map((r) => r.id) }, { expectedUpdatedAt: rec.updated_at });
      } catch (err) {
        if (!changedOrGone(err)) throw err;
        out.abandoned.push({ target: f.target, note: `recommendation ${f.target} was changed while it was linked; the member's change stands and the repair was dropped` });
        continue;
      }
      out.fixed.push(`linked recommendation ${f.target} to the insights it addresses: ${ranked.map((r) => r.id).join(", ")}`);
    }
  }
  const docFailures = contract.failures.filter((f): f is Extract<ContractFailure, { kind: "missing_section" | "cites_no_insight" }> => f.kind === "missing_section" || f.kind === "cites_no_insight");
  for (const [docId, fails] of groupBy(docFailures, (f) => f.target)) {
    const res = await redraft(userId, workspaceId, docId, fails);
    if (res.usage) out.usage.push(res.usage);
    if (res.abandoned) out.abandoned.push({ target: docId, note: res.note });
    else (res.fixed ? out.fixed : out.unfixable).push(res.note);
  }
  return out;
}

const uniqueBy = <T>(items: T[], key: (t: T) => string) => [...new Map(items.map((i) => [key(i), i])).values()];
function groupBy<T>(items: T[], key: (t: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const i of items) m.set(key(i), [...(m.get(key(i)) ?? []), i]);
  return m;
}

/** A write refused because the artifact changed (CONFLICT) or is gone (NOT_FOUND) since it was read. */
const changedOrGone = (err: unknown) => err instanceof AppError && (err.code === "CONFLICT" || err.code === "NOT_FOUND");

/**
 * Draft a document again with the engine that drafted it, from its recommendation and insights, told to include the
 * sections it lacks and to cite insights; store the new text with an `ai_draft` revision saying why. Both writes are
 * conditioned on the version read before the (slow) redraft: when a member edited or deleted the document meanwhile,
 * their change stands and the repair is `abandoned` (its model usage is still returned: it was spent).
 */
async function redraft(
  userId: string,
  workspaceId: string,
  docId: string,
  fails: Extract<ContractFailure, { kind: "missing_section" | "cites_no_insight" }>[],
): Promise<{ fixed: boolean; abandoned?: boolean; note: string; usage?: CallUsage }> {
  const { data: doc } = await db().entities.document.get({ workspace_id: workspaceId, id: docId }).go({ consistent: true });
  if (!doc) return { fixed: false, abandoned: true, note: `document ${docId} no longer exists` };
  const missing = fails.filter((f) => f.kind === "missing_section").map((f) => (f as { section: string }).section);
  const recId = doc.related_recommendation_id;
  const { data: rec } = recId ? await db().entities.recommendation.get({ workspace_id: workspaceId, id: recId }).go({ consistent: true }) : { data: null };
  const insightIds = doc.related_insight_ids?.length ? doc.related_insight_ids : (rec?.addresses_insight_ids ?? []);
  const insights = await loadInsights(workspaceId, insightIds, "insight_ids", { skipMissing: true });
  if (fails.some((f) => f.kind === "cites_no_insight") && insights.length === 0) {
    return { fixed: false, note: `document ${docId} cites no insight, and neither it nor its recommendation names one to cite` };
  }
  const metadata = (doc.metadata ?? {}) as { user_instructions?: string };
  const instructions = repairedInstructions(metadata.user_instructions ?? "", doc.document_type, missing);
  // The document engines load when a repair redrafts, not with every stream (bench/cold.ts).
  const { documentEngine } = await import("../document/engine");
  const engine = documentEngine(await model());
  const product = await productContext(workspaceId);
  const out = await engine.draft({
    document_type: doc.document_type,
    recommendation: rec
      ? {
          id: rec.id,
          title: rec.title,
          description: rec.description,
          addresses_insight_ids: rec.addresses_insight_ids ?? [],
          rationale: rec.rationale ?? "",
          effort_estimate: rec.effort_estimate ?? "medium",
          effort_weeks: rec.effort_weeks ?? 2,
          impact_score: rec.impact_score ?? 0.5,
          success_metrics: rec.success_metrics ?? [],
          ...(rec.target_repo ? { target_repo: rec.target_repo } : {}),
        }
      : undefined,
    insights: insights.map(toEngineInput),
    user_instructions: instructions,
    product,
  });
  const usage = out.usage ? { usage: out.usage } : {};
  const why = [...missing.map((s) => `the required section "${s}"`), ...(fails.some((f) => f.kind === "cites_no_insight") ? ["citations of its insights"] : [])].join(" and ");
  let written: number;
  try {
    const saved = await Document.update(
      userId,
      docId,
      { content: out.result.content, metadata: { harness_repair: { reason: fails.map((f) => (f.kind === "missing_section" ? `missing section ${f.section}` : "no cited insight")), instructions } } },
      { expectedVersion: doc.version },
    );
    written = saved.version;
  } catch (err) {
    if (!changedOrGone(err)) throw err;
    return { fixed: false, abandoned: true, note: `document ${docId} was ${err instanceof AppError && err.code === "NOT_FOUND" ? "deleted" : "edited"} while it was drafted again; the member's change stands and the repair was dropped`, ...usage };
  }
  try {
    // Of the text just written: an edit landing between the two writes would be saved as the repair's revision.
    await Document.saveRevision(userId, docId, `Quality repair: drafted again with ${why}`, "ai_draft", { expectedVersion: written });
  } catch (err) {
    if (!changedOrGone(err)) throw err;
    return { fixed: false, abandoned: true, note: `document ${docId} was changed right after it was drafted again; the member's change stands and the repair has no revision`, ...usage };
  }
  return { fixed: true, note: `drafted document ${docId} again with ${why}`, ...usage };
}

/**
 * The user's instructions with every exclusion of a section the type requires taken out, and an instruction to
 * include each missing section added.
 */
export function repairedInstructions(instructions: string, documentType: string, missing: string[]): string {
  const required = REQUIRED_SECTIONS[documentType] ?? [];
  let text = instructions.replace(/\b(?:no|without|skip|omit|exclude|drop|remove|leave out)\s+(?:the\s+|a\s+|an\s+|any\s+)?([a-z][a-z &/-]{1,40}?)(?:\s+sections?)?(?=[.,;!]|\s+and\b|$)/gi, (whole, name: string) =>
    required.some((r) => r.re.test(name)) ? "" : whole,
  );
  // What the removal leaves behind ("Keep it short, ." → "Keep it short.").
  text = text.replace(/\s*,\s*(?=[.;!]|$)/g, "").replace(/\s{2,}/g, " ").trim();
  const add = missing.map((s) => `Include a ${s} section.`).join(" ");
  return [text, add, "Cite the insights each claim rests on."].filter(Boolean).join(" ").slice(0, 5000);
}
