/**
 * The copilot's harness (issue #21; spec 02 Events: every `harness_*`, `mission_proposed`, `agent_thread_*`,
 * `validation_sync`, `context_metrics`): what runs around every agent run, on every engine and entry point (chat and
 * the four stream variants). core/agent/copilot.ts opens it, hands it the agent loop as a {@link LoopRunner}, and
 * writes the quality it returns on the run's record; everything else lives here.
 *
 * 1. Pre-flight ({@link Harness.start}): `harness_complexity` (./complexity.ts), `harness_workspace_profile`
 *    (./profile.ts); a complex chat request becomes a mission: `harness_plan_selected` (./plan.ts) and
 *    `mission_proposed`.
 * 2. The run ({@link Harness.run}): one loop, or the mission's threads (./mission.ts), or a synthesis swarm
 *    (./swarm.ts); the answer streams through the mid-stream checks (./alerts.ts: `harness_stream_alert`).
 * 3. Post-flight: the workflow's contract (./contract.ts: `harness_contract`) and the independent verifier
 *    (./verifier.ts: `harness_verifier`) give the RQS (./rqs.ts); below the threshold the run is repaired
 *    (./repair.ts) and judged again (`harness_retry` with `kind: "quality"`), at most MAX_QUALITY_RETRIES times, then
 *    `harness_degraded`; `validation_sync` closes it. `context_metrics` (./metrics.ts) goes out just before `done`.
 *
 * One turn budget per query (./turns.ts, spec 02 max_turns): the first run, a mission's threads and the repairs draw
 * on it; a repair gets what is left, and with nothing left the answer is not rewritten (the run ends degraded, and
 * its quality record says the budget stopped it).
 *
 * Runs that stop early (turns used up, cut, aborted) are not judged: there is no finished answer to judge.
 */
import type { CallUsage, ConversationTurn } from "../ai/ports";
import type { AgentEvent, AgentRunResult } from "../agent/loop";
import type { RunQuality } from "../agent/index";
import { PLANS, type Plan as BillingPlan } from "../billing/plans";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import * as Document from "../document";
import { randomUUID } from "node:crypto";
import { StreamMonitor } from "./alerts";
import { classify, type Complexity } from "./complexity";
import { checkContract, type ContractResult, type InsightArtifact, type JudgedWorkflow, type RecommendationArtifact, type RunArtifacts } from "./contract";
import type { Send } from "./events";
import { contextMetrics, type ContextMetrics } from "./metrics";
import { composeMissionAnswer, runMission, type ThreadOutcome } from "./mission";
import { selectPlan, TURNS, type Selection } from "./plan";
import { profileOf, snapshotOf, type WorkspaceProfile, type WorkspaceSnapshot } from "./profile";
import { repairArtifacts, repairTurn } from "./repair";
import { groundingOf, rqsOf, RQS_THRESHOLD } from "./rqs";
import { SPECIALISTS, SWARM_PASSES, swarmApplies, swarmPlan } from "./swarm";
import { TurnBudget } from "./turns";
import { verify, type VerifierResult } from "./verifier";

export { STREAM_EVENTS, isStreamEvent, type StreamEventName, type Send } from "./events";
export { RQS_THRESHOLD } from "./rqs";

/** Repairs after the first judgement, at most (so a run is judged at most 1 + this many times). */
export const MAX_QUALITY_RETRIES = 2;

/** The entry point a run came through (spec 02 Streaming). */
export type Entry = "chat" | "synthesis" | "recommendation" | "drafting" | "pipeline";

