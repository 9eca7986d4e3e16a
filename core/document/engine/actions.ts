import type { InsightInput } from "../../recommendation/engine/types";
import { keywordSet, keywords, words as plainWords, stripEndPunct, truncate } from "../../recommendation/engine/text";
import {
  type BlockContent,
  type BlockType,
  type EvidenceItem,
  type Metric,
  type Milestone,
  BLOCK_CONTENT_SCHEMAS,
  DEFAULT_TITLES,
  insightHref,
  validateBlockContent,
} from "../blocks";
import {
  type ActionBlock,
  BLOCK_CONTEXT_LIMIT,
  type ChallengeResult,
  type ExpandResult,
  type SimulateResult,
  type SimulationScenario,
} from "./types";
import { SEVERITY_RANK } from "../../insight/severity";

/**
 * Local block actions (spec 01 `POST /api/blocks/{id}/expand | challenge | simulate`): rule-based, deterministic, using
 * each block type's content contract (core/document/blocks.ts) and up to 8 surrounding blocks as context
 * (spec 01 Limits). They are heuristics and templates, not a language model:
 *
 * - **expand** fills what the contract expects and the block lacks, from cited insights (verbatim quotes with their
 *   insight ids) and from the context blocks (e.g. edge cases become acceptance criteria), and lists every addition in
 *   `added`. It never removes or rewrites what the user wrote.
 * - **challenge** checks the contract (metrics without baselines or numeric targets, user stories without acceptance
 *   criteria, problems without linked evidence, risks without mitigation or assessment, timelines out of order…),
 *   vague wording, and contradictions with the context blocks (a solution that never mentions the problem's terms or
 *   that includes its own non-goals, a user story for a persona the document does not define, conflicting metric
 *   targets).
 * - **simulate** plays out 3–4 type-specific scenarios with likelihoods from the block's own assessment and the
 *   insights' severity, and names the assumptions and the signals to watch.
 */

/**
 * The context a block action may use: at most `limit` (8) other blocks, nearest by position (ties: the earlier block),
 * returned in position order. The block itself (same id, or same position and type when ids are absent) is excluded.
 */
export function selectContext(block: ActionBlock, blocks: ActionBlock[], limit = BLOCK_CONTEXT_LIMIT): ActionBlock[] {
  const others = blocks.filter((b) =>
    block.id !== undefined && b.id !== undefined ? b.id !== block.id : !(b.position === block.position && b.block_type === block.block_type && b.title === block.title),
  );
  return others
    .map((b, i) => ({ b, i, d: Math.abs(b.position - block.position) }))
    .sort((x, y) => x.d - y.d || x.b.position - y.b.position || x.i - y.i)
    .slice(0, Math.max(0, limit))
    .sort((x, y) => x.b.position - y.b.position || x.i - y.i)
    .map((x) => x.b);
}

type Typed = { [K in BlockType]: { block_type: K; title: string; content: BlockContent<K>; position: number } }[BlockType];

function typed(b: ActionBlock): Typed {
  const content = validateBlockContent(b.block_type, b.content ?? {});
  return { block_type: b.block_type, title: b.title?.trim() || DEFAULT_TITLES[b.block_type], content, position: b.position } as Typed;
}

/** All human-readable text in a block's content (for keyword matching). */
export function blockText(b: { title?: string | null; content: unknown }): string {
  const out: string[] = [b.title ?? ""];
  const walk = (v: unknown) => {
    if (typeof v === "string") out.push(v);
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === "object") Object.values(v).forEach(walk);
  };
  walk(b.content);
  return out.join(" ");
}

/** Insights related to a text: keyword overlap ≥ 2 (or ≥ 1 for short texts), best first, at most `max`. */
function relatedInsights(text: string, insights: InsightInput[], max = 3): InsightInput[] {
  const kw = keywordSet(text);
  const need = kw.size <= 4 ? 1 : 2;
  return insights
    .map((i, k) => {
      const ik = keywordSet(`${i.title} ${i.description}`);
      let n = 0;
      for (const w of ik) if (kw.has(w)) n++;
      return { i, k, n };
    })
    .filter((x) => x.n >= need)
    .sort((a, b) => b.n - a.n || a.k - b.k)
    .slice(0, max)
    .map((x) => x.i);
}

const VAGUE = /\b(better|improve[ds]?|easy|easier|intuitive|seamless(?:ly)?|user[- ]friendly|robust|fast(?:er)?|simple|simpler|nice|good|great|optimi[sz]e[ds]?|enhance[ds]?|streamline[ds]?|modern|delight\w*|etc)\b/gi;

function vagueWords(text: string): string[] {
  return [...new Set((text.match(VAGUE) ?? []).map((w) => w.toLowerCase()))];
}

const hasNumber = (s: string) => /\d/.test(s);

// ---------------------------------------------------------------------------------------------------------------
// expand
// ---------------------------------------------------------------------------------------------------------------

/**
 * Adds type-specific detail to a block (see the module comment).
 *
 * @param block the block to expand (`content` must satisfy its type's contract)
 * @param context other blocks of the document; only the 8 nearest by position are used
 * @param insights optional workspace insights for evidence (quotes are copied verbatim with their insight ids)
 * @returns `{ block_type, title, content, added }` where `content` satisfies the same contract and contains everything
 *   the input content had
 * @throws AppError `VALIDATION_ERROR` when the block's content violates its contract
 */
