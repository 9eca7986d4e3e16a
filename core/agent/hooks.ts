import { serviceLog } from "../log";
import type { AgentType } from "./index";
import { memoryHook } from "../memory/hook";
import { skillsHook } from "../skill/hook";
import { isStreamEvent } from "../harness/events";
import type { Prefetch } from "../db/read";
import type { AppendAlongside } from "../chat";

/**
 * What a run hook sees of a copilot run. Areas that take part in every run (memory, skills) plug in here instead of
 * growing `copilot.ts`: each exports a {@link RunHook} and `RUN_HOOKS` lists them.
 */
export interface RunHookContext {
  userId: string;
  workspaceId: string;
  conversationId: string;
  /** The conversation this one continues (spec 01 Conversation `resumed_from`), or null. */
  resumedFrom: string | null;
  /** Messages the conversation held before this run's prompt (0 on a conversation's first run). */
  priorMessageCount: number;
  prompt: string;
  agentType: AgentType;
  /** Sends a stream event (spec 02 Events; only the spec's names). */
  send(event: string, data: unknown): void;
  /** Aborts on the run's budget or the client's disconnect. */
  signal: AbortSignal;
}

/** What a hook adds to the run before the model is called. */
export interface RunPreparation {
  /** Lines appended to the system prompt (for example an activated skill's instructions, the memory profile). */
  system?: string;
}

/** The run's outcome as the `after` hooks see it, once the assistant message is stored. */
export interface RunOutcome {
  assistantMessageId: string;
  /** The assistant message's created_at (ISO 8601). */
  assistantCreatedAt: string;
  answer: string;
  /** True when the run ended without error (a stopped or failed run teaches memory nothing). */
  succeeded: boolean;
  /** The hooks whose `withAnswer` write was stored in the assistant message's transaction (`answerWrites`), by name. */
  storedWith: readonly string[];
}

/** A participant in every copilot run (chat and the four stream variants). */
export interface RunHook {
  name: string;
  /**
   * Items its `before` reads by key, read ahead in the stream's membership check (core/db/read.ts `Prefetch`): one
   * round trip fewer before the first token.
   */
  prefetch?(ctx: Pick<RunHookContext, "userId" | "workspaceId">): Prefetch[];
  /** Before the model: may send events and extend the system prompt. */
  before?(ctx: RunHookContext): Promise<RunPreparation | void>;
  /**
   * Before the assistant message is stored: a write to commit in the same transaction (`Chat.appendMessage`'s
   * `alongside`), the durable record of work its `after` starts, so a process that dies between the two loses
   * nothing (memory's outbox, core/memory/owed.ts). Nothing (undefined) when the run owes nothing.
   */
  withAnswer?(ctx: RunHookContext, run: { succeeded: boolean }): AppendAlongside | void;
  /** After the assistant message is stored and before `done`. */
  after?(ctx: RunHookContext, outcome: RunOutcome): Promise<void>;
}

/** The copilot's log (CloudWatch in AWS, stdout locally), created on first use: what failed beside a run, not in it. */
export const agentLog = () => serviceLog();

/**
 * The hooks every run goes through, in order. Registered here (not by side effect of an import) so the set is
 * visible in one place.
 */
export const RUN_HOOKS: RunHook[] = [memoryHook, skillsHook];

/** What the hooks read ahead in a stream's membership check (`RunHook.prefetch`), in the hooks' order. */
export function hookPrefetches(ctx: Pick<RunHookContext, "userId" | "workspaceId">, hooks: readonly RunHook[] = RUN_HOOKS): Prefetch[] {
  return hooks.flatMap((h) => h.prefetch?.(ctx) ?? []);
}

/**
 * Run every hook's `before`, all at once (they read different things: memory its facts, skills the installations), and
 * hand on what they add in the hooks' order: their system-prompt lines, and the events they send (each hook's, in the
 * order it sent them, after those of the hooks before it), so the result is what running them one after another gives.
 * A hook that fails is logged and skipped: memory or a skill must not cost the user an answer. An abort (budget,
 * disconnect) is not a hook failure and propagates.
 * @param onHook told how long each hook's `before` took (ms), failed ones included (core/agent/timings.ts)
 * @returns the system-prompt additions, joined with newlines (empty when none)
 */
export async function runBefore(ctx: RunHookContext, hooks: readonly RunHook[] = RUN_HOOKS, onHook?: (name: string, ms: number) => void): Promise<string> {
  const runs = hooks.map(async (hook) => {
    const events: [string, unknown][] = [];
    if (!hook.before) return { events, system: undefined };
    const started = performance.now();
    try {
      // A hook's sends are checked where it makes them (a name outside spec 02 fails the hook, as sending it would), and
      // kept for their turn.
      const send = (event: string, data: unknown) => {
        if (!isStreamEvent(event)) throw new Error(`"${event}" is not a stream event of spec 02`);
        events.push([event, data]);
      };
      const prep = await hook.before({ ...ctx, send });
      return { events, system: prep?.system };
    } catch (err) {
      ctx.signal.throwIfAborted();
      agentLog().warn("run hook failed before the model", { hook: hook.name, workspace_id: ctx.workspaceId, error: err as Error });
      return { events, system: undefined };
    } finally {
      onHook?.(hook.name, performance.now() - started);
    }
  });
  const lines: string[] = [];
  for (const { events, system } of await Promise.all(runs)) {
    for (const [event, data] of events) ctx.send(event, data);
    if (system) lines.push(system);
  }
  return lines.join("\n");
}

/**
 * What the hooks write with the assistant message (`RunHook.withAnswer`), in the hooks' order, and which hooks they
 * are (`RunOutcome.storedWith` once the message is stored). A hook that fails is logged and skipped: its record must
 * not cost the user the answer.
 */
export function answerWrites(ctx: RunHookContext, run: { succeeded: boolean }, hooks: readonly RunHook[] = RUN_HOOKS): { alongside: AppendAlongside[]; hooks: string[] } {
  const out = { alongside: [] as AppendAlongside[], hooks: [] as string[] };
  for (const hook of hooks) {
    if (!hook.withAnswer) continue;
    try {
      const write = hook.withAnswer(ctx, run);
      if (!write) continue;
      out.alongside.push(write);
      out.hooks.push(hook.name);
    } catch (err) {
      agentLog().warn("run hook failed before the answer was stored", { hook: hook.name, workspace_id: ctx.workspaceId, error: err as Error });
    }
  }
  return out;
}

/** Run every hook's `after` in order; a failing hook is logged and the others still run. */
export async function runAfter(ctx: RunHookContext, outcome: RunOutcome, hooks: readonly RunHook[] = RUN_HOOKS): Promise<void> {
  for (const hook of hooks) {
    if (!hook.after) continue;
    try {
      await hook.after(ctx, outcome);
    } catch (err) {
      agentLog().warn("run hook failed after the answer", { hook: hook.name, workspace_id: ctx.workspaceId, error: err as Error });
    }
  }
}