/** Runs the agent loop once (core/agent/copilot.ts builds it over `runAgent` with the stream's model and tools). */
export type LoopRunner = (run: {
  messages: ConversationTurn[];
  system: string;
  /** The mission the run belongs to (its pending actions batch as `{missionId}:{toolName}`), or null. */
  missionId: string | null;
  /**
   * Model calls this run may make at most (1 to 30): within what the query's budget has left. The harness always
   * sets it and `nextTurn`; optional only for callers that run a loop outside a query (bench/harness.ts).
   */
  maxTurns?: number;
  /** Takes a turn of the query's budget before each model call (the loop's `nextTurn`). */
  nextTurn?(): number | undefined;
  emit(event: AgentEvent): void;
  onToolResult(name: string, content: unknown): void;
}) => Promise<AgentRunResult>;

/** What the stream variants produced before the loop (the artifacts the contract and the verifier judge). */
export interface VariantArtifacts {
  insightIds: string[];
  recommendationIds: string[];
  documentIds: string[];
  /** Sources the synthesis read (a swarm needs enough of them). */
  sourceCount: number;
}

/** Where the harness's events go (the stream's sink). */
export interface HarnessSink {
  token(text: string): void;
  send: Send;
}

/** Tools whose results are evidence an answer must then cite. */
const EVIDENCE_TOOLS = new Set(["search_insights", "list_insights", "get_insight", "list_sources", "read_source_text"]);

/** One judgement of an attempt. */
interface Verdict {
  contract: ContractResult;
  verifier: VerifierResult;
  grounding: number;
  rqs: number;
}

const ENTRY_WORKFLOW: Record<Exclude<Entry, "chat">, JudgedWorkflow> = { synthesis: "synthesis", recommendation: "recommendation", drafting: "drafting", pipeline: "pipeline" };

/** Token chunks of a composed answer (as a model streams words). */
const chunks = (text: string) => text.match(/\S+\s*|\s+/g) ?? [];

/** The results of two attempts as one run: the later answer, everything else summed. */
function merge(a: AgentRunResult, b: AgentRunResult): AgentRunResult {
  return {
    ...b,
    thinking: [...a.thinking, ...b.thinking],
    thinkingBlocks: [...a.thinkingBlocks, ...b.thinkingBlocks],
    steps: [...a.steps, ...b.steps],
    numTurns: a.numTurns + b.numTurns,
    usage: {
      inputTokens: a.usage.inputTokens + b.usage.inputTokens,
      outputTokens: a.usage.outputTokens + b.usage.outputTokens,
      costUsd: a.usage.costUsd + b.usage.costUsd,
      modelId: b.usage.modelId ?? a.usage.modelId,
      calls: a.usage.calls + b.usage.calls,
    },
    pendingActionIds: [...a.pendingActionIds, ...b.pendingActionIds],
  };
}

/** The harness of one run (see the file's header). */
export class Harness {
  /** The run's judged quality, once the post-flight judged it (undefined for runs not judged). */
  quality: RunQuality | undefined;
  /**
   * The run's answer once the loop finished it and before the post-flight judged it: what the client has seen when a
   * check after it fails (a read of the judged artifacts, a repair's model call) or the query's budget or the client's
   * disconnect stops a repair, so the caller can keep it.
   */
  lastComplete: AgentRunResult | undefined;
  /**
   * Whether the run went as threads (a mission's subtasks, a synthesis swarm): a thread's error then says nothing of
   * what the client saw as a whole (threads stream no tokens; other threads' actions are elsewhere).
   */
  threaded = false;
  private artifacts: VariantArtifacts = { insightIds: [], recommendationIds: [], documentIds: [], sourceCount: 0 };
  private readonly monitor: StreamMonitor;
  private evidenceUsed = false;
  /** The query's turns (max_turns), shared by every run of the loop the harness makes. */
  private readonly turns: TurnBudget;
  /** Artifacts a member changed or deleted while a repair rewrote them: not repaired again; and why. */
  private readonly abandoned = new Map<string, string>();
  /** Whether a repair of the answer was left out because the turn budget was used up. */
  private budgetSpent = false;

