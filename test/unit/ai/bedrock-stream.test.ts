/**
 * BedrockStreamingModel against recorded-shaped ConverseStream output fed at the HTTP layer (DESIGN.md 6.1), through
 * the fake Bedrock of test/support/bedrock-stream.ts (the SDK's own decoder runs). Fixtures: test/fixtures/bedrock-stream.
 */
import { describe, expect, it } from "vitest";
import { modelIdsFromEnv } from "../../../core/ai/bedrock";
import { BedrockStreamingModel } from "../../../core/ai/bedrock-stream";
import { MODEL_RATES, type ModelStreamEvent, type StreamRequest } from "../../../core/ai/ports";
import { AppError } from "../../../core/error";
import { recorded, setup, stream, type Frame } from "../../support/bedrock-stream";

const request = (over: Partial<StreamRequest> = {}): StreamRequest => ({
  tier: "small",
  system: "You are the research copilot.",
  messages: [{ role: "user", content: [{ type: "text", text: "What do users complain about most?" }] }],
  tools: [],
  ...over,
});

async function collect(iterable: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const ev of iterable) out.push(ev);
  return out;
}

/** Collects until the stream throws; returns what was yielded and the error. */
async function collectUntilError(iterable: AsyncIterable<ModelStreamEvent>) {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const ev of iterable) events.push(ev);
  } catch (error) {
    return { events, error };
  }
  throw new Error(`the stream did not fail; it yielded ${JSON.stringify(events)}`);
}

const texts = (events: ModelStreamEvent[]) => events.flatMap((e) => (e.type === "text" ? [e.delta] : []));
const ofType = <T extends ModelStreamEvent["type"]>(events: ModelStreamEvent[], type: T) =>
  events.filter((e): e is Extract<ModelStreamEvent, { type: T }> => e.type === type);
const delta = (frames: Frame[], type: string) =>
  frames.filter((f) => f.type === type).map((f) => (f.body as any).delta);

const TOOLS = [
  {
    name: "search_insights",
    description: "Search the workspace's insights.",
    inputSchema: { type: "object", properties: { query: { type: "string" }, limit: { type: "integer" } }, required: ["query"] },
  },
  { name: "list_recommendations", description: "List recommendations.", inputSchema: { type: "object", properties: {} } },
];

// ---------------------------------------------------------------------------------------------------------------

