/**
 * Mission planning (issue #21; spec 02 `harness_plan_selected`, `mission_proposed`): a complex request's clauses
 * become subtasks, and 2 to 3 candidate plans arrange them; each is scored deterministically and the best is chosen.
 * The formula (docs/decisions.md "Mission plans and their score"):
 *
 *   total = 0.35·coverage + 0.25·efficiency + 0.25·feasibility + 0.15·alignment   (each 0..1, rounded to 3 places)
 *
 * - coverage: share of the request's clauses that are the objective of a subtask of their own;
 * - efficiency: max_i(turns_i) / wall_turns, where wall_turns is the longest dependency path in estimated turns
 *   (1 when every subtask can run at once; 1/n-ish for a strict sequence);
 * - feasibility: how well each thread fits its turn budget (max_turns / estimated turns, at most 1, averaged over
 *   threads) times the share of parallel lanes within MAX_PARALLEL;
 * - alignment: share of the user's explicit sequencing ("…, then …") the plan honours as a dependency, averaged with
 *   the share of the request's workflows that keep a subtask of their own.
 * Ties go to the earlier candidate (parallel, sequential, single).
 */
import type { Clause, WorkflowType } from "./complexity";

/** A subtask of a mission (spec 02 mission_proposed `subtasks`). */
export interface Subtask {
  index: number;
  title: string;
  workflow_type: WorkflowType;
  /** Indices of the subtasks it waits for. */
  depends_on: number[];
}

/** A candidate plan (spec 02 harness_plan_selected `plan`). */
export interface Plan {
  plan_id: "parallel" | "sequential" | "single";
  title: string;
  description: string;
  /** What runs it: "mission" (threads) or the workflow of a single run. */
  suggested_workflow: "mission" | WorkflowType;
  /** What every thread of the plan is told beyond its objective (output format and boundaries). */
  prompt_modifier: string;
  /** Estimated model turns along the longest dependency path (wall time in turns). */
  estimated_turns: number;
  subtasks: Subtask[];
  rationale: string;
}

/** A plan's score (spec 02 harness_plan_selected `score`). */
export interface PlanScore {
  coverage: number;
  efficiency: number;
  feasibility: number;
  alignment: number;
  total: number;
}

/** Threads that may run at once in one mission. */
export const MAX_PARALLEL = 4;
/** Estimated model turns per workflow: a read then the answer; synthesis/recommendation/drafting add the write. */
export const TURNS: Record<WorkflowType, number> = { research: 2, synthesis: 3, recommendation: 3, drafting: 3 };
export const WEIGHTS = { coverage: 0.35, efficiency: 0.25, feasibility: 0.25, alignment: 0.15 } as const;

/**
 * Upstream workflows, nearest first: a subtask waits for the nearest earlier subtask of its first upstream workflow
 * present (a draft waits for the recommendation, which itself waits for the synthesis).
 */
const UPSTREAM: Record<WorkflowType, WorkflowType[]> = {
  research: ["synthesis"],
  synthesis: [],
  recommendation: ["synthesis"],
  drafting: ["recommendation", "synthesis"],
};

const r3 = (x: number) => Math.round(x * 1000) / 1000;

const PROMPT_MODIFIER =
  "You are one thread of a mission. Do only your objective; the other subtasks are other threads' work. Answer in at most a few short paragraphs or a list, citing insights as [insight <id>] and sources as [source <id>], quoting users only verbatim from tool results.";

/** Dependencies by workflow: each subtask waits for the nearest earlier subtask of its first upstream workflow present. */
function byWorkflow(clauses: Clause[]): Subtask[] {
  return clauses.map((c, index) => {
    let dep: number | undefined;
    for (const up of UPSTREAM[c.workflow_type]) {
      for (let j = index - 1; j >= 0 && dep === undefined; j--) if (clauses[j]!.workflow_type === up) dep = j;
      if (dep !== undefined) break;
    }
    return { index, title: c.text, workflow_type: c.workflow_type, depends_on: dep === undefined ? [] : [dep] };
  });
}

/** Estimated turns of each subtask's longest path to it (its own turns plus its slowest dependency's path). */
function pathTurns(subtasks: Subtask[]): number[] {
  const out: number[] = [];
  for (const s of subtasks) out[s.index] = TURNS[s.workflow_type] + Math.max(0, ...s.depends_on.map((d) => out[d] ?? 0));
  return out;
}

/** The widest set of subtasks that can run at once (subtasks with the same dependency depth). */
function lanes(subtasks: Subtask[]): number {
  const depth: number[] = [];
  for (const s of subtasks) depth[s.index] = 1 + Math.max(0, ...s.depends_on.map((d) => depth[d] ?? 0));
  const perDepth = new Map<number, number>();
  for (const d of depth) perDepth.set(d, (perDepth.get(d) ?? 0) + 1);
  return Math.max(1, ...perDepth.values());
}