  private constructor(
    private readonly o: { userId: string; workspaceId: string; prompt: string; entry: Entry; plan?: BillingPlan; maxTurns: number; sink: HarnessSink },
    readonly complexity: Complexity,
    readonly profile: WorkspaceProfile,
    readonly snapshot: WorkspaceSnapshot,
    /** The mission the run is: the variant's own, or a complex chat's; null for a plain chat. */
    readonly missionId: string | null,
    readonly selection: Selection | undefined,
  ) {
    // The sink's methods are called through it (the SSE writer's `send` is a method of its own).
    this.monitor = new StreamMonitor(snapshot, (event, data) => o.sink.send(event, data), [o.prompt, ...(selection?.plan.subtasks.map((s) => s.title) ?? [])]);
    this.turns = new TurnBudget(o.maxTurns);
  }

  /**
   * Pre-flight (spec 02, in this order): `harness_complexity`, `harness_workspace_profile`, and for a complex chat
   * request whose best plan has threads, `harness_plan_selected` and `mission_proposed` (with a new mission id).
   * @param o.missionId the stream variant's mission id (null for chat)
   * @param o.plan the payer's plan as the run's reservation saw it (for `has_synthesis_swarm`)
   */
  static async start(o: { userId: string; workspaceId: string; prompt: string; entry: Entry; plan?: BillingPlan; missionId: string | null; maxTurns: number; sink: HarnessSink }): Promise<Harness> {
    const complexity = classify(o.prompt, o.entry);
    o.sink.send("harness_complexity", { level: complexity.level, reason: complexity.reason, subtask_count: complexity.subtask_count });
    const snapshotting = snapshotOf(o.workspaceId);
    const [snapshot, profile] = await Promise.all([snapshotting, profileOf(o.workspaceId, snapshotting)]);
    o.sink.send("harness_workspace_profile", profile);
    let selection: Selection | undefined;
    let missionId = o.missionId;
    if (complexity.level === "complex") {
      selection = selectPlan(complexity.clauses, o.prompt, o.maxTurns);
      o.sink.send("harness_plan_selected", { plan: selection.plan, score: selection.score });
      if (selection.plan.subtasks.length > 1) {
        missionId ??= randomUUID();
        const lanes = selection.plan.subtasks.filter((s) => s.depends_on.length === 0).length;
        o.sink.send("mission_proposed", { mission_id: missionId, subtasks: selection.plan.subtasks, agent_count: selection.plan.subtasks.length, parallel_count: lanes });
      } else {
        selection = undefined;
      }
    }
    return new Harness({ ...o }, complexity, profile, snapshot, missionId, selection);
  }

  /** The artifacts a stream variant's operation produced, before the loop. */
  setArtifacts(a: VariantArtifacts): void {
    this.artifacts = a;
  }

  private get workflow(): JudgedWorkflow {
    if (this.o.entry === "chat") return this.selection ? "mission" : "chat";
    return ENTRY_WORKFLOW[this.o.entry];
  }

  private tokenOut(text: string) {
    this.monitor.push(text);
    this.o.sink.token(text);
  }

  private readonly emit = (e: AgentEvent) => (e.event === "token" ? this.tokenOut(e.data.content) : this.o.sink.send(e.event, e.data));

  private readonly onToolResult = (name: string, content: unknown) => {
    this.monitor.observeTool(content);
    if (!EVIDENCE_TOOLS.has(name) || !content || typeof content !== "object") return;
    const c = content as { insights?: unknown[]; sources?: unknown[]; text?: string; id?: string };
    if ((c.insights?.length ?? 0) > 0 || (c.sources?.length ?? 0) > 0 || !!c.text || (name === "get_insight" && !!c.id)) this.evidenceUsed = true;
  };