describe("BedrockStreamingModel: decoding the stream", () => {
  it("yields text deltas in order, then one stop with the stop reason, usage and cost", async () => {
    const frames = stream("text-only.json");
    const { model, http } = setup([{ frames }]);

    const events = await collect(model.stream(request({ tier: "small" })));

    const expected = delta(frames, "contentBlockDelta").map((d) => d.text);
    expect(expected).toHaveLength(5);
    expect(texts(events)).toEqual(expected);
    expect(events.map((e) => e.type)).toEqual(["text", "text", "text", "text", "text", "stop"]);
    const stop = events.at(-1)!;
    if (stop.type !== "stop") throw new Error("no stop");
    expect(stop.reason).toBe("end_turn");
    expect(stop.usage).toMatchObject({
      modelId: modelIdsFromEnv().small,
      tier: "small",
      inputTokens: 1284,
      outputTokens: 43,
      attempts: 1,
    });
    // small: 0.80 USD per 1M input tokens, 4.00 per 1M output tokens (spec 02 Credits: model rates)
    expect(MODEL_RATES.small).toEqual({ input: 0.8, output: 4.0 });
    expect(stop.usage.costUsd).toBeCloseTo((1284 * 0.8 + 43 * 4.0) / 1e6, 12);
    expect(stop.usage.latencyMs).toBeGreaterThanOrEqual(0);
    expect(http.requests[0].path).toBe(`/model/${modelIdsFromEnv().small}/converse-stream`);
  });

  it("joins a tool call's input fragments and parses them once, at the block's stop", async () => {
    const frames = stream("text-then-tool.json");
    const fragments = delta(frames, "contentBlockDelta").flatMap((d) => (d.toolUse ? [d.toolUse.input as string] : []));
    // The recording splits the JSON mid-key and mid-value: no fragment parses alone.
    expect(fragments.filter((f) => f !== "").length).toBeGreaterThanOrEqual(3);
    for (const f of fragments.filter((f) => f !== "")) expect(() => JSON.parse(f)).toThrow();
    const { model } = setup([{ frames }]);

    const events = await collect(model.stream(request({ tier: "mid", tools: TOOLS })));

    expect(events.map((e) => e.type)).toEqual(["text", "text", "text", "tool_call", "stop"]);
    expect(texts(events).join("")).toBe("I'll look for insights about sign-out problems in this workspace.");
    expect(ofType(events, "tool_call")).toEqual([
      {
        type: "tool_call",
        id: "tooluse_Qm3vX0aL7rTn2PbK9sWc1e",
        name: "search_insights",
        input: { query: "signed out repeatedly", limit: 10 },
      },
    ]);
    const stop = ofType(events, "stop")[0];
    expect(stop.reason).toBe("tool_use");
    expect(stop.usage.costUsd).toBeCloseTo((2471 * MODEL_RATES.mid.input + 96 * MODEL_RATES.mid.output) / 1e6, 12);
    expect(stop.usage.costUsd).toBeCloseTo(0.008853, 9); // 2471 * 3.00 + 96 * 15.00 = 8853 micro-USD
  });

  it("keeps two tool calls of one message apart, in block order", async () => {
    const { model } = setup([{ frames: stream("two-tools.json") }]);

    const events = await collect(model.stream(request({ tier: "large", tools: TOOLS })));

    expect(ofType(events, "tool_call")).toEqual([
      { type: "tool_call", id: "tooluse_8KfRz2LwQ0yNcT5vHbJm4d", name: "search_insights", input: { query: "onboarding friction" } },
      {
        type: "tool_call",
        id: "tooluse_Hs1pYc7XeV3uGq9aLr0kWn",
        name: "list_recommendations",
        input: { status: "proposed", limit: 5 },
      },
    ]);
    expect(events.at(-1)).toMatchObject({ type: "stop", reason: "tool_use", usage: { inputTokens: 2980, outputTokens: 152 } });
    const stop = ofType(events, "stop")[0];
    expect(stop.usage.costUsd).toBeCloseTo((2980 * 15 + 152 * 75) / 1e6, 12);
  });

  it("yields reasoning as thinking deltas, then the block whole with its signature at the block's stop, then the text", async () => {
    const { model } = setup([{ frames: stream("thinking-then-text.json") }]);

    const events = await collect(model.stream(request({ tier: "mid", thinking: { budgetTokens: 2048 } })));

    expect(events.map((e) => e.type)).toEqual(["thinking", "thinking", "thinking", "thinking_block", "text", "text", "stop"]);
    const reasoning = "The user asks which problem to fix first. Slow launches affect 41 respondents; sign-outs affect 12, so launch time comes first.";
    expect(ofType(events, "thinking").map((e) => e.delta).join("")).toBe(reasoning);
    expect(ofType(events, "thinking_block")[0]!.block).toEqual({ type: "thinking", text: reasoning, signature: expect.stringMatching(/^EqoBCkgI/) });
    expect(texts(events).join("")).toBe("Fix launch times first: they hurt three times as many users as sign-outs.");
    // The signature travels only in the block (for the next request), never as displayable thinking.
    expect(JSON.stringify(ofType(events, "thinking"))).not.toContain("EqoBCkgI");
  });

  it("gives a tool without input fragments an empty object", async () => {
    const { model } = setup([
      {
        frames: [
          { type: "messageStart", body: { role: "assistant" } },
          { type: "contentBlockStart", body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: "tooluse_a", name: "list_recommendations" } } } },
          { type: "contentBlockStop", body: { contentBlockIndex: 0 } },
          { type: "messageStop", body: { stopReason: "tool_use" } },
          { type: "metadata", body: { usage: { inputTokens: 10, outputTokens: 3, totalTokens: 13 }, metrics: { latencyMs: 5 } } },
        ],
      },
    ]);

    const events = await collect(model.stream(request({ tools: TOOLS })));

    expect(ofType(events, "tool_call")).toEqual([{ type: "tool_call", id: "tooluse_a", name: "list_recommendations", input: {} }]);
  });

  it("fails with INTERNAL, naming the tool, when the joined tool input is not JSON", async () => {
    const { model, http } = setup([
      {
        frames: [
          { type: "messageStart", body: { role: "assistant" } },
          { type: "contentBlockStart", body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: "tooluse_b", name: "search_insights" } } } },
          { type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { toolUse: { input: "{\"query\": \"sign" } } } },
          { type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { toolUse: { input: "-out" } } } },
          { type: "contentBlockStop", body: { contentBlockIndex: 0 } },
          { type: "messageStop", body: { stopReason: "tool_use" } },
        ],
      },
    ]);

    const { events, error } = await collectUntilError(model.stream(request({ tools: TOOLS })));

    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("INTERNAL");
    expect((error as AppError).message).toMatch(/not valid JSON for search_insights \(tooluse_b\)/);
    // Nothing usable came out, but the model generated it: the call is billed (its estimate, before the error).
    expect(events.map((e) => e.type)).toEqual(["cut"]);
    expect(events[0]).toMatchObject({ usage: { outputTokens: Math.ceil('{"query": "sign-out'.length / 4) } });
    expect(http.requests).toHaveLength(1); // malformed output is not a transient error
  });

  it("drops a tool call the output cap cut off (max_tokens) and stops as cut, keeping the text before it", async () => {
    const { model } = setup([
      {
        frames: [
          { type: "messageStart", body: { role: "assistant" } },
          { type: "contentBlockStart", body: { contentBlockIndex: 0, start: {} } },
          { type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { text: "Here is the rewritten PRD." } } },
          { type: "contentBlockStop", body: { contentBlockIndex: 0 } },
          { type: "contentBlockStart", body: { contentBlockIndex: 1, start: { toolUse: { toolUseId: "tooluse_cut", name: "update_document" } } } },
          { type: "contentBlockDelta", body: { contentBlockIndex: 1, delta: { toolUse: { input: "{\"document_id\":\"d1\",\"content\":\"# PRD\\n\\n## Problem\\nUsers are signed out" } } } },
          { type: "contentBlockStop", body: { contentBlockIndex: 1 } },
          { type: "messageStop", body: { stopReason: "max_tokens" } },
          { type: "metadata", body: { usage: { inputTokens: 5000, outputTokens: 4096, totalTokens: 9096 }, metrics: { latencyMs: 30000 } } },
        ],
      },
    ]);

    const events = await collect(model.stream(request({ tools: TOOLS })));

    expect(texts(events)).toEqual(["Here is the rewritten PRD."]);
    expect(ofType(events, "tool_call")).toEqual([]);
    expect(ofType(events, "stop")[0]).toMatchObject({ reason: "max_tokens", usage: { inputTokens: 5000, outputTokens: 4096 } });
  });
});

