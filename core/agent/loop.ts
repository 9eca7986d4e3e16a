import { jsonBytes } from "../json-object";
import type { CallUsage, ConversationTurn, ModelTier, StopReason, StreamingModel, ThinkingContent, TurnContent } from "../ai/ports";
import { createPending } from "../pending-action";
import { AppError } from "../error";
import { serviceLog } from "../log";
import { parseToolInput, toolSpec, type Tool, type ToolContext } from "./tools";
import { toolFailureOf } from "./tools/refusal";
import { MAX_TOOL_RESULT_CHARS } from "./tools/types";

/** The spec's bounds on one query (spec 02 Limits): turns and seconds. */
export const MAX_TURNS_LIMIT = 30;
export const QUERY_BUDGET_MS = 300_000;
/**
 * Bytes of JSON (UTF-8) one run's conversation may hold before its tool results stop being handed back: the turns the
 * run was given (history and prompt), the assistant turns it adds, and every tool result of the run. In bytes, not
 * characters, so text of three-byte characters (about one token each) counts about as many tokens as English text
 * (about four bytes a token): some 75,000 to 100,000 tokens. Claude's context window (200,000 tokens) also holds the
 * system prompt, the tools and `max_tokens` (up to 64,000); 30 turns of 24,000-character results would pass it, and
 * Bedrock's "input is too long" is not retried, so the whole run would fail. Past it, a result is replaced by
 * `BUDGET_SPENT` and the model answers with what it has.
 */
export const RUN_CONTEXT_MAX_BYTES = 300_000;
/** The tool result the model gets once the run's context budget (RUN_CONTEXT_MAX_BYTES) is spent. */
export const BUDGET_SPENT = { omitted: true, reason: "omitted: this answer's context budget is spent; answer with what you have" } as const;

/** What the loop reports while it runs; the SSE layer turns these into spec 02 events. */
export type AgentEvent =
  | { event: "token"; data: { content: string } }
  | { event: "thinking"; data: { content: string } }
  | { event: "tool_use"; data: { name: string; status: "running"; input_summary: string } }
  | {
      event: "tool_result";
      data: { name: string; status: "success" | "error" | "queued"; output_summary: string; duration_ms: number; pending_action_id?: string; preview?: unknown };
    }
  | { event: "turn"; data: { turn: number; total_tools: number } }
  /**
   * A model call retried after a transient failure (spec 02 `harness_retry`: a retry between attempts). `kind`
   * tells it from the harness's quality retry (core/harness: `kind: "quality"`, a repaired answer follows).
   */
  | { event: "harness_retry"; data: { kind: "transient"; attempt: number; delay_ms: number; reason: string } };

/** One tool call as it ran (the assistant message's execution_metadata). */
export interface ToolStep {
  turn: number;
  name: string;
  input: Record<string, unknown>;
  status: "success" | "error" | "queued";
  duration_ms: number;
  pending_action_id?: string;
  error?: string;
  /** Characters of JSON the result handed back to the model (after clipping), and whether it was clipped. */
  result_chars?: number;
  truncated?: boolean;
}

/** One run of the loop (DESIGN.md 6.1). */
export interface AgentRunInput {
  model: StreamingModel;
  ctx: ToolContext;
  system: string;
  /** Earlier turns (history) followed by the new user prompt. */
  messages: ConversationTurn[];
  tools: readonly Tool[];
  tier: ModelTier;
  modelId?: string;
  /** 1 to 30 model calls (spec 02 max_turns): at most this many for this run. */
  maxTurns: number;
  /**
   * The query's turn budget when several runs share it (core/harness: the first run, its repairs, a mission's
   * threads): asked before each model call, it answers the turn's number across the query, or undefined when the
   * budget is used up (the run then stops as at `maxTurns`). Unset: this run counts its own turns from 1.
   */
  nextTurn?(): number | undefined;
  thinking?: { budgetTokens: number };
  /** Output token cap per model call (above the thinking budget when thinking is on). */
  maxTokens?: number;
  /** Aborts the run: client gone or budget spent. */
  signal: AbortSignal;
  emit(event: AgentEvent): void;
  /** Each tool result, whole (before it is clipped for the model): the harness's mid-stream checks read what the run may quote. */
  onToolResult?(name: string, content: unknown): void;
  /**
   * Each model call's usage as it ends (also summed in the result): a caller whose run then fails still knows what
   * the calls before the failure cost (the result, with its sum, never comes).
   */
  onUsage?(usage: CallUsage): void;
}