  /**
   * Run the agent (one loop, a mission's threads, or a synthesis swarm), then judge and repair it (see the file's
   * header). The result is the run as a whole: the final answer, every attempt's steps, turns and usage summed.
   * @param o.messages the conversation handed to the loop (history, then the user's prompt)
   * @param o.onUsage told of each repair's model usage as it is spent (the loop's own calls report through the loop)
   */
  async run(o: { loop: LoopRunner; messages: ConversationTurn[]; system: string; onUsage?: (u: CallUsage) => void }): Promise<AgentRunResult> {
    const swarm = (this.o.entry === "synthesis" || this.o.entry === "pipeline") && swarmApplies(!!(this.o.plan && PLANS[this.o.plan]?.has_synthesis_swarm), this.artifacts.sourceCount, this.o.maxTurns);
    let result: AgentRunResult;
    if (this.selection && this.missionId) {
      this.threaded = true;
      result = await this.threads(o, this.missionId, this.selection.plan);
    } else if (swarm && this.missionId) {
      this.iteration(1, { insights: this.artifacts.insightIds.length, sources: this.artifacts.sourceCount });
      const plan = swarmPlan(this.artifacts.sourceCount);
      const started = performance.now();
      this.o.sink.send("harness_swarm_activated", {
        mission_id: this.missionId,
        source_count: this.artifacts.sourceCount,
        specialists: SPECIALISTS.map((s, index) => ({ index, agent_name: s.agent_name, objective: s.objective })),
        reason: `A synthesis over ${this.artifacts.sourceCount} sources on a plan with the synthesis swarm`,
      });
      this.threaded = true;
      result = await this.threads(o, this.missionId, plan, SPECIALISTS.map((s) => s.agent_name));
      this.o.sink.send("harness_swarm_complete", { mission_id: this.missionId, specialists: SPECIALISTS.length, status: result.status, duration_ms: Math.round(performance.now() - started) });
      this.iteration(2, { specialists: SPECIALISTS.length });
    } else {
      result = await o.loop({ messages: o.messages, system: o.system, missionId: this.missionId, maxTurns: this.turns.left, nextTurn: this.turns.take, emit: this.emit, onToolResult: this.onToolResult });
    }
    if (result.status !== "success") return result;
    this.lastComplete = result;
    const judged = await this.judgeAndRepair(result, o);
    if (swarm) this.iteration(3, { rqs: this.quality?.rqs ?? null, retries: this.quality?.quality.retries ?? 0 });
    return judged;
  }

  private iteration(n: number, extra: Record<string, unknown>) {
    this.o.sink.send("harness_iteration_complete", { iteration: n, total_iterations: SWARM_PASSES.length, phase: SWARM_PASSES[n - 1], ...extra });
  }

  /**
   * A plan's subtasks as threads of the loop; the answer composed from theirs and streamed once all are done. The
   * threads draw on the query's one turn budget, each at most its share of it by the plan's estimated turns (rounded
   * up), so a thread that loops cannot starve the others.
   */
  private async threads(o: { loop: LoopRunner; messages: ConversationTurn[]; system: string }, missionId: string, plan: Selection["plan"], agentNames?: readonly string[]): Promise<AgentRunResult> {
    // Each thread sees the conversation before the prompt, then its own objective as the user's turn.
    const history = o.messages.slice(0, -1);
    const left = this.turns.left;
    const estimated = plan.subtasks.reduce((sum, s) => sum + TURNS[s.workflow_type], 0);
    const share = (s: Selection["plan"]["subtasks"][number]) => Math.max(1, Math.min(left, Math.ceil((left * TURNS[s.workflow_type]) / estimated)));
    const outcomes: ThreadOutcome<AgentRunResult>[] = await runMission<AgentRunResult>(
      missionId,
      plan,
      (event, data) => this.o.sink.send(event, data),
      ({ subtask, prompt, system, emit }) =>
        o.loop({
          messages: [...history, { role: "user", content: [{ type: "text", text: prompt }] }],
          // The user's statements about themselves are no subtask, but every thread answers that user.
          system: `${o.system}\n${system}${this.complexity.context.length ? `\nWhat the user told about themselves: ${this.complexity.context.join(" ")}` : ""}`,
          missionId,
          maxTurns: share(subtask),
          nextTurn: this.turns.take,
          emit: (e) => emit(e.event, e.data as Record<string, unknown>),
          onToolResult: this.onToolResult,
        }),
      { agentNames },
    );
    const text = composeMissionAnswer(outcomes);
    for (const c of chunks(text)) this.tokenOut(c);
    const results = outcomes.map((x) => x.result);
    const merged = results.reduce(merge);
    const unfinished = results.find((r) => r.status !== "success");
    return {
      ...merged,
      text,
      status: unfinished ? "partial" : "success",
      stopReason: unfinished?.stopReason ?? "end_turn",
      messages: [...o.messages, { role: "assistant", content: [{ type: "text", text }] }],
    };
  }