describe("BedrockStreamingModel: the request", () => {
  it("maps turns, tool uses, tool results, system and tools to Converse", async () => {
    const { model, http } = setup([{ frames: stream("text-only.json") }]);

    await collect(
      model.stream({
        tier: "mid",
        modelId: "eu.anthropic.claude-sonnet-4-20250514-v1:0",
        system: "You are the research copilot.",
        tools: TOOLS,
        temperature: 0.2,
        messages: [
          { role: "user", content: [{ type: "text", text: "Find sign-out complaints." }] },
          {
            role: "assistant",
            content: [
              { type: "text", text: "Searching." },
              { type: "tool_use", id: "tooluse_1", name: "search_insights", input: { query: "sign-out" } },
              { type: "tool_use", id: "tooluse_2", name: "list_recommendations", input: {} },
            ],
          },
          {
            role: "user",
            content: [
              { type: "tool_result", id: "tooluse_1", status: "success", content: { insights: [{ id: "ins_1", title: "Sign-outs" }] } },
              { type: "tool_result", id: "tooluse_2", status: "error", content: "Not allowed for viewers" },
            ],
          },
        ],
      }),
    );

    expect(http.requests).toHaveLength(1);
    const { path, body } = http.requests[0];
    expect(path).toBe("/model/eu.anthropic.claude-sonnet-4-20250514-v1:0/converse-stream");
    expect(body.system).toEqual([{ text: "You are the research copilot." }]);
    expect(body.messages).toEqual([
      { role: "user", content: [{ text: "Find sign-out complaints." }] },
      {
        role: "assistant",
        content: [
          { text: "Searching." },
          { toolUse: { toolUseId: "tooluse_1", name: "search_insights", input: { query: "sign-out" } } },
          { toolUse: { toolUseId: "tooluse_2", name: "list_recommendations", input: {} } },
        ],
      },
      {
        role: "user",
        content: [
          {
            toolResult: {
              toolUseId: "tooluse_1",
              status: "success",
              content: [{ json: { insights: [{ id: "ins_1", title: "Sign-outs" }] } }],
            },
          },
          { toolResult: { toolUseId: "tooluse_2", status: "error", content: [{ text: "Not allowed for viewers" }] } },
        ],
      },
    ]);
    expect(body.toolConfig).toEqual({
      tools: TOOLS.map((t) => ({ toolSpec: { name: t.name, description: t.description, inputSchema: { json: t.inputSchema } } })),
    });
    expect(body.inferenceConfig).toEqual({ maxTokens: 4096, temperature: 0.2 });
    expect(body.additionalModelRequestFields).toBeUndefined();
  });

  it("sends no toolConfig without tools, and the tier's model id without an override", async () => {
    const { http, client } = setup([{ frames: stream("text-only.json") }]);
    const model = new BedrockStreamingModel({ client, modelIds: { large: "us.anthropic.claude-opus-4-1-20250805-v1:0" } });

    await collect(model.stream(request({ tier: "large", maxTokens: 900 })));

    const { path, body } = http.requests[0];
    expect(path).toBe("/model/us.anthropic.claude-opus-4-1-20250805-v1:0/converse-stream");
    expect(body).not.toHaveProperty("toolConfig");
    expect(body.inferenceConfig).toEqual({ maxTokens: 900 });
  });

  it("turns thinking on with Anthropic's budget field and sends no temperature", async () => {
    const { model, http } = setup([{ frames: stream("thinking-then-text.json") }]);

    await collect(model.stream(request({ tier: "mid", temperature: 0.7, maxTokens: 8000, thinking: { budgetTokens: 4096 } })));

    const { body } = http.requests[0];
    expect(body.additionalModelRequestFields).toEqual({ thinking: { type: "enabled", budget_tokens: 4096 } });
    // Above the budget by 4,096 tokens of answer (Anthropic refuses max_tokens <= budget_tokens).
    expect(body.inferenceConfig).toEqual({ maxTokens: 4096 + 4096 });
    expect(body.inferenceConfig).not.toHaveProperty("temperature");
  });
});