export interface AgentRunResult {
  text: string;
  /** The reasoning as it streamed (deltas). */
  thinking: string[];
  /** Each reasoning block whole, with its signature or redacted data (the message's `thinking_blocks`). */
  thinkingBlocks: ThinkingContent[];
  steps: ToolStep[];
  numTurns: number;
  /** `error` only on the run of a thrown error, as far as it got (`partialRunOf`). */
  stopReason: StopReason | "max_turns" | "aborted" | "error";
  /** success: the model finished; partial: turns ran out, the output was cut, the run was aborted, or it failed. */
  status: "success" | "partial";
  usage: { inputTokens: number; outputTokens: number; costUsd: number; modelId: string | undefined; calls: number };
  pendingActionIds: string[];
  /** The conversation as it stands after the run (the input turns, then every turn the run added), to continue it. */
  messages: ConversationTurn[];
}

/** What a run that failed had done before its error: what the client saw (text, steps, pending actions) and spent. */
const partialRuns = new WeakMap<object, AgentRunResult>();

/**
 * The run a thrown error ended (from `runAgent`), as far as it got: its text, steps, pending action ids, usage and
 * turns, with `status` "partial" and `stopReason` "error". Undefined for an error that did not come out of a run.
 * The error itself is thrown unchanged, so callers still tell its kind (AppError code, SDK class) as before.
 */
export function partialRunOf(err: unknown): AgentRunResult | undefined {
  return typeof err === "object" && err !== null ? partialRuns.get(err) : undefined;
}

const summarize = (value: unknown, max = 160): string => {
  const s = typeof value === "string" ? value : JSON.stringify(value);
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
};

/** What a tool result tells the model: JSON, clipped to keep the context bounded. */
function resultForModel(value: unknown): { value: unknown; chars: number; truncated: boolean } {
  const json = JSON.stringify(value ?? null);
  if (json.length <= MAX_TOOL_RESULT_CHARS) return { value, chars: json.length, truncated: false };
  const clipped = { truncated: true, preview: json.slice(0, MAX_TOOL_RESULT_CHARS) };
  return { value: clipped, chars: JSON.stringify(clipped).length, truncated: true };
}

/**
 * The agent loop (DESIGN.md 6.1), the same for every engine and entry point: call the model with the tools, stream
 * its text, run each tool call it makes, hand the results back, until it answers without calling a tool, `maxTurns`
 * model calls are made (or the query's shared budget, `nextTurn`, is used up), or `signal` aborts. Read tools run at
 * once. A gated tool never runs here: its call becomes a pending action (core/pending-action) and the model gets
 * `{status: "queued", pending_action_id}`; a gated tool that refuses at preview (spec 02 integrations: no team,
 * no repository, not connected, ...) answers `{success: false, error, error_code, ...}` and queues nothing. An
 * unknown tool or invalid input goes back to the model as an error result, so it can correct itself. Tool results
 * are data: nothing in them is executed or widens what the run may do.
 * Tool results handed back are bounded per result (MAX_TOOL_RESULT_CHARS) and per run (RUN_CONTEXT_MAX_BYTES, less
 * what the given turns and the run's own assistant turns take): a result past the run's budget is replaced by `BUDGET_SPENT`, so a long run ends with an
 * answer rather than a request the model refuses as too long. A queued action's result always goes back whole (clipped
 * as any result): the model must know the pending action's id.
 * @returns the answer text, tool steps, usage summed over all model calls, and the pending actions created
 * @throws the model's errors (AppError SERVICE_UNAVAILABLE after retries), unchanged, with what the run did before
 *   them readable by `partialRunOf(err)`; an abort ends the run as partial instead
 */
