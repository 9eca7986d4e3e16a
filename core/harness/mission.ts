/**
 * A mission's threads (issue #21; spec 02 `agent_thread_*`, `harness_subtask_*`): each subtask is one run of the same
 * agent loop (core/agent/loop.ts, handed in as {@link ThreadRunner}) with its own objective, output format and
 * boundaries (the orchestrator-workers pattern). A subtask starts once every subtask it depends on is done; subtasks
 * whose dependencies are done run at once, at most MAX_PARALLEL together. A thread's tool events stream as they happen,
 * tagged with its `subtask_index`; its text is kept, and the mission's answer is composed from the threads' answers in
 * subtask order once all are done, so parallel threads never interleave their words.
 */
import type { Send } from "./events";
import { MAX_PARALLEL, type Plan, type Subtask } from "./plan";
import { citedIds, statementsOf } from "./claims";

/** What one thread's run returned (the agent loop's result, the parts a mission reads). */
export interface ThreadResult {
  text: string;
  steps: { name: string; status: string; pending_action_id?: string }[];
  pendingActionIds: string[];
}

/**
 * Runs one thread: the agent loop on `prompt` (the subtask's objective, as the user's turn) with `system` (the
 * mission's boundaries and what the subtasks it depends on produced). Its events go to `emit` (tokens are kept by
 * the mission, the others stream tagged with the subtask).
 */
export type ThreadRunner<R extends ThreadResult> = (thread: { subtask: Subtask; prompt: string; system: string; emit: (event: string, data: Record<string, unknown>) => void }) => Promise<R>;

/** One finished thread. */
export interface ThreadOutcome<R extends ThreadResult> {
  subtask: Subtask;
  result: R;
  duration_ms: number;
  artifact_counts: Record<string, number>;
}

/** Names of the specialist agents, by workflow (spec 02 agent_thread_start `agent_name`). */
const AGENT_NAMES: Record<Subtask["workflow_type"], string> = {
  research: "research analyst",
  synthesis: "synthesis analyst",
  recommendation: "product strategist",
  drafting: "document writer",
};

/** Gated tools by the kind of artifact they write. */
const WRITES: Record<string, string> = {
  create_insight: "insights",
  update_insight: "insights",
  run_synthesis: "insights",
  create_recommendation: "recommendations",
  generate_recommendations: "recommendations",
  update_recommendation_status: "recommendations",
  draft_document: "documents",
  update_document: "documents",
  update_block: "documents",
};

/** What a thread produced: pending actions by kind, and the insights and sources its answer cites. */
export function artifactCounts(r: ThreadResult): Record<string, number> {
  const ids = citedIds(statementsOf(r.text));
  const counts: Record<string, number> = {
    pending_actions: r.pendingActionIds.length,
    insights: ids.filter((i) => i.kind === "insight").length,
    sources: ids.filter((i) => i.kind === "source").length,
    recommendations: ids.filter((i) => i.kind === "recommendation").length,
    documents: ids.filter((i) => i.kind === "document").length,
  };
  for (const s of r.steps) if (s.status === "queued" && WRITES[s.name]) counts[`queued_${WRITES[s.name]}`] = (counts[`queued_${WRITES[s.name]}`] ?? 0) + 1;
  return counts;
}

/** The system-prompt lines of a thread: its boundaries and what its dependencies produced. */
function threadSystem(plan: Plan, subtask: Subtask, done: Map<number, ThreadOutcome<ThreadResult>>): string {
  const others = plan.subtasks.filter((s) => s.index !== subtask.index).map((s) => `${s.index + 1}. ${s.title}`);
  const upstream = subtask.depends_on.map((d) => done.get(d)).filter((o): o is ThreadOutcome<ThreadResult> => !!o);
  return [
    `Mission subtask ${subtask.index + 1} of ${plan.subtasks.length} (${subtask.workflow_type}). Objective: ${subtask.title}`,
    plan.prompt_modifier,
    others.length ? `Other threads handle: ${others.join("; ")}` : "",
    ...upstream.map(
      (o) =>
        `Subtask ${o.subtask.index + 1} ("${o.subtask.title}") produced: ${o.result.text.replace(/\s+/g, " ").slice(0, 1500)}${o.result.pendingActionIds.length ? ` (pending actions waiting for approval: ${o.result.pendingActionIds.join(", ")})` : ""}`,
    ),
  ]
    .filter(Boolean)
    .join("\n");
}