  /**
   * Judge; below the threshold repair and judge again; record the quality; close with validation_sync. A rewrite of
   * the answer runs on what the query's turn budget has left, and is left out when nothing is left. A repair a
   * member's change overtook is dropped (their change stands), and that artifact is not repaired again.
   */
  private async judgeAndRepair(first: AgentRunResult, o: { loop: LoopRunner; system: string; onUsage?: (u: CallUsage) => void }): Promise<AgentRunResult> {
    let current = first;
    let verdict = await this.judge(current, 1);
    let retries = 0;
    let degraded = false;
    while (verdict.rqs < RQS_THRESHOLD) {
      const canRetry = retries < MAX_QUALITY_RETRIES;
      const stored = new Set([...this.artifacts.insightIds, ...this.artifacts.recommendationIds, ...this.artifacts.documentIds]);
      const wanted = canRetry ? repairTurn(verdict.contract, verdict.verifier, current.text, stored) : undefined;
      const outOfTurns = !!wanted && this.turns.left === 0;
      if (outOfTurns) this.budgetSpent = true;
      const turn = outOfTurns ? undefined : wanted;
      const storedFailures = verdict.contract.failures.filter((f) => "target" in f && stored.has(f.target) && !this.abandoned.has(f.target));
      const fixed = canRetry && storedFailures.length ? await repairArtifacts(this.o.userId, this.o.workspaceId, { ...verdict.contract, failures: storedFailures }, verdict.verifier) : undefined;
      // Counted as it is spent, before anything else is decided: an abandoned redraft's model call was made too, and a
      // run that fails after its repairs is charged for them as well.
      for (const u of fixed?.usage ?? []) {
        o.onUsage?.(u);
        current.usage.inputTokens += u.inputTokens;
        current.usage.outputTokens += u.outputTokens;
        current.usage.costUsd += u.costUsd;
        current.usage.calls += u.attempts;
      }
      for (const a of fixed?.abandoned ?? []) this.abandoned.set(a.target, a.note);
      const abandoned = fixed?.abandoned.length ? { abandoned: fixed.abandoned.map((a) => a.note) } : {};
      const budget = outOfTurns ? { turn_budget_spent: true } : {};
      if (!canRetry || (!turn && !fixed?.fixed.length)) {
        degraded = true;
        this.o.sink.send("harness_degraded", {
          rqs: verdict.rqs,
          threshold: RQS_THRESHOLD,
          attempts: retries + 1,
          issues: [...verdict.contract.issues, ...verdict.verifier.issues],
          reason: !canRetry
            ? `${MAX_QUALITY_RETRIES} repairs did not reach the quality threshold`
            : outOfTurns
              ? `The query's ${this.o.maxTurns} turns (max_turns) are used up: none is left to rewrite the answer`
              : fixed?.abandoned.length
                ? "A member changed what the repair was rewriting; their change stands"
                : "Nothing that failed can be repaired",
          ...(fixed?.unfixable.length ? { unfixable: fixed.unfixable } : {}),
          ...abandoned,
          ...budget,
        });
        break;
      }
      retries++;
      this.o.sink.send("harness_retry", {
        kind: "quality",
        attempt: retries + 1,
        max_attempts: MAX_QUALITY_RETRIES + 1,
        rqs: verdict.rqs,
        threshold: RQS_THRESHOLD,
        issues: turn?.issues ?? [],
        repairs: fixed?.fixed ?? [],
        ...(fixed?.unfixable.length ? { unfixable: fixed.unfixable } : {}),
        ...abandoned,
        ...budget,
        rewrites_answer: !!turn,
      });
      if (turn) {
        this.monitor.reset();
        const next = await o.loop({
          messages: [...current.messages, { role: "user", content: [{ type: "text", text: turn.text }] }],
          system: o.system,
          missionId: this.missionId,
          // What the query's budget has left (at least 1 here), numbered on from the turns before.
          maxTurns: this.turns.left,
          nextTurn: this.turns.take,
          emit: this.emit,
          onToolResult: this.onToolResult,
        });
        if (next.status !== "success" && next.stopReason === "aborted") {
          // The client left or the budget ran out during the rewrite: the finished answer before it is what the
          // client saw whole, so it stands (a cut rewrite is a fragment, often empty); the run stays aborted (partial),
          // with the rewrite's turns and usage counted.
          const spent = merge(current, next);
          return { ...spent, text: current.text, thinking: current.thinking, thinkingBlocks: current.thinkingBlocks, messages: current.messages };
        }
        if (next.status !== "success") {
          // The rewrite ran out of turns or output before it finished: the complete answer before it stands, as
          // judged (the rewrite's turns and usage were spent, and what it queued is queued).
          const spent = merge(current, next);
          current = { ...spent, text: current.text, thinking: current.thinking, thinkingBlocks: current.thinkingBlocks, messages: current.messages, status: current.status, stopReason: current.stopReason };
          degraded = true;
          if (next.stopReason === "max_turns") this.budgetSpent = true;
          this.o.sink.send("harness_degraded", {
            rqs: verdict.rqs,
            threshold: RQS_THRESHOLD,
            attempts: retries + 1,
            issues: [...verdict.contract.issues, ...verdict.verifier.issues],
            reason:
              next.stopReason === "max_turns"
                ? `The query's ${this.o.maxTurns} turns (max_turns) ran out during the rewrite: the answer before it stands`
                : "The rewrite was cut off before it finished: the answer before it stands",
            answer_kept: "previous",
            ...abandoned,
            ...(next.stopReason === "max_turns" ? { turn_budget_spent: true } : {}),
          });
          break;
        }
        current = merge(current, next);
      }
      verdict = await this.judge(current, retries + 1);
    }
    this.o.sink.send("validation_sync", verdict.verifier.validation);
    this.quality = {
      rqs: verdict.rqs,
      contract_passed: verdict.contract.passed,
      verifier_passed: verdict.verifier.passed,
      quality: {
        workflow_type: this.workflow,
        contract: { score: verdict.contract.score, issues: verdict.contract.issues },
        verifier: { score: verdict.verifier.score, issues: verdict.verifier.issues },
        grounding: verdict.grounding,
        retries,
        degraded,
        mission_id: this.missionId,
        ...(this.abandoned.size ? { abandoned_repairs: [...this.abandoned.values()] } : {}),
        ...(this.budgetSpent ? { turn_budget_spent: true } : {}),
      },
    };
    return current;
  }