export async function runAgent(input: AgentRunInput): Promise<AgentRunResult> {
  if (input.maxTurns < 1 || input.maxTurns > MAX_TURNS_LIMIT) throw new AppError("VALIDATION_ERROR", `max_turns must be 1 to ${MAX_TURNS_LIMIT}`);
  const byName = new Map(input.tools.map((t) => [t.name, t]));
  const specs = input.tools.map(toolSpec);
  const messages = [...input.messages];
  const steps: ToolStep[] = [];
  const thinking: string[] = [];
  const thinkingBlocks: ThinkingContent[] = [];
  const pendingActionIds: string[] = [];
  const usage = { inputTokens: 0, outputTokens: 0, costUsd: 0, modelId: undefined as string | undefined, calls: 0 };
  let text = "";
  /** Model calls of this run; `n` below is the turn's number across the query (the same without `nextTurn`). */
  let turn = 0;
  let stopReason: AgentRunResult["stopReason"] = "end_turn";
  /** Bytes the run's conversation may still take (RUN_CONTEXT_MAX_BYTES less the turns it was given, as it goes on). */
  const budget = { left: RUN_CONTEXT_MAX_BYTES - jsonBytes(input.messages) };
  const addUsage = (u: CallUsage) => {
    usage.inputTokens += u.inputTokens;
    usage.outputTokens += u.outputTokens;
    usage.costUsd += u.costUsd;
    usage.modelId = u.modelId;
    usage.calls += u.attempts;
    input.onUsage?.(u);
  };

  try {
    while (turn < input.maxTurns) {
      const n = input.nextTurn ? input.nextTurn() : turn + 1;
      if (n === undefined) {
        stopReason = "max_turns";
        break;
      }
      turn++;
      const calls: { id: string; name: string; input: Record<string, unknown> }[] = [];
      // The assistant turn as the model wrote it, block by block: thinking (signed, sent back unchanged), text, and
      // tool calls in arrival order, so a tool call made while thinking goes back behind its thinking (Anthropic).
      const assistant: TurnContent[] = [];
      let reason: StopReason = "end_turn";
      for await (const ev of input.model.stream({
        tier: input.tier,
        modelId: input.modelId,
        system: input.system,
        messages,
        tools: specs,
        thinking: input.thinking,
        maxTokens: input.maxTokens,
        signal: input.signal,
      })) {
        if (ev.type === "text") {
          // Kept as it arrives: an abort mid-turn still leaves the run's text what the client saw.
          text += ev.delta;
          const last = assistant.at(-1);
          if (last?.type === "text") last.text += ev.delta;
          else assistant.push({ type: "text", text: ev.delta });
          input.emit({ event: "token", data: { content: ev.delta } });
        } else if (ev.type === "thinking") {
          thinking.push(ev.delta);
          input.emit({ event: "thinking", data: { content: ev.delta } });
        } else if (ev.type === "thinking_block") {
          thinkingBlocks.push(ev.block);
          assistant.push(ev.block);
        } else if (ev.type === "tool_call") {
          calls.push({ id: ev.id, name: ev.name, input: ev.input });
          assistant.push({ type: "tool_use", id: ev.id, name: ev.name, input: ev.input });
        } else if (ev.type === "retry") {
          input.emit({ event: "harness_retry", data: { kind: "transient", attempt: ev.attempt, delay_ms: ev.delayMs, reason: ev.reason } });
        } else if (ev.type === "cut") {
          // The call ends in an error next (an abort, a failure after output): its billed use is the run's all the same.
          addUsage(ev.usage);
        } else {
          reason = ev.reason;
          addUsage(ev.usage);
        }
      }
      messages.push({ role: "assistant", content: assistant });
      // The run's own turns fill the window too (a large tool input, such as a document's new content).
      budget.left -= jsonBytes(assistant);
      if (calls.length === 0 || reason !== "tool_use") {
        stopReason = reason;
        input.emit({ event: "turn", data: { turn: n, total_tools: steps.length } });
        break;
      }
      const results: TurnContent[] = [];
      for (const call of calls) {
        input.signal.throwIfAborted();
        results.push(await runTool(input, byName.get(call.name), call, n, steps, pendingActionIds, budget));
      }
      messages.push({ role: "user", content: results });
      input.emit({ event: "turn", data: { turn: n, total_tools: steps.length } });
      if (turn === input.maxTurns) stopReason = "max_turns";
    }
  } catch (err) {
    if (!input.signal.aborted) {
      if (typeof err === "object" && err !== null) {
        partialRuns.set(err, { text, thinking, thinkingBlocks, steps, numTurns: turn, stopReason: "error", status: "partial", usage, pendingActionIds, messages });
      }
      throw err;
    }
    stopReason = "aborted";
  }
  const status = stopReason === "end_turn" || stopReason === "stop_sequence" ? "success" : "partial";
  return { text, thinking, thinkingBlocks, steps, numTurns: turn, stopReason, status, usage, pendingActionIds, messages };
}

