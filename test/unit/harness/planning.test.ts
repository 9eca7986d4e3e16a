/**
 * Pre-flight sizing and mission planning (core/harness/complexity.ts, plan.ts): pure rules over the prompt, checked
 * with hand-computed figures.
 */
import { describe, expect, it } from "vitest";
import { classify, clausesOf, isContext, requestOf, workflowOf } from "../../../core/harness/complexity";
import { candidatePlans, scorePlan, selectPlan, WEIGHTS } from "../../../core/harness/plan";
import { SWARM_MIN_SOURCES, SWARM_TURNS, swarmApplies } from "../../../core/harness/swarm";

describe("harness_complexity", () => {
  it("cuts a request into clauses at sentences, then-words and ', and <verb>', each with its workflow", () => {
    const clauses = clausesOf("What do users struggle with? Which interviews do we have, and draft a PRD for the top recommendation. Then recommend what to build next.");
    expect(clauses.map((c) => [c.text, c.workflow_type, c.sequenced])).toEqual([
      ["What do users struggle with?", "research", false],
      ["Which interviews do we have", "research", false],
      ["Draft a PRD for the top recommendation.", "drafting", false],
      ["Recommend what to build next.", "recommendation", true],
    ]);
    expect(workflowOf("Synthesize the interviews from May")).toBe("synthesis");
    expect(workflowOf("What should we build first?")).toBe("recommendation");
    expect(workflowOf("Write a memo about the sign-in problems")).toBe("drafting");
  });

  it("sizes one question simple, two of a kind medium, mixed kinds complex with a subtask count", () => {
    expect(classify("What do users struggle with?")).toMatchObject({ level: "simple", subtask_count: 0 });
    expect(classify("What do users struggle with? Which interviews do we have?")).toMatchObject({ level: "medium", subtask_count: 0 });
    const complex = classify("What do users struggle with? Draft a PRD for the top recommendation.");
    expect(complex).toMatchObject({ level: "complex", subtask_count: 2 });
    expect(complex.reason).toContain("research, drafting");
    expect(classify(`Tell me ${"about the sign-in problems and ".repeat(10)}more`)).toMatchObject({ level: "medium" });
    // The variants run a fixed operation: never decomposed.
    expect(classify("What do users struggle with? Draft a PRD.", "synthesis")).toMatchObject({ level: "simple", subtask_count: 0 });
    expect(classify("Go", "pipeline")).toMatchObject({ level: "medium", subtask_count: 0 });
    expect(classify("hi")).toMatchObject({ level: "simple" });
  });

  it("reads first-person statements as context, not requests: an introduction plus one question is simple", () => {
    const intro = classify("Hi! I'm the PM of Acme. We use Mixpanel for analytics. What do users struggle with?");
    expect(intro).toMatchObject({ level: "simple", subtask_count: 0, context: ["I'm the PM of Acme.", "We use Mixpanel for analytics."] });
    expect(intro.clauses.map((c) => c.text)).toEqual(["What do users struggle with?"]);
    expect(intro.reason).toBe("One research request (and 2 statements of context)");
    expect(requestOf("Hi! I'm the PM of Acme. We use Mixpanel for analytics. What do users struggle with?")).toBe("What do users struggle with?");
    // A long introduction does not make the question long.
    expect(classify(`I'm the PM of Acme. ${"We serve clinics, pharmacies and home-care nurses across three regions. ".repeat(5)}What do users struggle with?`)).toMatchObject({ level: "simple" });
    // Statements around two requests of different kinds: still a mission of the two requests only.
    expect(classify("I'm the PM of Acme. What do users struggle with? Draft a PRD for the top recommendation.")).toMatchObject({ level: "complex", subtask_count: 2, context: ["I'm the PM of Acme."] });
    // First-person requests stay requests: questions, request phrasings, workflow cues.
    for (const t of ["I'd like to know what users struggle with", "We need to know why people churn", "I wonder which interviews mention exports", "We should prioritize the offline fixes", "Can we synthesize the May interviews?"]) expect(isContext(t), t).toBe(false);
    for (const t of ["I'm the PM of Acme.", "We use Mixpanel for analytics.", "Our app is a pharmacy app for clinics.", "My team is five engineers."]) expect(isContext(t), t).toBe(true);
    // Statements only: nothing else to go on, the whole prompt is the request.
    expect(classify("I'm the PM of Acme. We use Mixpanel.")).toMatchObject({ level: "simple", clauses: [] });
    expect(requestOf("I'm the PM of Acme. We use Mixpanel.")).toBe("I'm the PM of Acme. We use Mixpanel.");
  });
});