  /** One judgement: the contract over the stored artifacts and the answer, then the verifier over the table. */
  private async judge(r: AgentRunResult, attempt: number): Promise<Verdict> {
    const artifacts = await this.loadArtifacts(r);
    const contract = checkContract(this.workflow, artifacts);
    const proposed = r.steps
      .filter((s) => s.status === "queued" && s.name === "create_insight")
      .map((s) => ({ title: String(s.input.title ?? ""), quotes: ((s.input.quotes as { text: string; source_id: string }[] | undefined) ?? []).filter((q) => q?.text && q?.source_id) }));
    const verifier = await verify({
      workspaceId: this.o.workspaceId,
      text: r.text,
      insightIds: this.artifacts.insightIds,
      recommendationIds: this.artifacts.recommendationIds,
      documentIds: this.artifacts.documentIds,
      proposedInsights: proposed,
      allowedQuotes: [this.o.prompt, ...(this.selection?.plan.subtasks.map((s) => s.title) ?? [])],
      snapshotTexts: this.snapshot.texts,
    });
    const grounding = groundingOf(verifier);
    const rqs = rqsOf(contract, verifier, grounding);
    this.o.sink.send("harness_contract", { passed: contract.passed, score: contract.score, issues: contract.issues, workflow_type: contract.workflow_type, attempt, rqs });
    this.o.sink.send("harness_verifier", { passed: verifier.passed, score: verifier.score, issues: verifier.issues, feedback: verifier.feedback, attempt, claims: verifier.claims });
    return { contract, verifier, grounding, rqs };
  }