export function expandBlock(block: ActionBlock, context: ActionBlock[] = [], insights: InsightInput[] = []): ExpandResult {
  const b = typed(block);
  const ctx = selectContext(block, context).map(typed);
  const related = relatedInsights(blockText(b), insights);
  const added: string[] = [];
  const personas = ctx.filter((x) => x.block_type === "persona").map((x) => (x.content as BlockContent<"persona">).name).filter(Boolean);
  switch (b.block_type) {
    case "problem": {
      const c = structuredClone(b.content);
      const cited = new Set(c.evidence.map((e) => e.insight_id).filter(Boolean));
      for (const i of related) {
        if (cited.has(i.id)) continue;
        const q = i.quotes[0];
        const e: EvidenceItem = { insight_id: i.id, note: `${i.title} (${i.severity}, ${i.frequency} source${i.frequency === 1 ? "" : "s"})` };
        if (q) Object.assign(e, { quote: q.text, source_id: q.source_id });
        c.evidence.push(e);
        added.push(`evidence from insight “${i.title}”`);
      }
      if (!c.impact.trim()) {
        const src = c.evidence.filter((e) => e.insight_id).map((e) => insights.find((i) => i.id === e.insight_id)).filter((i): i is InsightInput => !!i);
        if (src.length) {
          const worst = src.reduce((a, x) => (SEVERITY_RANK[x.severity] > SEVERITY_RANK[a.severity] ? x : a));
          c.impact = `Linked to ${src.length} insight${src.length === 1 ? "" : "s"} from ${src.reduce((n, i) => n + i.frequency, 0)} source mentions; highest severity ${worst.severity} (${worst.title}).`;
          added.push("impact from the linked insights' severity and sources");
        }
      }
      if (!c.affected_users && personas.length) {
        c.affected_users = personas.join(", ");
        added.push("affected users from the persona blocks");
      }
      return done(b, c, added);
    }
    case "persona": {
      const c = structuredClone(b.content);
      for (const i of related) {
        const target = i.insight_type === "pain_point" ? c.pain_points : c.goals;
        if (!target.includes(i.title)) {
          target.push(i.title);
          added.push(`${i.insight_type === "pain_point" ? "pain point" : "goal"} from insight “${i.title}”`);
        }
      }
      if (!c.quote) {
        const q = related.flatMap((i) => i.quotes).find((x) => x.text.length >= 20);
        if (q) {
          c.quote = q.text;
          added.push("a verbatim quote from a related insight");
        }
      }
      const problems = ctx.filter((x) => x.block_type === "problem").map((x) => (x.content as BlockContent<"problem">).statement).filter(Boolean);
      if (!c.pain_points.length && problems.length) {
        c.pain_points.push(...problems.map((p) => truncate(p, 200)));
        added.push("pain points from the problem blocks");
      }
      return done(b, c, added);
    }
    case "solution": {
      const c = structuredClone(b.content);
      for (const i of related) {
        const d = `Resolve “${i.title}”`;
        if (!c.details.some((x) => x.includes(i.title))) {
          c.details.push(d);
          added.push(`detail for insight “${i.title}”`);
        }
      }
      if (!c.alternatives_considered.length) {
        c.alternatives_considered.push("Do nothing: the problem stays as reported", "Smaller scope: ship the single most-reported part first");
        added.push("two baseline alternatives (do nothing, smaller scope) to weigh against");
      }
      if (!c.non_goals.length) {
        c.non_goals.push("Changes outside the problem this document describes");
        added.push("a default non-goal to sharpen");
      }
      const stories = ctx.filter((x) => x.block_type === "user_story");
      for (const s of stories) {
        const st = s.content as BlockContent<"user_story">;
        const d = `Support: as ${st.as_a}, ${st.i_want}`;
        if (st.i_want && !c.details.some((x) => x.includes(st.i_want))) {
          c.details.push(d);
          added.push(`detail from user story “${s.title}”`);
        }
      }
      return done(b, c, added);
    }
    case "metrics": {
      const c = structuredClone(b.content);
      for (const m of c.metrics) {
        if (!m.measurement) {
          m.measurement = `analytics event or query for “${m.name}”, reviewed weekly`;
          added.push(`measurement for “${m.name}”`);
        }
      }
      for (const p of ctx.filter((x) => x.block_type === "problem")) {
        const st = (p.content as BlockContent<"problem">).statement;
        if (!st) continue;
        const pk = keywordSet(st);
        const covered = c.metrics.some((m) => [...keywordSet(m.name)].some((k) => pk.has(k)));
        if (!covered) {
          c.metrics.push({ name: `Reports of: ${truncate(stripEndPunct(st), 120)}`, target: "down 50% within a quarter", kind: "primary" });
          added.push(`a metric for the problem “${p.title}”`);
        }
      }
      if (!c.metrics.some((m) => m.kind === "guardrail")) {
        c.metrics.push({ name: "Support contacts and negative reviews about the changed flow", target: "no increase", kind: "guardrail", measurement: "support tickets and app-store reviews" });
        added.push("a guardrail metric");
      }
      return done(b, c, added);
    }
    case "user_story": {
      const c = structuredClone(b.content);
      const want = stripEndPunct(c.i_want.replace(/^to\s+/i, ""));
      const add = (x: string, why: string) => {
        if (!c.acceptance_criteria.some((a) => a.toLowerCase() === x.toLowerCase())) {
          c.acceptance_criteria.push(x);
          added.push(why);
        }
      };
      if (want) add(`Given I am ${c.as_a ? `a ${c.as_a}` : "signed in"}, when I ${want.startsWith("a ") || want.startsWith("the ") ? `use ${want}` : want}, then it completes in one flow${c.so_that ? ` and ${stripEndPunct(c.so_that)}` : ""}`, "a happy-path criterion");
      add("Given the action fails (network or server error), then I see what went wrong and can retry without losing input", "an error-path criterion");
      add("All new controls have accessible labels and work at 200% text size", "an accessibility criterion");
      for (const e of ctx.filter((x) => x.block_type === "edge_case")) {
        const ec = e.content as BlockContent<"edge_case">;
        if (ec.scenario && ec.expected_behavior) add(`When ${lowerStart(stripEndPunct(ec.scenario))}, then ${lowerStart(stripEndPunct(ec.expected_behavior))}`, `a criterion from edge case “${e.title}”`);
      }
      return done(b, c, added);
    }
    case "edge_case": {
      const c = structuredClone(b.content);
      if (!c.expected_behavior.trim()) {
        c.expected_behavior = "The user sees a clear message about what happened and can recover without losing data";
        added.push("a default expected behaviour to refine");
      }
      const rel = related[0];
      if (rel && !c.expected_behavior.includes(rel.title)) {
        c.expected_behavior += ` (related insight: ${rel.title})`;
        added.push(`link to insight “${rel.title}”`);
      }
      return done(b, c, added);
    }
    case "risk": {
      const c = structuredClone(b.content);
      const t = `${c.risk} ${c.mitigation}`;
      if (!c.impact && related.length) {
        const worst = related.reduce((a, x) => (SEVERITY_RANK[x.severity] > SEVERITY_RANK[a.severity] ? x : a));
        c.impact = worst.severity === "critical" || worst.severity === "high" ? "high" : worst.severity === "medium" ? "medium" : "low";
        added.push(`impact from the severity of insight “${worst.title}”`);
      }
      if (!c.likelihood) {
        c.likelihood = /\b(will|always|certain|already)\b/i.test(c.risk) ? "high" : /\b(may|might|could|possibl)\w*/i.test(c.risk) ? "medium" : "medium";
        added.push("a likelihood to confirm (from the risk's wording)");
      }
      if (!c.mitigation.trim()) {
        c.mitigation = /secur|privacy|auth|login|password|token/i.test(t)
          ? "Security and privacy review of the design before build; threat-model the changed flow"
          : /perform|slow|load|scale|latenc/i.test(t)
            ? "Load-test the changed flow against today's peak and set a latency budget"
            : /adopt|notice|discover|engag/i.test(t)
              ? "Announce the change in release notes and add an in-app hint; watch the adoption metric"
              : /slip|delay|estimate|schedule|scope/i.test(t)
                ? "Cut scope to the smallest valuable slice and re-estimate after discovery"
                : "Name an owner and a trigger that makes the team revisit this risk";
        added.push("a mitigation to refine");
      }
      return done(b, c, added);
    }
    case "timeline": {
      const c = structuredClone(b.content);
      for (const m of c.milestones) {
        if (m.deliverables.length) continue;
        const n = m.name.toLowerCase();
        m.deliverables = /discover|research|design/.test(n)
          ? ["Scope confirmed against the evidence", "Design reviewed"]
          : /build|implement|develop/.test(n)
            ? ["Feature complete behind a flag", "Tests for the acceptance criteria"]
            : /beta|pilot|test/.test(n)
              ? ["Released to a pilot group", "Success and guardrail metrics read"]
              : /launch|release|ga|general/.test(n)
                ? ["Full rollout", "Release notes published"]
                : ["Definition of done agreed"];
        added.push(`deliverables for “${m.name}”`);
      }
      const weeks = c.milestones.map((m) => m.week).filter((w): w is number => w !== undefined);
      const last = weeks.length ? Math.max(...weeks) : c.milestones.length;
      if (!c.milestones.some((m) => /beta|pilot/i.test(m.name))) {
        c.milestones.push({ name: "Beta", week: last + 1, deliverables: ["Released to a pilot group", "Success and guardrail metrics read"] });
        added.push("a beta milestone");
      }
      if (!c.milestones.some((m) => /launch|general availability|\bga\b|release/i.test(m.name))) {
        c.milestones.push({ name: "General availability", week: last + 2, deliverables: ["Full rollout", "Metrics compared with baselines"] });
        added.push("a general-availability milestone");
      }
      return done(b, c, added);
    }
    case "free_text": {
      const c = structuredClone(b.content);
      const ev = related.filter((i) => i.quotes.length && !c.markdown.includes(i.quotes[0].text));
      if (ev.length) {
        c.markdown = `${c.markdown.trim()}\n\n**Related evidence:**\n\n${ev.map((i) => `- “${i.quotes[0].text}” — ${i.title} ([insight](${insightHref(i.id)}))`).join("\n")}`.trim();
        added.push(...ev.map((i) => `quote from insight “${i.title}”`));
      }
      return done(b, c, added);
    }
  }
}