describe("harness_plan_selected", () => {
  const clauses = clausesOf("Synthesize the interviews. What do users struggle with? Recommend what to build. Draft a PRD for it.");

  it("builds the dependencies by workflow: research and recommendation wait for the synthesis, the draft for the recommendation", () => {
    const [parallel, sequential, single] = candidatePlans(clauses, "p");
    expect(parallel!.subtasks.map((s) => s.depends_on)).toEqual([[], [0], [0], [2]]);
    expect(sequential!.subtasks.map((s) => s.depends_on)).toEqual([[], [0], [1], [2]]);
    expect(single!.subtasks).toHaveLength(1);
    // Longest path in turns: synthesis 3 + recommendation 3 + drafting 3.
    expect(parallel!.estimated_turns).toBe(9);
    expect(sequential!.estimated_turns).toBe(3 + 2 + 3 + 3);
  });

  it("scores with the documented formula (hand-computed) and picks the best", () => {
    const [parallel, sequential, single] = candidatePlans(clauses, "p");
    const p = scorePlan(parallel!, clauses, 10);
    // coverage 4/4; efficiency max turns 3 / wall 9; feasibility 1 (every thread within 10 turns, 2 lanes of 4);
    // alignment: no "then" (1) and all 3 workflows own a subtask (1).
    expect(p).toMatchObject({ coverage: 1, efficiency: 0.333, feasibility: 1, alignment: 1 });
    expect(p.total).toBeCloseTo(WEIGHTS.coverage + WEIGHTS.efficiency * 0.333 + WEIGHTS.feasibility + WEIGHTS.alignment, 3);
    const s = scorePlan(sequential!, clauses, 10);
    expect(s.efficiency).toBe(Math.round((3 / 11) * 1000) / 1000);
    const one = scorePlan(single!, clauses, 10);
    // One objective of four clauses; all 11 turns in one loop, beyond a 10-turn budget.
    expect(one).toMatchObject({ coverage: 0.25, feasibility: Math.round((10 / 11) * 1000) / 1000 });
    const chosen = selectPlan(clauses, "p", 10);
    expect(chosen.plan.plan_id).toBe("parallel");
    expect(chosen.score.candidates.map((c) => c.plan_id)).toEqual(["parallel", "sequential", "single"]);
    expect(chosen.score.total).toBe(Math.max(...chosen.score.candidates.map((c) => c.total)));
  });

  it("runs independent questions at once", () => {
    const chosen = selectPlan(clausesOf("What do users struggle with? Which interviews do we have? Draft a PRD for the top recommendation."), "p", 10);
    expect(chosen.plan.plan_id).toBe("parallel");
    expect(chosen.plan.subtasks.every((s) => s.depends_on.length === 0)).toBe(true);
    expect(chosen.score.efficiency).toBe(1);
  });
});

describe("the synthesis swarm within the query's turn budget", () => {
  it("runs only when max_turns holds every specialist's turns (4 threads of a read and an answer)", () => {
    expect(SWARM_TURNS).toBe(8);
    expect(swarmApplies(true, SWARM_MIN_SOURCES, 8)).toBe(true);
    expect(swarmApplies(true, SWARM_MIN_SOURCES, 7)).toBe(false);
    expect(swarmApplies(false, SWARM_MIN_SOURCES, 30)).toBe(false);
  });
});