/**
 * Score a plan against the request's clauses (see the file's header for the formula).
 * @param maxTurns the per-thread turn budget (spec 02 max_turns)
 */
export function scorePlan(plan: Plan, clauses: Clause[], maxTurns: number): PlanScore {
  const n = Math.max(1, clauses.length);
  const coverage = plan.plan_id === "single" ? 1 / n : Math.min(1, plan.subtasks.length / n);
  // A single run does every clause in one loop, one after another.
  const turns = plan.plan_id === "single" ? clauses.map((c) => TURNS[c.workflow_type]) : plan.subtasks.map((s) => TURNS[s.workflow_type]);
  const wall = plan.plan_id === "single" ? turns.reduce((a, b) => a + b, 0) : Math.max(...pathTurns(plan.subtasks));
  const efficiency = Math.max(...turns) / wall;
  const threadTurns = plan.plan_id === "single" ? [wall] : turns;
  const fit = threadTurns.reduce((s, t) => s + Math.min(1, maxTurns / t), 0) / threadTurns.length;
  const width = lanes(plan.subtasks);
  const feasibility = fit * Math.min(1, MAX_PARALLEL / width);
  const links = clauses.map((c, i) => (c.sequenced && i > 0 ? i : -1)).filter((i) => i > 0);
  const honoured = plan.plan_id === "single" ? links.length : links.filter((i) => plan.subtasks[i]?.depends_on.includes(i - 1)).length;
  const sequencing = links.length ? honoured / links.length : 1;
  const kinds = new Set(clauses.map((c) => c.workflow_type));
  const ownKinds = plan.plan_id === "single" ? 1 : new Set(plan.subtasks.map((s) => s.workflow_type)).size;
  const alignment = (sequencing + Math.min(1, ownKinds / Math.max(1, kinds.size))) / 2;
  const parts = { coverage: r3(coverage), efficiency: r3(efficiency), feasibility: r3(feasibility), alignment: r3(alignment) };
  const total = r3(WEIGHTS.coverage * parts.coverage + WEIGHTS.efficiency * parts.efficiency + WEIGHTS.feasibility * parts.feasibility + WEIGHTS.alignment * parts.alignment);
  return { ...parts, total };
}

/** The candidate plans for a complex request's clauses: parallel by workflow, strictly sequential, and one run. */
export function candidatePlans(clauses: Clause[], prompt: string): Plan[] {
  const parallel = byWorkflow(clauses);
  const sequential = clauses.map((c, index) => ({ index, title: c.text, workflow_type: c.workflow_type, depends_on: index ? [index - 1] : [] }));
  const estimate = (subtasks: Subtask[]) => Math.max(...pathTurns(subtasks));
  const independent = parallel.filter((s) => s.depends_on.length === 0).length;
  return [
    {
      plan_id: "parallel",
      title: `${clauses.length} threads, ${independent} at once`,
      description: "One thread per request; threads whose input another produces wait for it, the others run in parallel.",
      suggested_workflow: "mission",
      prompt_modifier: PROMPT_MODIFIER,
      estimated_turns: estimate(parallel),
      subtasks: parallel,
      rationale: "Independent requests do not wait for each other; a draft waits for the recommendations it builds on.",
    },
    {
      plan_id: "sequential",
      title: `${clauses.length} threads, one after another`,
      description: "One thread per request, each after the previous one, in the order asked.",
      suggested_workflow: "mission",
      prompt_modifier: PROMPT_MODIFIER,
      estimated_turns: estimate(sequential),
      subtasks: sequential,
      rationale: "Keeps the order the request gives, at the cost of waiting.",
    },
    {
      plan_id: "single",
      title: "One run for the whole request",
      description: "The whole request as one agent run, no threads.",
      suggested_workflow: clauses[0]?.workflow_type ?? "research",
      prompt_modifier: "",
      estimated_turns: clauses.reduce((s, c) => s + TURNS[c.workflow_type], 0),
      subtasks: [{ index: 0, title: prompt.slice(0, 300), workflow_type: clauses[0]?.workflow_type ?? "research", depends_on: [] }],
      rationale: "No coordination, but one run has one objective at a time.",
    },
  ];
}

/** The chosen plan with its score and every candidate's total (for the event). */
export interface Selection {
  plan: Plan;
  score: PlanScore & { candidates: { plan_id: Plan["plan_id"]; total: number }[] };
}

/** Score every candidate and take the highest total (ties: the earlier candidate). */
export function selectPlan(clauses: Clause[], prompt: string, maxTurns: number): Selection {
  const scored = candidatePlans(clauses, prompt).map((plan) => ({ plan, score: scorePlan(plan, clauses, maxTurns) }));
  const best = scored.reduce((a, b) => (b.score.total > a.score.total ? b : a));
  return { plan: best.plan, score: { ...best.score, candidates: scored.map((s) => ({ plan_id: s.plan.plan_id, total: s.score.total })) } };
}
