import { AppError } from "../../../core/error";
import { DEFAULT_CATALOGUE } from "../../../core/ai/catalogue";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createParser, type EventSourceMessage } from "eventsource-parser";
import { SseWriter, HEARTBEAT_MS, TOKEN_BATCH_MS } from "../../../functions/lib/sse";
import { creditsFor } from "../../../core/billing/credits";
import { modelChoice } from "../../../core/agent/copilot";

/** Everything the writer put on its body, parsed by a real SSE parser. */
function collect(writer: SseWriter) {
  const events: EventSourceMessage[] = [];
  let raw = "";
  const parser = createParser({ onEvent: (e) => events.push(e) });
  writer.body.on("data", (chunk: Buffer) => {
    raw += chunk.toString();
    parser.feed(chunk.toString());
  });
  return { events, raw: () => raw };
}

describe("SseWriter", () => {
  afterEach(() => vi.useRealTimers());

  it("sends the first token at once, then batches tokens into one event per 50 ms, keeping order with other events", async () => {
    vi.useFakeTimers();
    const w = new SseWriter();
    const { events } = collect(w);
    const tokens = () => events.filter((e) => e.event === "token").map((e) => JSON.parse(e.data).content);
    // The answer's first text goes out at once: nothing was sent in the last 50 ms.
    w.token("Hello ");
    await vi.advanceTimersByTimeAsync(0);
    expect(tokens()).toEqual(["Hello "]);
    // Text within 50 ms of that event waits for the rest of the window, as one event.
    await vi.advanceTimersByTimeAsync(10);
    w.token("there ");
    w.token("you ");
    await vi.advanceTimersByTimeAsync(TOKEN_BATCH_MS - 10 - 1);
    expect(tokens()).toEqual(["Hello "]);
    await vi.advanceTimersByTimeAsync(1);
    expect(tokens()).toEqual(["Hello ", "there you "]);
    // 50 ms after the last token event, text goes out at once again.
    await vi.advanceTimersByTimeAsync(TOKEN_BATCH_MS);
    w.token("again ");
    await vi.advanceTimersByTimeAsync(0);
    expect(tokens()).toEqual(["Hello ", "there you ", "again "]);
    // Another event sends what is buffered before itself, so the order holds.
    w.token("and ");
    w.send("turn", { turn: 1, total_tools: 0 });
    w.token("more");
    w.end();
    await vi.runAllTimersAsync();
    expect(events.map((e) => [e.event, JSON.parse(e.data)])).toEqual([
      ["token", { content: "Hello " }],
      ["token", { content: "there you " }],
      ["token", { content: "again " }],
      ["token", { content: "and " }],
      ["turn", { turn: 1, total_tools: 0 }],
      ["token", { content: "more" }],
    ]);
    // Text after the end is dropped, and leaves no timer behind.
    w.token("late");
    expect(vi.getTimerCount()).toBe(0);
    expect(tokens().at(-1)).toBe("more");
  });

  it("sends a heartbeat comment every 15 s while open", async () => {
    vi.useFakeTimers();
    const w = new SseWriter();
    const { raw } = collect(w);
    await vi.advanceTimersByTimeAsync(HEARTBEAT_MS * 2);
    expect(raw().match(/^: heartbeat$/gm)).toHaveLength(2);
    w.end();
  });

  it("aborts its signal when the client goes away, not when it ends normally", () => {
    const gone = new SseWriter();
    gone.body.destroy();
    return new Promise<void>((resolve) => {
      setImmediate(() => {
        expect(gone.signal.aborted).toBe(true);
        const ended = new SseWriter();
        ended.body.resume();
        ended.end();
        ended.body.on("close", () => {
          expect(ended.signal.aborted).toBe(false);
          resolve();
        });
      });
    });
  });
});

describe("creditsFor (spec 02 Credits)", () => {
  it("rounds cost / 0.08 up to 0.5 and applies each outcome's minimum", () => {
    expect(creditsFor(0, "success")).toBe(0.5);
    expect(creditsFor(0.081, "success")).toBe(1.5);
    expect(creditsFor(0.16, "success")).toBe(2);
    expect(creditsFor(0.01, "failed")).toBe(0.5);
    expect(creditsFor(0.001, "failed")).toBe(0.5);
    expect(creditsFor(0, "failed")).toBe(0);
    expect(creditsFor(0, "partial")).toBe(0.25);
    expect(creditsFor(0, "cancelled")).toBe(0.25);
    expect(creditsFor(0, "cancelled", { chatMessage: true })).toBe(0.25);
    expect(creditsFor(0.4, "partial")).toBe(5);
  });
});

describe("modelChoice", () => {
  const [small, mid, large] = (["small", "mid", "large"] as const).map((t) => DEFAULT_CATALOGUE.find((m) => m.tier === t)!);

  it("maps effort and reasoning_mode to tiers, the higher winning, with thinking for max and deep within the model's limits", () => {
    expect(modelChoice({})).toEqual({ tier: "mid", maxTokens: 4096 });
    expect(modelChoice({ effort: "low" })).toEqual({ tier: "small", effort: "low", maxTokens: 4096 });
    expect(modelChoice({ effort: "low", reasoning_mode: "thorough" })).toEqual({ tier: "mid", effort: "low", maxTokens: 4096 });
    expect(modelChoice({ reasoning_mode: "deep" })).toEqual({ tier: "large", thinking: { budgetTokens: 8000 }, maxTokens: 8000 + 4096 });
    expect(modelChoice({ effort: "max", model: large!.id })).toEqual({ tier: "large", effort: "max", modelId: large!.id, thinking: { budgetTokens: 16000 }, maxTokens: 16000 + 4096 });
  });

  it("takes the tier of a named catalogue model, and refuses other ids naming the allowed ones", () => {
    expect(modelChoice({ effort: "max", model: mid!.id })).toMatchObject({ tier: "mid", modelId: mid!.id, thinking: { budgetTokens: 16000 } });
    expect(modelChoice({ effort: "high", model: small!.id })).toEqual({ tier: "small", effort: "high", modelId: small!.id, maxTokens: 4096 });
    let err: unknown;
    try {
      modelChoice({ model: "anthropic.claude-instant-v1" });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).status).toBe(422);
    expect((err as AppError).extra.allowed_models).toEqual(DEFAULT_CATALOGUE.map((m) => m.id));
  });

  it("refuses thinking on a named model without it, and moves a tier whose default cannot think to the nearest that can", () => {
    expect(() => modelChoice({ effort: "max", model: small!.id })).toThrow(/does not support extended thinking/);
    const saved = process.env.MODEL_CATALOGUE;
    process.env.MODEL_CATALOGUE = JSON.stringify([
      { ...small, thinking: false },
      { ...mid, thinking: true },
      { ...large, thinking: false },
    ]);
    try {
      expect(modelChoice({ reasoning_mode: "deep" })).toEqual({ tier: "mid", thinking: { budgetTokens: 8000 }, maxTokens: 8000 + 4096 });
      process.env.MODEL_CATALOGUE = JSON.stringify(DEFAULT_CATALOGUE.map((m) => ({ ...m, thinking: false })));
      expect(() => modelChoice({ effort: "max" })).toThrow(/No model of the catalogue supports extended thinking/);
    } finally {
      if (saved === undefined) delete process.env.MODEL_CATALOGUE;
      else process.env.MODEL_CATALOGUE = saved;
    }
  });
});
