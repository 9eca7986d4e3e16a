/**
 * Where a copilot stream's time goes before its first token (issue #24 point 6), for observers: each stream's marks
 * (`performance.now()` readings) are published on the `r2d:copilot` diagnostics channel when the stream ends.
 * bench/copilot.ts subscribes and breaks the first token's time down by phase. Without a subscriber nothing is
 * recorded (a clock made then stays off for its stream), so production pays one boolean test per mark.
 */
import diagnostics from "node:diagnostics_channel";

/**
 * The phases of a stream, in the order they end (each mark is the first time its phase ended):
 * - `prepare`: the stream handler entered `prepare` (authentication and body validation are behind it);
 * - `member`, `slot`, `reserved`, `opened`: membership checked; a stream slot taken; the credits reserved; the
 *   conversation opened (the SSE response starts right after);
 * - `execute`: the run started writing to the SSE body;
 * - `history`: the conversation's history read (the prompt is stored beside the run, before the answer);
 * - `preflight`: the harness's pre-flight done (complexity, workspace profile);
 * - `system`: the system prompt's reads done; `hooks`: every run hook's `before` done (memory, skills);
 * - `loop`: the agent loop called; `tool_use` / `tool_result`: its first tool call started / ended;
 * - `first_token`: the first answer text handed to the SSE writer (which sends it within its 50 ms batch);
 * - `answered`: the loop (and the harness's judgement) returned; `done`: the `done` event was sent.
 */
export type StreamMark =
  | "prepare"
  | "member"
  | "slot"
  | "reserved"
  | "opened"
  | "execute"
  | "history"
  | "preflight"
  | "system"
  | "hooks"
  | "loop"
  | "tool_use"
  | "tool_result"
  | "first_token"
  | "answered"
  | "done";

/** One stream's timings as published: the marks reached (ms, `performance.now()`), and each run hook's `before` (ms). */
export interface StreamTiming {
  conversationId: string | null;
  marks: Partial<Record<StreamMark, number>>;
  hooks: Record<string, number>;
}

/** The channel bench/copilot.ts listens on. */
export const copilotTimings = diagnostics.channel("r2d:copilot");

/** One stream's marks; records only when the channel had a subscriber as the stream started. */
export class StreamClock {
  /** Whether this stream records (someone listened when it started). */
  readonly on = copilotTimings.hasSubscribers;
  private readonly marks: Partial<Record<StreamMark, number>> = {};
  private readonly hooks: Record<string, number> = {};

  /** Mark the end of a phase (the first time only: a repaired answer's second token is not the first). */
  mark(m: StreamMark): void {
    if (this.on) this.marks[m] ??= performance.now();
  }

  /** How long one run hook's `before` took (ms). */
  hook(name: string, ms: number): void {
    if (this.on) this.hooks[name] = ms;
  }

  /** Publish the stream's timings (once, when it ends). */
  publish(conversationId: string | null): void {
    if (this.on) copilotTimings.publish({ conversationId, marks: this.marks, hooks: this.hooks } satisfies StreamTiming);
  }
}