async function runTool(
  input: AgentRunInput,
  tool: Tool | undefined,
  call: { id: string; name: string; input: Record<string, unknown> },
  turn: number,
  steps: ToolStep[],
  pendingActionIds: string[],
  budget: { left: number },
): Promise<TurnContent> {
  const started = performance.now();
  input.emit({ event: "tool_use", data: { name: call.name, status: "running", input_summary: summarize(call.input) } });
  const finish = (status: ToolStep["status"], content: unknown, extra: Partial<ToolStep> = {}): TurnContent => {
    const duration_ms = Math.round(performance.now() - started);
    let forModel = resultForModel(content);
    // Past the run's budget the model gets a stub; a queued action's result still goes back (its id is needed).
    if (jsonBytes(forModel.value) > budget.left && status !== "queued") forModel = { value: BUDGET_SPENT, chars: JSON.stringify(BUDGET_SPENT).length, truncated: true };
    budget.left -= jsonBytes(forModel.value);
    steps.push({ turn, name: call.name, input: call.input, status, duration_ms, result_chars: forModel.chars, truncated: forModel.truncated, ...extra });
    input.onToolResult?.(call.name, content);
    input.emit({
      event: "tool_result",
      data: {
        name: call.name,
        status,
        output_summary: summarize(content),
        duration_ms,
        ...(extra.pending_action_id ? { pending_action_id: extra.pending_action_id, preview: (content as { preview?: unknown }).preview } : {}),
      },
    });
    return { type: "tool_result", id: call.id, status: status === "error" ? "error" : "success", content: forModel.value };
  };
  if (!tool) return finish("error", { error: `Unknown tool ${call.name}` }, { error: "unknown tool" });
  const parsed = parseToolInput(tool, call.input);
  if (!parsed.ok) return finish("error", { error: `Invalid input: ${parsed.problems}` }, { error: parsed.problems });
  try {
    if (tool.gated) {
      const pending = await createPending(input.ctx, tool, parsed.data);
      pendingActionIds.push(pending.id);
      return finish("queued", { status: "queued", pending_action_id: pending.id, preview: pending.preview }, { pending_action_id: pending.id });
    }
    return finish("success", await tool.run(input.ctx, parsed.data));
  } catch (err) {
    if (input.signal.aborted) throw err;
    // A gated tool's refusal before queuing carries the spec's failure ({success: false, error, error_code, ...}):
    // the model gets it whole, as it gets a read tool's.
    const failure = toolFailureOf(err);
    if (failure) return finish("error", failure, { error: failure.error });
    // The model sees what went wrong and may try otherwise; internal details stay out of it, and go to the log (a
    // refusal of ours, an AppError, is the tool's answer, not a failure to investigate).
    if (!(err instanceof AppError)) serviceLog().error("agent tool failed", { tool: call.name, workspace_id: input.ctx.workspaceId, error: err instanceof Error ? err : new Error(String(err)) });
    const message = err instanceof AppError ? err.message : "The tool failed";
    return finish("error", { error: message }, { error: message });
  }
}