/**
 * Run a mission's subtasks as threads (see the file's header), emitting per subtask, in this order:
 * `agent_thread_start`, `harness_subtask_start`, the thread's own events (tagged `subtask_index`),
 * `harness_subtask_done`, `agent_thread_done`. A thread that throws ends the mission with that error once the
 * threads already running have settled (an abort stops them all through the loop's own signal).
 * @param opts.agentNames the agent name of each subtask (default: by its workflow)
 * @returns the threads' outcomes in subtask order
 */
export async function runMission<R extends ThreadResult>(missionId: string, plan: Plan, send: Send, run: ThreadRunner<R>, opts: { agentNames?: readonly string[] } = {}): Promise<ThreadOutcome<R>[]> {
  const total = plan.subtasks.length;
  const done = new Map<number, ThreadOutcome<R>>();
  const running = new Map<number, Promise<void>>();
  const waiting = [...plan.subtasks];
  let failure: unknown;
  let finished = 0;

  const start = (subtask: Subtask, parallel: boolean) => {
    const started = performance.now();
    send("agent_thread_start", { mission_id: missionId, subtask_index: subtask.index, agent_name: opts.agentNames?.[subtask.index] ?? AGENT_NAMES[subtask.workflow_type], workflow_type: subtask.workflow_type });
    send("harness_subtask_start", { subtask_index: subtask.index, total_subtasks: total, title: subtask.title, workflow_type: subtask.workflow_type, parallel });
    const emit = (event: string, data: Record<string, unknown>) => {
      if (event === "token") return; // kept: the mission's answer is composed in order at the end
      send(event as Parameters<Send>[0], { ...data, subtask_index: subtask.index });
    };
    const job = run({ subtask, prompt: subtask.title, system: threadSystem(plan, subtask, done as Map<number, ThreadOutcome<ThreadResult>>), emit })
      .then((result) => {
        const outcome: ThreadOutcome<R> = { subtask, result, duration_ms: Math.round(performance.now() - started), artifact_counts: artifactCounts(result) };
        done.set(subtask.index, outcome);
        finished++;
        send("harness_subtask_done", { subtask_index: subtask.index, total_subtasks: total, artifacts_created: result.pendingActionIds.length, is_last: finished === total });
        send("agent_thread_done", {
          mission_id: missionId,
          subtask_index: subtask.index,
          artifact_summary: result.text.replace(/\s+/g, " ").trim().slice(0, 200),
          artifact_counts: outcome.artifact_counts,
          duration_ms: outcome.duration_ms,
        });
      })
      .catch((err: unknown) => {
        failure ??= err;
      })
      .finally(() => running.delete(subtask.index));
    running.set(subtask.index, job);
  };

  while ((waiting.length || running.size) && failure === undefined) {
    const ready = waiting.filter((s) => s.depends_on.every((d) => done.has(d)));
    const room = Math.max(0, MAX_PARALLEL - running.size);
    const batch = ready.slice(0, room);
    for (const s of batch) waiting.splice(waiting.indexOf(s), 1);
    const parallel = batch.length + running.size > 1;
    for (const s of batch) start(s, parallel);
    if (running.size === 0) break; // nothing can start: a dependency failed or a cycle (plans have none)
    await Promise.race(running.values());
  }
  await Promise.all(running.values());
  if (failure !== undefined) throw failure;
  return plan.subtasks.map((s) => done.get(s.index)).filter((o): o is ThreadOutcome<R> => !!o);
}

/** The mission's answer: each thread's answer under its subtask's title, in subtask order. */
export function composeMissionAnswer(outcomes: ThreadOutcome<ThreadResult>[]): string {
  return outcomes.map((o) => `### ${o.subtask.index + 1}. ${o.subtask.title}\n\n${o.result.text.trim() || "(no answer)"}`).join("\n\n");
}