const lowerStart = (s: string) => (s && !/^[A-Z]{2}/.test(s) ? s[0].toLowerCase() + s.slice(1) : s);

function done(b: Typed, content: unknown, added: string[]): ExpandResult {
  const valid = BLOCK_CONTENT_SCHEMAS[b.block_type].parse(content) as Record<string, unknown>;
  return { block_type: b.block_type, title: b.title, content: valid, added: added.length ? added : ["nothing: the block already meets its contract and no related evidence was found"] };
}

// ---------------------------------------------------------------------------------------------------------------
// challenge
// ---------------------------------------------------------------------------------------------------------------

/**
 * Rule-based critique of a block against its type's contract and its context (see the module comment).
 *
 * @returns `{ strengths, weaknesses, questions, suggestions }` — each a list of sentences; `questions` always has at least
 *   one entry.
 * @throws AppError `VALIDATION_ERROR` when the block's content violates its contract
 */
export function challengeBlock(block: ActionBlock, context: ActionBlock[] = [], insights: InsightInput[] = []): ChallengeResult {
  const b = typed(block);
  const ctx = selectContext(block, context).map(typed);
  const r: ChallengeResult = { strengths: [], weaknesses: [], questions: [], suggestions: [] };
  const text = blockText(b);
  const vague = vagueWords(text);
  if (vague.length) r.weaknesses.push(`Vague wording (${vague.map((v) => `“${v}”`).join(", ")}): say how much, for whom, measured how.`);
  const ofType = <K extends BlockType>(k: K) => ctx.filter((x) => x.block_type === k) as Extract<Typed, { block_type: K }>[];
  const personas = ofType("persona").map((p) => p.content.name).filter(Boolean);
  const insightIds = new Set(insights.map((i) => i.id));

  switch (b.block_type) {
    case "problem": {
      const c = b.content;
      if (!c.statement.trim()) r.weaknesses.push("The problem statement is empty.");
      else r.strengths.push("States the problem in its own block.");
      const linked = c.evidence.filter((e) => e.insight_id);
      if (!c.evidence.length) r.weaknesses.push("No evidence: the problem is not backed by any insight or quote.");
      else if (linked.length < c.evidence.length) r.weaknesses.push(`${c.evidence.length - linked.length} of ${c.evidence.length} evidence items are not linked to an insight, so they cannot be verified.`);
      const distinct = new Set(linked.map((e) => e.insight_id));
      if (distinct.size >= 2) r.strengths.push(`Backed by ${distinct.size} linked insights.`);
      if (c.evidence.some((e) => e.quote)) r.strengths.push("Includes users' own words.");
      if (insights.length && linked.some((e) => !insightIds.has(e.insight_id!))) r.questions.push("Some evidence cites insights that are not in the provided set — were they archived or deleted?");
      if (!c.impact.trim()) r.weaknesses.push("Impact is missing: what does this problem cost users or the business?");
      if (!c.affected_users && !personas.length && !/\b(users?|customers?|veterans?|admins?|people|teams?|patients?)\b/i.test(c.statement))
        r.questions.push("Who exactly has this problem? Neither the block nor the document names the affected users.");
      if (/\b(we should|we will|add|build|implement|introduce)\b/i.test(c.statement)) r.weaknesses.push("The statement describes a solution; keep the problem solution-free so alternatives stay open.");
      if (!ofType("metrics").length) r.suggestions.push("Add a metrics block nearby so the problem has a measurable target.");
      r.questions.push("How often does this happen, and how do users work around it today?");
      break;
    }
    case "persona": {
      const c = b.content;
      if (!c.name.trim() || /^(the )?users?$/i.test(c.name.trim())) r.weaknesses.push("The persona has no specific name or segment (“users” is everyone).");
      else r.strengths.push(`Names a specific persona: ${c.name}.`);
      if (!c.goals.length) r.weaknesses.push("No goals: what is this persona trying to get done?");
      if (!c.pain_points.length) r.weaknesses.push("No pain points: what gets in their way today?");
      if (c.goals.length && c.pain_points.length) r.strengths.push("Has both goals and pain points.");
      if (!c.quote) r.suggestions.push("Add a verbatim quote from research to make the persona concrete.");
      r.questions.push("Which share of users does this persona represent, and how do we know?");
      break;
    }
    case "solution": {
      const c = b.content;
      if (!c.summary.trim()) r.weaknesses.push("The solution has no summary.");
      else r.strengths.push("Has a one-line summary.");
      if (!c.details.length) r.weaknesses.push("No details: engineers cannot estimate or ticket it.");
      if (!c.alternatives_considered.length) r.weaknesses.push("No alternatives considered: why this approach over doing nothing or a smaller scope?");
      else r.strengths.push(`Weighs ${c.alternatives_considered.length} alternative${c.alternatives_considered.length === 1 ? "" : "s"}.`);
      if (!c.non_goals.length) r.suggestions.push("List non-goals to keep scope from creeping.");
      const problems = ofType("problem");
      if (problems.length) {
        const pk = keywordSet(problems.map((p) => p.content.statement).join(" "));
        const sk = keywordSet(text);
        const shared = [...pk].filter((k) => sk.has(k));
        if (pk.size >= 3 && shared.length === 0)
          r.weaknesses.push(`The solution shares no key terms with the problem (${[...pk].slice(0, 4).join(", ")}): does it address the problem described?`);
        else if (shared.length) r.strengths.push(`Connects to the problem (${shared.slice(0, 3).join(", ")}).`);
      }
      for (const ng of c.non_goals) {
        const nk = keywordSet(ng);
        const clash = c.details.find((d) => {
          const dk = keywordSet(d);
          return [...nk].filter((k) => dk.has(k)).length >= Math.min(2, nk.size) && nk.size > 0;
        });
        if (clash) r.weaknesses.push(`Contradiction: the detail “${truncate(clash, 80)}” overlaps the non-goal “${truncate(ng, 80)}”.`);
      }
      if (c.details.length > 8) r.suggestions.push("More than 8 details: split into phases or separate solutions.");
      r.questions.push("What is the smallest version of this that would still solve the problem?");
      break;
    }
    case "metrics": {
      const ms = b.content.metrics;
      if (!ms.length) r.weaknesses.push("No metrics defined.");
      const noBase = ms.filter((m) => !m.baseline || /not measured|tbd|unknown|^\s*$/i.test(m.baseline));
      if (noBase.length) r.weaknesses.push(`${noBase.length} metric${noBase.length === 1 ? " has" : "s have"} no baseline (${noBase.map((m) => `“${truncate(m.name, 50)}”`).join(", ")}): without one, a target cannot be judged.`);
      const noTarget = ms.filter((m) => !m.target.trim() || (!hasNumber(m.target) && !(m.kind === "guardrail" && /\bno (increase|decrease|change|drop|regression)\b|\b(hold|stay)s?\b/i.test(m.target))));
      if (noTarget.length) r.weaknesses.push(`${noTarget.length} metric${noTarget.length === 1 ? " has" : "s have"} no numeric target (${noTarget.map((m) => `“${truncate(m.name, 50)}”`).join(", ")}).`);
      const good = ms.filter((m) => m.baseline && hasNumber(m.target) && !noBase.includes(m));
      if (good.length) r.strengths.push(`${good.length} metric${good.length === 1 ? " has" : "s have"} both a baseline and a numeric target.`);
      if (ms.length && !ms.some((m) => m.kind === "guardrail")) r.suggestions.push("Add a guardrail metric (what must not get worse).");
      if (ms.filter((m) => m.kind !== "guardrail").length > 5) r.weaknesses.push("More than 5 success metrics dilute focus; pick one primary metric.");
      if (ms.some((m) => !m.measurement)) r.suggestions.push("Say how each metric is measured (event, query, survey).");
      for (const other of ofType("metrics")) {
        for (const m of ms) {
          const o = other.content.metrics.find((x: Metric) => x.name.trim().toLowerCase() === m.name.trim().toLowerCase() && x.target.trim() !== m.target.trim());
          if (o) r.weaknesses.push(`Contradiction: “${m.name}” targets ${m.target || "nothing"} here but ${o.target || "nothing"} in “${other.title}”.`);
        }
      }
      r.questions.push("Which single metric decides whether this shipped successfully?");
      break;
    }
    case "user_story": {
      const c = b.content;
      if (!c.as_a.trim()) r.weaknesses.push("No user role (“As a …”).");
      if (!c.i_want.trim()) r.weaknesses.push("No goal (“I want …”).");
      if (!c.so_that.trim()) r.weaknesses.push("No benefit (“so that …”): the reason behind the story is missing.");
      if (c.as_a && c.i_want && c.so_that) r.strengths.push("Complete “As a / I want / so that” statement.");
      if (!c.acceptance_criteria.length) r.weaknesses.push("No acceptance criteria: the story cannot be tested or ticketed.");
      else {
        r.strengths.push(`${c.acceptance_criteria.length} acceptance criteri${c.acceptance_criteria.length === 1 ? "on" : "a"}.`);
        const vagueAc = c.acceptance_criteria.filter((a) => vagueWords(a).length);
        if (vagueAc.length) r.weaknesses.push(`${vagueAc.length} acceptance criteri${vagueAc.length === 1 ? "on is" : "a are"} not testable as written (vague wording).`);
        if (!c.acceptance_criteria.some((a) => /\b(error|fail\w*|invalid|offline|time[ds]? ?out|denied|cannot|retry)\b/i.test(a)))
          r.suggestions.push("Add a criterion for the failure path (error, offline, invalid input).");
      }
      if (personas.length && c.as_a) {
        const ak = keywordSet(c.as_a);
        const match = personas.some((p) => [...keywordSet(p)].some((k) => ak.has(k)));
        if (!match) r.questions.push(`The story is for “${c.as_a}”, but the document's personas are ${personas.map((p) => `“${p}”`).join(", ")}: which persona is this?`);
      }
      if (!c.priority) r.suggestions.push("Set a priority (must / should / could / won't).");
      r.questions.push("What is the smallest slice of this story that delivers the benefit?");
      break;
    }
    case "edge_case": {
      const c = b.content;
      if (!c.scenario.trim()) r.weaknesses.push("The scenario is empty.");
      else r.strengths.push("Names a concrete situation.");
      if (!c.expected_behavior.trim()) r.weaknesses.push("No expected behaviour: engineering will have to guess.");
      else if (vagueWords(c.expected_behavior).length) r.weaknesses.push("The expected behaviour is not testable as written.");
      else r.strengths.push("States the expected behaviour.");
      const stories = ofType("user_story");
      if (stories.length) {
        const sk = keywordSet(c.scenario);
        const covered = stories.some((s) => s.content.acceptance_criteria.some((a) => [...keywordSet(a)].filter((k) => sk.has(k)).length >= 2));
        if (!covered) r.suggestions.push("No user story's acceptance criteria cover this edge case; add one.");
      }
      r.questions.push("How often will this happen, and what does it cost when it is handled badly?");
      break;
    }
    case "risk": {
      const c = b.content;
      if (!c.risk.trim()) r.weaknesses.push("The risk is not described.");
      if (!c.mitigation.trim()) r.weaknesses.push("No mitigation: what will the team do about it?");
      else r.strengths.push("Has a mitigation.");
      if (!c.likelihood || !c.impact) r.weaknesses.push(`Not assessed: ${[!c.likelihood && "likelihood", !c.impact && "impact"].filter(Boolean).join(" and ")} missing.`);
      else r.strengths.push(`Assessed: likelihood ${c.likelihood}, impact ${c.impact}.`);
      if (c.likelihood === "high" && c.impact === "high" && !c.owner) r.weaknesses.push("A high-likelihood, high-impact risk has no owner.");
      if (!c.owner) r.suggestions.push("Name an owner.");
      r.questions.push("What early signal would tell us this risk is materialising?");
      break;
    }
    case "timeline": {
      const ms = b.content.milestones;
      if (!ms.length) r.weaknesses.push("No milestones.");
      const undated = ms.filter((m: Milestone) => m.week === undefined && !m.target_date);
      if (undated.length) r.weaknesses.push(`${undated.length} milestone${undated.length === 1 ? " has" : "s have"} no week or date.`);
      const weeks = ms.map((m: Milestone) => m.week).filter((w): w is number => w !== undefined);
      if (weeks.some((w, k) => k > 0 && w < weeks[k - 1])) r.weaknesses.push("Contradiction: milestone weeks go backwards.");
      const dates = ms.map((m: Milestone) => m.target_date).filter((d): d is string => !!d);
      if (dates.some((d, k) => k > 0 && d < dates[k - 1])) r.weaknesses.push("Contradiction: milestone dates go backwards.");
      const empty = ms.filter((m: Milestone) => !m.deliverables.length);
      if (empty.length) r.weaknesses.push(`${empty.length} milestone${empty.length === 1 ? " has" : "s have"} no deliverables.`);
      if (ms.length >= 2 && !undated.length && !empty.length) r.strengths.push("Every milestone is placed in time and has deliverables.");
      if (!ms.some((m: Milestone) => /beta|pilot/i.test(m.name))) r.suggestions.push("Add a beta or pilot milestone before full rollout.");
      const risks = ofType("risk");
      if (risks.some((x) => /slip|delay|estimate/i.test(x.content.risk)) && !ms.some((m: Milestone) => /buffer|contingency/i.test(m.name)))
        r.suggestions.push("A risk block warns about slipping, but the timeline has no buffer.");
      r.questions.push("What is fixed here — the date or the scope?");
      break;
    }
    case "free_text": {
      const md = b.content.markdown;
      if (!md.trim()) r.weaknesses.push("The block is empty.");
      else r.strengths.push("Captures context that has no structured field.");
      const wordsN = plainWords(md).length;
      if (wordsN > 300 && !/^\s*([-*]|\d+\.|#)/m.test(md)) r.suggestions.push("Long unstructured text: break it into a list or into typed blocks.");
      if (/\d+\s*%|\b\d{2,}\b/.test(md) && !/#insight-|\[I\d+\]/.test(md)) r.questions.push("The text states numbers without citing an insight — where do they come from?");
      const t = keywords(md);
      if (t.some((k) => ["risk", "metric", "persona"].includes(k))) r.suggestions.push("Parts of this text look like a typed block (risk, metric, persona); extract them so they can be challenged and ticketed.");
      r.questions.push("Does a reader need this to decide or build, or is it background?");
      break;
    }
  }
  if (!r.questions.length) r.questions.push("What would change your mind about this block?");
  return r;
}

// ---------------------------------------------------------------------------------------------------------------
// simulate
// ---------------------------------------------------------------------------------------------------------------

const lvl = (n: number): "low" | "medium" | "high" => (n >= 3 ? "high" : n >= 2 ? "medium" : "low");

/**
 * Explores a block's real-world implications as scenarios (see the module comment).
 *
 * @returns `{ scenarios: [{ name, description, likelihood: low|medium|high, consequences[] }] (3–4), assumptions[],
 *   signals_to_watch[] }`
 * @throws AppError `VALIDATION_ERROR` when the block's content violates its contract
 */
export function simulateBlock(block: ActionBlock, context: ActionBlock[] = [], insights: InsightInput[] = []): SimulateResult {
  const b = typed(block);
  const ctx = selectContext(block, context).map(typed);
  const related = relatedInsights(blockText(b), insights);
  const worst = related.reduce((m, i) => Math.max(m, SEVERITY_RANK[i.severity]), 0);
  const metrics = ctx.filter((x) => x.block_type === "metrics").flatMap((x) => (x.content as BlockContent<"metrics">).metrics);
  const signals = metrics.slice(0, 3).map((m) => `${m.name}${m.target ? ` (target ${m.target})` : ""}`);
  const scenarios: SimulationScenario[] = [];
  const assumptions: string[] = [];
  const name = truncate(b.title, 60);
  switch (b.block_type) {
    case "problem": {
      const c = b.content;
      const nEv = c.evidence.length;
      scenarios.push(
        {
          name: "Left unaddressed",
          description: `Nothing changes about “${name}”.`,
          likelihood: "medium",
          consequences: [
            related.length ? `Users keep reporting it (${related.map((i) => `${i.title}: ${i.frequency} source${i.frequency === 1 ? "" : "s"}`).join("; ")}).` : "Users keep working around it.",
            worst >= 3 ? "High-severity reports make churn or escalations likely." : "Frustration accumulates; it shows up in reviews and support.",
          ],
        },
        {
          name: "Fixed for the reported cases",
          description: "The cited scenarios are resolved.",
          likelihood: nEv >= 2 ? "medium" : "low",
          consequences: ["Mentions in new research should fall in the next cycle.", "Related problems that were masked by this one may surface."],
        },
        {
          name: "The problem is narrower than it looks",
          description: `Only ${nEv} evidence item${nEv === 1 ? "" : "s"} support it; it may affect a small segment.`,
          likelihood: nEv <= 2 ? "high" : "low",
          consequences: ["Effort spent on a broad fix is partly wasted.", "A targeted fix for the affected segment would have been enough."],
        },
      );
      assumptions.push("The evidence is representative of the user base.", "Users' reports describe the root cause, not a symptom.");
      break;
    }
    case "persona": {
      const c = b.content;
      scenarios.push(
        { name: "The persona adopts the change", description: `${c.name || "The persona"} uses the new flow for their goals.`, likelihood: c.goals.length ? "medium" : "low", consequences: c.goals.slice(0, 2).map((g) => `Goal served: ${g}`).concat(c.goals.length ? [] : ["No stated goals to check adoption against."]) },
        { name: "The persona is not the main user", description: "Usage data shows another segment dominates.", likelihood: c.description ? "low" : "medium", consequences: ["Design decisions tuned for this persona misfire.", "Metrics need segmenting by persona."] },
        { name: "Pain points persist", description: "The change ships but the persona's pain points stay.", likelihood: c.pain_points.length > 2 ? "medium" : "low", consequences: c.pain_points.slice(0, 2).map((p) => `Still painful: ${p}`).concat(c.pain_points.length ? [] : ["Unknown — no pain points recorded."]) },
      );
      assumptions.push("This persona is a real, sizeable segment.");
      break;
    }
    case "solution": {
      const c = b.content;
      const big = c.details.length > 5;
      scenarios.push(
        { name: "Works as intended", description: `“${truncate(c.summary || name, 100)}” ships and users adopt it.`, likelihood: "medium", consequences: ["The linked problem's reports drop.", ...signals.slice(0, 1).map((s) => `Moves: ${s}`)] },
        { name: "Low adoption", description: "It ships but few users find or use it.", likelihood: "medium", consequences: ["Effort spent without impact on the metrics.", "Needs discoverability work (entry points, onboarding)."] },
        { name: "Unintended side effect", description: "The change disturbs something users already rely on.", likelihood: related.some((i) => i.insight_type === "feedback_theme" || i.insight_type === "behavior") ? "medium" : "low", consequences: ["Negative reviews about the changed flow.", "Guardrail metric worsens; a rollback may be needed."] },
      );
      if (big) scenarios.push({ name: "Scope creep", description: `${c.details.length} details make the first release large.`, likelihood: "high", consequences: ["Delivery slips.", "Value arrives later than a phased release would deliver it."] });
      assumptions.push("The solution addresses the root cause described in the problem block.", "Users will find the new behaviour without training.");
      break;
    }
    case "metrics": {
      for (const m of b.content.metrics.slice(0, 2)) {
        scenarios.push(
          { name: `Target hit: ${truncate(m.name, 50)}`, description: `${m.name} reaches ${m.target || "its target"}.`, likelihood: m.baseline ? "medium" : "low", consequences: ["Evidence that the change worked; keep investing.", m.baseline ? `Improvement measured against the baseline ${m.baseline}.` : "Without a baseline, the size of the gain is unknown."] },
          { name: `Target missed: ${truncate(m.name, 50)}`, description: `${m.name} does not reach ${m.target || "its target"}.`, likelihood: "medium", consequences: ["Revisit the problem hypothesis before iterating on the solution.", "Check whether the metric measures the change at all."] },
        );
      }
      scenarios.push({ name: "The metric is gamed", description: "Teams optimise the number rather than the outcome (Goodhart's law).", likelihood: "low", consequences: ["The metric improves while users' experience does not.", "A guardrail metric catches it, if one exists."] });
      assumptions.push("The metrics can be measured before and after the change.");
      break;
    }
    case "user_story": {
      const c = b.content;
      scenarios.push(
        { name: "Happy path", description: `A ${c.as_a || "user"} wants ${c.i_want || "the goal"} and it works.`, likelihood: "high", consequences: [c.so_that ? `Benefit delivered: ${c.so_that}.` : "Benefit unknown — the story has no “so that”."] },
        { name: "Error path", description: "The action fails (network, server, invalid input).", likelihood: "medium", consequences: [c.acceptance_criteria.some((a) => /error|fail|retry/i.test(a)) ? "Covered by an acceptance criterion." : "Not covered by any acceptance criterion — behaviour is undefined."] },
        { name: "Assistive technology", description: "The user relies on a screen reader or large text.", likelihood: "medium", consequences: [c.acceptance_criteria.some((a) => /accessib|screen reader|label|text size/i.test(a)) ? "Covered by an acceptance criterion." : "Not covered — the story may ship inaccessible."] },
      );
      assumptions.push(`The ${c.as_a || "user"} role exists and is reachable for testing.`);
      break;
    }
    case "edge_case": {
      const c = b.content;
      scenarios.push(
        { name: "Handled as specified", description: `${c.scenario || "The situation"} happens and ${c.expected_behavior ? lowerStart(c.expected_behavior) : "the behaviour is undefined"}.`, likelihood: c.expected_behavior ? "medium" : "low", consequences: ["No support contact needed."] },
        { name: "Not handled", description: `${c.scenario || "The situation"} happens and the product does something unplanned.`, likelihood: c.expected_behavior ? "low" : "high", consequences: ["Data loss or a dead end for the user.", "Support tickets and bad reviews."] },
        { name: "More common than expected", description: "The edge case turns out to be a main path for some users.", likelihood: lvl(worst), consequences: ["It needs design attention, not just error handling."] },
      );
      assumptions.push("The edge case can be reproduced in testing.");
      break;
    }
    case "risk": {
      const c = b.content;
      const like = c.likelihood ?? "medium";
      scenarios.push(
        { name: "Materialises, mitigation works", description: `${truncate(c.risk, 100)} — and ${c.mitigation ? lowerStart(truncate(c.mitigation, 100)) : "there is no mitigation"}.`, likelihood: c.mitigation ? like : "low", consequences: ["Limited damage; schedule impact small.", c.owner ? `${c.owner} leads the response.` : "Nobody owns the response yet."] },
        { name: "Materialises, mitigation fails", description: "The risk happens and the mitigation is not enough.", likelihood: c.mitigation ? "low" : like, consequences: [c.impact === "high" ? "Serious damage: delay, incident or lost trust." : "Noticeable but recoverable damage."] },
        { name: "Does not materialise", description: "The risk never happens.", likelihood: like === "high" ? "low" : like === "low" ? "high" : "medium", consequences: ["The mitigation cost is the only cost."] },
      );
      assumptions.push("The likelihood and impact assessment is current.");
      break;
    }
    case "timeline": {
      const ms = b.content.milestones;
      const lastWeek = Math.max(0, ...ms.map((m: Milestone) => m.week ?? 0));
      scenarios.push(
        { name: "On time", description: `All ${ms.length} milestones land as planned${lastWeek ? ` (by week ${lastWeek})` : ""}.`, likelihood: ms.length <= 3 ? "medium" : "low", consequences: ["Metrics can be read on schedule."] },
        { name: "Slips by half", description: lastWeek ? `Discovery finds more scope; the last milestone moves to week ${Math.ceil(lastWeek * 1.5)}.` : "Discovery finds more scope; every milestone slips by half its duration.", likelihood: "medium", consequences: ["Later milestones compress or move.", "Stakeholders need an update."] },
        { name: "Scope cut to hold the date", description: "The date holds; deliverables are cut.", likelihood: "medium", consequences: ms.slice(-1).flatMap((m: Milestone) => m.deliverables.slice(-1).map((d) => `At risk: ${d}`)).concat(["Value arrives in a follow-up release."]) },
      );
      assumptions.push("The team is staffed for the whole timeline.", "Estimates include testing and rollout.");
      break;
    }
    case "free_text": {
      scenarios.push(
        { name: "Readers act on it", description: "The text informs a decision.", likelihood: "medium", consequences: ["Decisions rest on this text; it should cite evidence."] },
        { name: "Readers skip it", description: "The text is not read.", likelihood: plainWords(b.content.markdown).length > 300 ? "high" : "low", consequences: ["Its information is lost unless it moves into typed blocks."] },
        { name: "Readers misread it", description: "Ambiguous wording leads to different interpretations.", likelihood: vagueWords(b.content.markdown).length ? "medium" : "low", consequences: ["Rework after review."] },
      );
      assumptions.push("The text is current.");
      break;
    }
  }
  if (related.length) assumptions.push(`The related insights (${related.map((i) => `“${i.title}”`).join(", ")}) still hold.`);
  if (!signals.length) signals.push(...defaultSignals(b.block_type));
  return { scenarios, assumptions, signals_to_watch: signals };
}

function defaultSignals(t: BlockType): string[] {
  switch (t) {
    case "problem":
      return ["Mentions of the problem in new research and support tickets"];
    case "solution":
      return ["Adoption of the new flow", "Support contacts about the changed flow"];
    case "risk":
      return ["The early warning sign named in the mitigation"];
    case "timeline":
      return ["Milestone dates versus plan, weekly"];
    default:
      return ["User feedback on the affected flow"];
  }
}

/** @internal exposed for unit tests. */
export const _internal = { relatedInsights, vagueWords };