describe("BedrockStreamingModel: transient failures", () => {
  it("retries a throttling frame that arrives before any output, announcing the retry", async () => {
    const { model, http } = setup([{ frames: stream("throttled.json") }, { frames: stream("text-only.json") }]);

    const events = await collect(model.stream(request()));

    expect(http.requests).toHaveLength(2);
    expect(http.requests[1].body).toEqual(http.requests[0].body); // the same call again
    expect(events[0]).toMatchObject({ type: "retry", attempt: 2, reason: expect.stringContaining("ThrottlingException") });
    const retry = ofType(events, "retry")[0];
    expect(retry.delayMs).toBeGreaterThanOrEqual(1);
    expect(retry.delayMs).toBeLessThanOrEqual(5);
    expect(texts(events).join("")).toMatch(/^The most common complaint/);
    expect(ofType(events, "stop")[0].usage).toMatchObject({ attempts: 2, inputTokens: 1284, outputTokens: 43 });
  });

  it("retries a 429 ThrottlingException thrown by send and an in-stream model stream error", async () => {
    const { model, http } = setup([
      { status: 429, errorType: "ThrottlingException", message: "Too many requests, please wait before trying again." },
      { frames: [{ type: "modelStreamErrorException", messageType: "exception", body: { message: "Model stream error", originalStatusCode: 500 } }] },
      { frames: stream("text-only.json") },
    ]);

    const events = await collect(model.stream(request()));

    expect(http.requests).toHaveLength(3);
    expect(ofType(events, "retry").map((e) => [e.attempt, e.reason.split(":")[0]])).toEqual([
      [2, "ThrottlingException"],
      [3, "ModelStreamErrorException"],
    ]);
    expect(ofType(events, "stop")[0].usage.attempts).toBe(3);
  });

  it("retries what the SDK's own retry would have: a dropped connection, a 408 model timeout, a bare 502", async () => {
    const { model, http } = setup([
      { dropped: "ECONNRESET" },
      { status: 408, errorType: "ModelTimeoutException", message: "Model has timed out in processing the request." },
      { status: 502, errorType: "", message: "Bad Gateway" },
      { frames: stream("text-only.json") },
    ], { retries: 4, minTimeoutMs: 1, maxTimeoutMs: 5 });

    const events = await collect(model.stream(request()));

    expect(http.requests).toHaveLength(4);
    expect(ofType(events, "retry")).toHaveLength(3);
    expect(texts(events).join("")).toMatch(/^The most common complaint/);
    expect(ofType(events, "stop")[0].usage.attempts).toBe(4);
  });

  it("does not retry a refused connection (nothing listens): the callers' fallbacks take over at once", async () => {
    const { model, http } = setup([{ dropped: "ECONNREFUSED" }, { frames: stream("text-only.json") }]);
    const { error } = await collectUntilError(model.stream(request()));
    expect(error).toMatchObject({ code: "ECONNREFUSED" });
    expect(http.requests).toHaveLength(1);
  });

  it("does not retry a refusal (400 ValidationException)", async () => {
    const { model, http } = setup([{ status: 400, errorType: "ValidationException", message: "Malformed input request" }, { frames: stream("text-only.json") }]);
    const { error } = await collectUntilError(model.stream(request()));
    expect(error).toBeDefined();
    expect(http.requests).toHaveLength(1);
  });

  it("does not retry once output was yielded: it fails with SERVICE_UNAVAILABLE", async () => {
    const frames = [
      ...stream("text-only.json").slice(0, 3),
      { type: "throttlingException", messageType: "exception" as const, body: { message: "Too many tokens, please wait before trying again." } },
    ];
    const { model, http } = setup([{ frames }, { frames: stream("text-only.json") }]);

    const { events, error } = await collectUntilError(model.stream(request()));

    expect(texts(events)).toEqual(["The", " most common complaint"]);
    expect(ofType(events, "retry")).toEqual([]);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("SERVICE_UNAVAILABLE");
    expect(http.requests).toHaveLength(1);
    // The call produced output, so it is billed: its estimated usage comes last, before the error.
    expect(events.at(-1)).toMatchObject({ type: "cut", usage: { outputTokens: Math.ceil("The most common complaint".length / 4), attempts: 1 } });
  });

  it("reports no usage for an attempt that is retried, even after tool input streamed (only a call that ends does)", async () => {
    const frames = [
      { type: "messageStart", body: { role: "assistant" } },
      { type: "contentBlockStart", body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: "tooluse_r", name: "search_insights" } } } },
      { type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { toolUse: { input: "{\"query\": \"sign" } } } },
      { type: "throttlingException", messageType: "exception" as const, body: { message: "Too many tokens, please wait before trying again." } },
    ];
    const { model, http } = setup([{ frames }, { frames: stream("text-only.json") }]);
    const events = await collect(model.stream(request({ tools: TOOLS })));
    expect(http.requests).toHaveLength(2);
    expect(ofType(events, "cut")).toEqual([]);
    expect(ofType(events, "stop")).toHaveLength(1);
    expect(ofType(events, "stop")[0]!.usage.attempts).toBe(2);
  });

  it("reports no usage for a call throttled until it gave up (nothing was generated)", async () => {
    const throttled = { frames: stream("throttled.json") };
    const { model } = setup([throttled, throttled, throttled, throttled]);
    const { events } = await collectUntilError(model.stream(request()));
    expect(ofType(events, "cut")).toEqual([]);
  });

  it("gives up with SERVICE_UNAVAILABLE after the configured retries", async () => {
    const throttled = { frames: stream("throttled.json") };
    const { model, http } = setup([
      throttled,
      { frames: [{ type: "serviceUnavailableException", messageType: "exception", body: { message: "Bedrock is unable to process your request." } }] },
      throttled,
      throttled,
    ]);

    const { events, error } = await collectUntilError(model.stream(request()));

    expect(http.requests).toHaveLength(4); // the first call and 3 retries
    expect(ofType(events, "retry").map((e) => e.attempt)).toEqual([2, 3, 4]);
    expect(error).toBeInstanceOf(AppError);
    expect(error).toMatchObject({
      code: "SERVICE_UNAVAILABLE",
      message: "The AI model is busy; please retry shortly",
      extra: { retry_after_seconds: 1 },
    });
  });

  it("passes other errors on unchanged, without retrying", async () => {
    const { model, http } = setup([
      { status: 403, errorType: "AccessDeniedException", message: "You don't have access to the model with the specified model ID." },
      { frames: stream("text-only.json") },
    ]);

    const { events, error } = await collectUntilError(model.stream(request()));

    expect(events).toEqual([]);
    expect((error as Error).name).toBe("AccessDeniedException");
    expect(error).not.toBeInstanceOf(AppError);
    expect(http.requests).toHaveLength(1);
  }, 5_000);
});

