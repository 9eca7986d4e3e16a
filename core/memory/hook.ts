/**
 * Memory's part in every copilot run (core/agent/hooks.ts lists it in RUN_HOOKS; DESIGN.md 6.6):
 * - before the model: on the first message of a conversation created with `resumed_from`, the `briefing` event
 *   (core/memory/briefing.ts); and the user's memory in the system prompt when they have any. The memory head it
 *   checks is read ahead, in the stream's membership check (`prefetch`).
 * - with the answer: the record that the exchange is owed to memory, in the answer's own transaction
 *   (core/memory/owed.ts), so a crash before the send below loses nothing: the sweeper sends it later.
 * - after the answer: the exchange goes on the memory queue and the run goes on. Extraction (a model call on the
 *   model engines) and reconciliation happen in the memory consumer, so the user never waits for them.
 *
 * The context types below are the parts of the agent's RunHookContext / RunOutcome this hook reads, declared here so
 * memory does not import the agent layer that imports it (no import circle, DESIGN.md 4 convention 11); the agent's
 * types are assignable to them.
 */
import { briefingFor } from "./briefing";
import { enqueueExchange } from "./learn";
import { owedWrite, type OwedWrite } from "./owed";
import { crashPoint } from "../crash-point";
import { promptProfile } from "./index";
import { memoryAvailable } from "./settings";
import { prefetchMemoryHead } from "./store";
import type { Prefetch } from "../db/read";

/** What the memory hook reads of a run (a subset of core/agent/hooks.ts RunHookContext). */
export interface MemoryRunContext {
  userId: string;
  workspaceId: string;
  conversationId: string;
  resumedFrom: string | null;
  priorMessageCount: number;
  prompt: string;
  send(event: string, data: unknown): void;
  signal: AbortSignal;
}

/** What the memory hook reads of a run's outcome (a subset of core/agent/hooks.ts RunOutcome). */
export interface MemoryRunOutcome {
  assistantMessageId: string;
  /** The assistant message's created_at (ISO 8601), when the run knows it: the consumer then looks nothing up by id. */
  assistantCreatedAt?: string;
  succeeded: boolean;
  /** The hooks whose `withAnswer` write was stored with the answer, by name (this one's: its owed record). */
  storedWith?: readonly string[];
}

/** The memory run hook (its shape is core/agent/hooks.ts RunHook). */
export const memoryHook = {
  name: "memory",

  /** The user's memory head, which `before` reads (when memory is on), read ahead in the stream's membership check. */
  prefetch(ctx: Pick<MemoryRunContext, "userId" | "workspaceId">): Prefetch[] {
    return memoryAvailable() ? [prefetchMemoryHead(ctx.workspaceId, ctx.userId)] : [];
  },

  /**
   * Send `briefing` when the run opens a resumed conversation, and return the user's memory as system-prompt lines
   * (with the briefing's summary when there is one).
   * @returns `{system}` or nothing when there is nothing to add (memory off, no facts, not resumed)
   */
  async before(ctx: MemoryRunContext): Promise<{ system?: string } | void> {
    const lines: string[] = [];
    if (ctx.resumedFrom && ctx.priorMessageCount === 0) {
      const briefing = await briefingFor({ userId: ctx.userId, workspaceId: ctx.workspaceId, conversationId: ctx.conversationId, resumedFrom: ctx.resumedFrom, prompt: ctx.prompt });
      ctx.signal.throwIfAborted();
      ctx.send("briefing", briefing);
      lines.push(`This conversation resumes an earlier one. ${briefing.summary}`);
    }
    const profile = await promptProfile(ctx.userId, ctx.workspaceId, ctx.prompt);
    if (profile) lines.push(profile);
    return lines.length ? { system: lines.join("\n") } : undefined;
  },

  /**
   * The record that the answer's exchange is owed to memory, written with the answer (core/memory/owed.ts), under the
   * same condition as `after`'s send: a run that failed or stopped, or memory off, owes nothing.
   * @returns the write for the answer's transaction, or nothing
   */
  withAnswer(ctx: Pick<MemoryRunContext, "userId" | "workspaceId" | "conversationId">, run: { succeeded: boolean }): OwedWrite | undefined {
    if (!run.succeeded || !memoryAvailable()) return undefined;
    return owedWrite({ workspaceId: ctx.workspaceId, userId: ctx.userId, conversationId: ctx.conversationId });
  },

  /**
   * Put the exchange on the memory queue (a run that failed or stopped teaches nothing). Only the send is awaited:
   * the consumer reads the messages, extracts and reconciles later. The job says its owed record was stored with the
   * answer (`owed`) when the outcome says the run stored this hook's `withAnswer` write.
   */
  async after(ctx: MemoryRunContext, outcome: MemoryRunOutcome): Promise<void> {
    if (!outcome.succeeded || !memoryAvailable()) return;
    // A crash test kills the process here: the answer is stored, its exchange not sent.
    crashPoint("memory-before-send");
    await enqueueExchange({
      type: "exchange",
      workspace_id: ctx.workspaceId,
      user_id: ctx.userId,
      conversation_id: ctx.conversationId,
      assistant_message_id: outcome.assistantMessageId,
      ...(outcome.assistantCreatedAt ? { answered_at: outcome.assistantCreatedAt } : {}),
      ...(outcome.storedWith?.includes(memoryHook.name) ? { owed: true as const } : {}),
    });
  },
};
