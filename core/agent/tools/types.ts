import type * as z from "zod";
import type { WriteItem } from "../../db/agent-write";

/**
 * Largest tool result the agent loop hands back to the model, in characters of JSON (core/agent/loop.ts): past it the
 * model gets a clipped preview of the JSON instead. Here, beside the tool types, so a tool that cuts its own result to
 * fit (filestore_read) and the loop share one figure without importing each other.
 */
export const MAX_TOOL_RESULT_CHARS = 24_000;

/**
 * What a tool call runs with (DESIGN.md 6.1): resolved once per request by the agent loop. `userId` is the member
 * the agent acts for; the workspace membership was checked before the loop started, and the request scope
 * (core/context.ts) keeps core operations from checking it again.
 */
export interface ToolContext {
  userId: string;
  workspaceId: string;
  /** Conversation the run belongs to, when it came from chat. */
  conversationId?: string;
  /** Mission the run belongs to (batches of pending actions are `{missionId}:{toolName}`). */
  missionId: string | null;
  sessionId: string | null;
  /** Research source ids the caller attached (spec 02 attachment_ids): the only sources whose text the agent may read without searching. */
  attachmentIds: string[];
  signal?: AbortSignal;
}

/**
 * What an approved gated tool executes with (DESIGN.md 6.2): the member who approved it (membership is re-checked:
 * it may have been lost since), the workspace, and the pending action's id, from which every id the write creates
 * is derived (`idFor`) so a replay after a crash finds its own write instead of making a second one.
 */
export interface ExecutionContext {
  userId: string;
  workspaceId: string;
  actionId: string;
  /**
   * When the action was approved (ISO 8601): no attempt of its write can be older, so a search for a replay's earlier
   * write (an issue found by its marker) starts here, however late the replay comes. Absent outside the executor.
   */
  approvedAt?: string;
  /**
   * The action's flip to executed with `result` (what `execute` will return), as a write for the tool's own
   * transaction (DESIGN.md 6.2: an internal write and the flip are one transaction). Given by the executor; a tool
   * whose writes are internal hands it to its core operation (`AgentWrite.settle`), so a crash leaves either nothing
   * written or the row executed. Absent when a tool runs outside the executor.
   */
  settle?: (result: Record<string, unknown>) => WriteItem;
}

/** A render-ready preview of a gated write (spec 01 Pending action `preview`). */
export interface Preview {
  /** One line: what will happen ("Create insight 'Sign-in loops on Android'"). */
  summary: string;
  /** The kind of thing written: insight, recommendation, document, block, synthesis. */
  target: string;
  /** create, update, status_change, run. */
  operation: "create" | "update" | "status_change" | "run";
  /** For updates: the fields that change, each with its value before and after. */
  changes?: { field: string; before: unknown; after: unknown }[];
  /** For creates and runs: the fields written or the run's parameters. */
  fields?: Record<string, unknown>;
}

interface ToolBase<I> {
  /** snake_case, stable: stored on pending actions and agent runs. */
  name: string;
  /** What the model reads to choose the tool; the local engine matches prompts against it too. */
  description: string;
  /** The input; its JSON schema is what the model is offered. */
  input: z.ZodType<I>;
  /** Cue words the local engine matches in a prompt to choose this tool (core/agent/local-engine.ts). */
  cues: readonly string[];
}

/** A read tool: runs at once inside the loop. */
export interface ReadTool<I = any> extends ToolBase<I> {
  gated: false;
  run(ctx: ToolContext, input: I): Promise<unknown>;
}

/**
 * A gated (write) tool: never runs inside the loop. The loop stores a pending action with `preview(...)` and hands
 * the model `{status: "queued", pending_action_id}`; `execute` runs once the action is approved.
 * `execute` must be exactly-once per `ctx.actionId`: its writes commit with `ctx.settle` in one transaction, every
 * item it writes carries the action id in that same write, and ids it creates come from `idFor(actionId, ...)`.
 */
export interface GatedTool<I = any> extends ToolBase<I> {
  gated: true;
  preview(ctx: ToolContext, input: I): Promise<Preview>;
  execute(ctx: ExecutionContext, input: I): Promise<Record<string, unknown>>;
}

export type Tool = ReadTool | GatedTool;