describe("BedrockStreamingModel: abort", () => {
  it("stops the generator with an AbortError when the signal fires mid-stream", async () => {
    const frames = stream("text-only.json");
    const { model, http } = setup([{ frames, holdAfter: 3 }]);
    const controller = new AbortController();
    const iter = model.stream(request({ signal: controller.signal }))[Symbol.asyncIterator]();

    expect(await iter.next()).toEqual({ done: false, value: { type: "text", delta: "The" } });
    expect(await iter.next()).toEqual({ done: false, value: { type: "text", delta: " most common complaint" } });
    // The body holds here; the next read would wait forever without the abort.
    const pending = iter.next();
    controller.abort();

    // Bedrock accepted the request and generated: the call is billed, at an estimate (4 characters a token) of the
    // request as sent and the output streamed, reported before the abort.
    const cut = await pending;
    const sent = http.requests[0]!.body as { system: unknown; messages: unknown; toolConfig?: unknown };
    const requestChars = JSON.stringify({ system: sent.system, messages: sent.messages, toolConfig: sent.toolConfig }).length;
    expect(cut.value).toMatchObject({ type: "cut", usage: { inputTokens: Math.ceil(requestChars / 4), outputTokens: Math.ceil("The most common complaint".length / 4), attempts: 1 } });
    expect((cut.value as Extract<ModelStreamEvent, { type: "cut" }>).usage.costUsd).toBeGreaterThan(0);
    await expect(iter.next()).rejects.toMatchObject({ name: "AbortError" });
    expect(await iter.next()).toEqual({ done: true, value: undefined });
  }, 5_000);

  it("stops waiting between retries when the signal fires", async () => {
    const { model, http } = setup([{ frames: stream("throttled.json") }, { frames: stream("text-only.json") }], {
      retries: 3,
      minTimeoutMs: 60_000,
      maxTimeoutMs: 60_000,
    });
    const controller = new AbortController();
    const iter = model.stream(request({ signal: controller.signal }))[Symbol.asyncIterator]();

    const first = await iter.next();
    expect(first.value).toMatchObject({ type: "retry", delayMs: 60_000 });
    const started = Date.now();
    const pending = iter.next();
    setTimeout(() => controller.abort(), 10);

    await expect(pending).rejects.toMatchObject({ name: "AbortError" });
    expect(Date.now() - started).toBeLessThan(2_000); // not the 60 s delay
    expect(http.requests).toHaveLength(1);
  }, 5_000);
});

