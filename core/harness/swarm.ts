/**
 * The synthesis swarm (issue #21; spec 02 `harness_swarm_activated` / `harness_swarm_complete`,
 * `harness_iteration_complete`): a synthesis over many sources, on a plan with `has_synthesis_swarm` (spec 02
 * plans: Power), reports through specialist threads instead of one run: each specialist reads the new insights
 * through its own lens (pain points, requests, how users work, the evidence base) in parallel, as threads of the same
 * loop (./mission.ts), and the report is their answers side by side. The deep synthesis runs in passes, each ending
 * with `harness_iteration_complete`: 1 extraction (the synthesis itself), 2 specialists, 3 verification (the
 * post-flight contract, verifier and repairs).
 */
import { TURNS, type Plan } from "./plan";

/** Synthesized sources from which a synthesis runs as a swarm (when the plan allows it). */
export const SWARM_MIN_SOURCES = 4;
/** The passes of a deep synthesis, in order. */
export const SWARM_PASSES = ["extraction", "specialists", "verification"] as const;

/** The specialists: each one's name and the question its thread asks. */
export const SPECIALISTS = [
  { agent_name: "pain-point specialist", objective: "What do users struggle with? Name the problems with their evidence." },
  { agent_name: "request specialist", objective: "What do users ask for? Name the requests with their evidence." },
  { agent_name: "behaviour specialist", objective: "What do users say about how they work today?" },
  { agent_name: "evidence specialist", objective: "Which research sources does this workspace have, and how many mentions each?" },
] as const;

/** The swarm's threads' estimated turns together (each specialist reads, then answers): what its budget must hold. */
export const SWARM_TURNS = SPECIALISTS.length * TURNS.research;

/**
 * Whether a synthesis runs as a swarm: the plan allows it, it read enough sources, and the query's turn budget
 * (max_turns, shared by every thread) holds every specialist's turns; with less, one run reports within it.
 */
export const swarmApplies = (hasSwarm: boolean, sourceCount: number, maxTurns = Number.POSITIVE_INFINITY): boolean =>
  hasSwarm && sourceCount >= SWARM_MIN_SOURCES && maxTurns >= SWARM_TURNS;

/** The swarm as a plan of independent subtasks (one per specialist), for the mission runner. */
export function swarmPlan(sourceCount: number): Plan {
  return {
    plan_id: "parallel",
    title: `Synthesis swarm: ${SPECIALISTS.length} specialists over ${sourceCount} sources`,
    description: "Specialist threads read the synthesized insights through one lens each, in parallel.",
    suggested_workflow: "mission",
    prompt_modifier:
      "You are one specialist of a synthesis swarm. Answer only your question, from the workspace's insights and sources, citing [insight <id>] and [source <id>] and quoting users verbatim.",
    estimated_turns: 2,
    subtasks: SPECIALISTS.map((s, index) => ({ index, title: s.objective, workflow_type: "research" as const, depends_on: [] })),
    rationale: "Many sources: one reader per lens covers more than one report.",
  };
}
