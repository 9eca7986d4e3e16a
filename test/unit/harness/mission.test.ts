/**
 * A mission's threads (core/harness/mission.ts) with runners that stand in for the agent loop: independent subtasks
 * overlap in time, a dependent one waits and receives what its dependency produced, events keep the order the SSE
 * state machine (test/support/sse.ts `orderProblems`) requires, and that state machine rejects broken orders.
 */
import { describe, expect, it } from "vitest";
import { runMission, composeMissionAnswer, type ThreadResult } from "../../../core/harness/mission";
import { candidatePlans } from "../../../core/harness/plan";
import { clausesOf } from "../../../core/harness/complexity";
import { orderProblems, type WireEvent } from "../../support/sse";

const MISSION = "99999999-9999-4999-8999-999999999999";
const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe("runMission", () => {
  it("runs independent subtasks at once and a dependent one after its dependency, with its output in context", async () => {
    const clauses = clausesOf("What do users struggle with? Which interviews do we have? Recommend what to build. Draft a PRD for it.");
    const plan = candidatePlans(clauses, "p")[0]!;
    expect(plan.subtasks.map((s) => s.depends_on)).toEqual([[], [], [], [2]]);
    const events: WireEvent[] = [
      { event: "harness_complexity", data: { level: "complex" } },
      { event: "harness_workspace_profile", data: {} },
      { event: "harness_plan_selected", data: {} },
      { event: "mission_proposed", data: { mission_id: MISSION, subtasks: plan.subtasks } },
    ];
    const running = new Set<number>();
    let maxAtOnce = 0;
    const gates = plan.subtasks.map(() => deferred());
    const systems: string[] = [];
    const mission = runMission<ThreadResult>(MISSION, plan, (event, data) => events.push({ event, data }), async ({ subtask, system, emit }) => {
      running.add(subtask.index);
      maxAtOnce = Math.max(maxAtOnce, running.size);
      systems[subtask.index] = system;
      emit("tool_use", { name: "search_insights", status: "running", input_summary: "{}" });
      emit("token", { content: "never streamed by the thread" });
      await gates[subtask.index]!.promise;
      emit("tool_result", { name: "search_insights", status: "success", output_summary: "{}", duration_ms: 1 });
      running.delete(subtask.index);
      return { text: `Answer ${subtask.index + 1} [insight 11111111-1111-4111-8111-11111111111${subtask.index}]`, steps: [], pendingActionIds: subtask.index === 2 ? ["p-1"] : [] };
    });
    // The three independent threads start together; the draft waits for the recommendation.
    await new Promise((r) => setTimeout(r, 10));
    expect([...running].sort()).toEqual([0, 1, 2]);
    gates[2]!.resolve();
    await new Promise((r) => setTimeout(r, 10));
    expect(running.has(3)).toBe(true);
    gates[0]!.resolve();
    gates[1]!.resolve();
    gates[3]!.resolve();
    const outcomes = await mission;
    const text = composeMissionAnswer(outcomes);
    events.push({ event: "token", data: { content: text } }, { event: "context_metrics", data: {} }, { event: "done", data: { mission_id: MISSION } });

    expect(maxAtOnce).toBe(3);
    expect(orderProblems(events)).toEqual([]);
    expect(events.filter((e) => e.event === "token")).toHaveLength(1);
    expect(systems[3]).toContain('Subtask 3 ("Recommend what to build.") produced: Answer 3');
    expect(systems[3]).toContain("pending actions waiting for approval: p-1");
    expect(events.find((e) => e.event === "harness_subtask_start" && e.data.subtask_index === 3)!.data.parallel).toBe(true);
    const done = events.filter((e) => e.event === "agent_thread_done").map((e) => e.data);
    expect(done.find((d) => d.subtask_index === 2)).toMatchObject({ artifact_counts: { pending_actions: 1, insights: 1 } });
    expect(text.split("### ").slice(1).map((s) => s.split("\n")[0])).toEqual(plan.subtasks.map((s) => `${s.index + 1}. ${s.title}`));
  });

  it("ends with the first thread's error once the running threads settle", async () => {
    const plan = candidatePlans(clausesOf("What do users struggle with? Draft a PRD."), "p")[0]!;
    await expect(
      runMission<ThreadResult>(MISSION, plan, () => undefined, async ({ subtask }) => {
        if (subtask.index === 1) throw new Error("model down");
        return { text: "ok", steps: [], pendingActionIds: [] };
      }),
    ).rejects.toThrow("model down");
  });
});

describe("the stream's order (state machine)", () => {
  const ok: WireEvent[] = [
    { event: "harness_complexity", data: { level: "simple" } },
    { event: "harness_workspace_profile", data: {} },
    { event: "tool_use", data: {} },
    { event: "token", data: {} },
    { event: "harness_contract", data: {} },
    { event: "harness_verifier", data: {} },
    { event: "harness_retry", data: { kind: "quality" } },
    { event: "harness_contract", data: {} },
    { event: "harness_verifier", data: {} },
    { event: "validation_sync", data: {} },
    { event: "context_metrics", data: {} },
    { event: "done", data: { mission_id: null } },
  ];

  it("accepts a valid stream and names each violation of a broken one", () => {
    expect(orderProblems(ok)).toEqual([]);
    const swapped = [...ok];
    [swapped[4], swapped[5]] = [swapped[5]!, swapped[4]!];
    expect(orderProblems(swapped)).toContain("#4 harness_verifier: expected harness_contract");
    expect(orderProblems(ok.filter((e) => e.event !== "context_metrics"))).toContain("context_metrics is not just before done");
    expect(orderProblems([...ok.slice(0, 3), { event: "error", data: {} }, ...ok.slice(3)])).toContain("events follow error other than context_metrics and done");
    expect(orderProblems([ok[0]!, { event: "agent_thread_start", data: { subtask_index: 0 } }, ...ok.slice(1)])).toEqual(
      expect.arrayContaining(["#1 agent_thread_start: a thread starts without a mission or a swarm", "harness_workspace_profile does not follow harness_complexity"]),
    );
  });
});