// ---------------------------------------------------------------------------------------------------------------
// Public recordings of real ConverseStream responses (test/fixtures/bedrock-recorded; its README says whose).

const reasoningOf = (frames: Frame[]) =>
  frames.flatMap((f) => ((f.body as any).delta?.reasoningContent?.text ? [(f.body as any).delta.reasoningContent.text as string] : [])).join("");
const signatureOf = (frames: Frame[]) =>
  frames.flatMap((f) => ((f.body as any).delta?.reasoningContent?.signature ? [(f.body as any).delta.reasoningContent.signature as string] : [])).join("");

describe("BedrockStreamingModel on recorded Claude streams", () => {
  it("decodes a recorded Sonnet 4 thinking stream: deltas, the signed block whole, then the answer, at Sonnet's rates", async () => {
    const { frames } = recorded("claude-sonnet-4-thinking-text.json");
    const { model } = setup([{ frames }]);

    const events = await collect(model.stream(request({ tier: "mid", thinking: { budgetTokens: 1024 } })));

    expect(ofType(events, "thinking").map((e) => e.delta).join("")).toBe(reasoningOf(frames));
    expect(ofType(events, "thinking_block").map((e) => e.block)).toEqual([{ type: "thinking", text: reasoningOf(frames), signature: signatureOf(frames) }]);
    expect(events.findIndex((e) => e.type === "thinking_block")).toBeLessThan(events.findIndex((e) => e.type === "text"));
    const usage = (frames.find((f) => f.type === "metadata")!.body as any).usage;
    const stop = ofType(events, "stop")[0]!;
    expect(stop.usage).toMatchObject({ inputTokens: usage.inputTokens, outputTokens: usage.outputTokens, tier: "mid" });
    expect(stop.usage.costUsd).toBeCloseTo((usage.inputTokens * 3 + usage.outputTokens * 15) / 1e6, 12);
  });

  it("decodes a recorded redacted reasoning stream into redacted blocks and sends them back as the same bytes", async () => {
    const { frames } = recorded("claude-3-7-sonnet-redacted-thinking-text.json");
    const blobs = frames.flatMap((f) => ((f.body as any).delta?.reasoningContent?.redactedContent ? [(f.body as any).delta.reasoningContent.redactedContent as string] : []));
    const { model, http } = setup([{ frames }, { frames: recorded("claude-v2-text.json").frames }]);

    const events = await collect(model.stream(request({ tier: "large", thinking: { budgetTokens: 1024 } })));
    const blocks = ofType(events, "thinking_block").map((e) => e.block);
    expect(blocks).toEqual(blobs.map((data) => ({ type: "redacted_thinking", data })));

    const answer = texts(events).join("");
    await collect(
      model.stream(
        request({
          tier: "large",
          thinking: { budgetTokens: 1024 },
          messages: [
            { role: "user", content: [{ type: "text", text: "q" }] },
            { role: "assistant", content: [...blocks, { type: "text", text: answer }] },
            { role: "user", content: [{ type: "text", text: "and then?" }] },
          ],
        }),
      ),
    );
    const sent = http.requests[1]!.body.messages[1].content;
    expect(sent.slice(0, blobs.length)).toEqual(blobs.map((b) => ({ reasoningContent: { redactedContent: b } })));
  });

  it.each(["claude-3-sonnet-tool-use.json", "claude-3-sonnet-text-then-tool-use.json", "claude-3-sonnet-text-then-tool-use-2.json", "claude-sonnet-4-text-then-tool-use.json"])(
    "joins the tool input fragments of %s into one complete call",
    async (name) => {
      const { frames } = recorded(name);
      const { model } = setup([{ frames }]);
      const events = await collect(model.stream(request({ tools: TOOLS })));
      const start = frames.find((f) => f.type === "contentBlockStart")!.body as any;
      const joined = frames.flatMap((f) => ((f.body as any).delta?.toolUse ? [(f.body as any).delta.toolUse.input as string] : [])).join("");
      expect(ofType(events, "tool_call")).toEqual([{ type: "tool_call", id: start.start.toolUse.toolUseId, name: start.start.toolUse.name, input: JSON.parse(joined) }]);
      expect(ofType(events, "stop")[0]!.reason).toBe("tool_use");
    },
  );
});