  /**
   * The artifacts as stored now (the variant's), plus the writes the run queued, for the contract. Every key is read
   * through `getAll`: a key DynamoDB leaves unprocessed, dropped, would pass an artifact the contract never saw; one
   * left unprocessed through its tries makes the judgement an error (503), as the verifier's reads do, never a pass.
   */
  private async loadArtifacts(r: AgentRunResult): Promise<RunArtifacts> {
    const ws = this.o.workspaceId;
    const e = db().entities;
    const get = async <T>(entity: "insight" | "recommendation" | "document", ids: string[]) => {
      const batch = e[entity] as unknown as { get(k: unknown[]): { go(o: unknown): Promise<{ data: T[]; unprocessed: unknown[] }> } };
      return getAll([...new Set(ids)].map((id) => ({ workspace_id: ws, id })), (keys) => batch.get(keys).go({ consistent: true }));
    };
    const [insights, recs, docs] = await Promise.all([
      get<InsightArtifact & { id: string }>("insight", this.artifacts.insightIds),
      get<RecommendationArtifact & { id: string }>("recommendation", this.artifacts.recommendationIds),
      get<Parameters<typeof Document.withContent>[0]>("document", this.artifacts.documentIds),
    ]);
    const documents = await Promise.all(docs.map(async (d) => ({ id: d.id, document_type: d.document_type, content: (await Document.withContent(d)).content })));
    const queued = (name: string) => r.steps.filter((s) => s.status === "queued" && s.name === name).map((s) => s.input);
    const proposedInsights: InsightArtifact[] = queued("create_insight").map((i) => ({
      title: String(i.title ?? ""),
      description: String(i.description ?? ""),
      quotes: ((i.quotes as { text: string; source_id?: string }[] | undefined) ?? []).map((q) => ({ text: q.text, source_id: q.source_id ?? null })),
    }));
    const proposedRecs: RecommendationArtifact[] = queued("create_recommendation").map((x) => ({ title: String(x.title ?? ""), addresses_insight_ids: (x.addresses_insight_ids as string[] | undefined) ?? [] }));
    return {
      text: r.text,
      evidenceUsed: this.evidenceUsed,
      insights: [...insights.map((i) => ({ id: i.id, title: i.title, description: i.description ?? "", quotes: i.quotes ?? [] })), ...proposedInsights],
      recommendations: [...recs.map((x) => ({ id: x.id, title: x.title, addresses_insight_ids: x.addresses_insight_ids ?? [] })), ...proposedRecs],
      documents,
    };
  }

  /** `context_metrics` of the run (spec 02: just before `done`). */
  contextMetrics(result: AgentRunResult | undefined): ContextMetrics {
    return contextMetrics(result?.steps ?? [], { inputTokens: result?.usage.inputTokens ?? 0, calls: result?.usage.calls ?? 0 });
  }
}
