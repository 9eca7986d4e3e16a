/**
 * OpenAICompatibleStreamingModel against recorded-shape Chat Completions streams (server-sent `chat.completion.chunk`
 * bodies, test/fixtures/openai/*.sse) served at the HTTP level in small byte chunks, so the `openai` SDK's own SSE
 * decoder runs (test/fixtures/openai/fake-server.ts).
 */
import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
} from "openai/resources/chat/completions";
import { describe, expect, it } from "vitest";
import { OpenAICompatibleStreamingModel, streamBody } from "../../../core/ai/openai-stream";
import type { ModelStreamEvent, StreamRequest } from "../../../core/ai/ports";
import { AppError } from "../../../core/error";
import { fakeServer, fixtureJson, fixtureText, type Reply } from "../../fixtures/openai/fake-server";

const BASE = "http://127.0.0.1:8000/v1";
const MODEL = "qwen2.5-7b-instruct";

const request = (over: Partial<StreamRequest> = {}): StreamRequest => ({
  tier: "small",
  system: "You are the research copilot.",
  messages: [{ role: "user", content: [{ type: "text", text: "What do users complain about most?" }] }],
  tools: [],
  ...over,
});

const TOOLS = [
  {
    name: "search_insights",
    description: "Search the workspace's insights.",
    inputSchema: { type: "object", properties: { query: { type: "string" }, limit: { type: "integer" } }, required: ["query"] },
  },
  { name: "list_recommendations", description: "List recommendations.", inputSchema: { type: "object", properties: {} } },
];

const fastRetry = { retries: 3, minTimeoutMs: 1, maxTimeoutMs: 5 };
const sse = (name: string, more: Partial<Extract<Reply, { sse: string }>> = {}): Reply => ({ sse: fixtureText(name), ...more });

function setup(replies: Reply[], opts: ConstructorParameters<typeof OpenAICompatibleStreamingModel>[0] = {}) {
  const server = fakeServer(replies);
  const model = new OpenAICompatibleStreamingModel({ baseURL: BASE, model: MODEL, apiKey: null, fetch: server.fetch, rates: { input: 0, output: 0 }, retry: fastRetry, ...opts });
  return { server, model };
}

async function collect(iterable: AsyncIterable<ModelStreamEvent>): Promise<ModelStreamEvent[]> {
  const out: ModelStreamEvent[] = [];
  for await (const ev of iterable) out.push(ev);
  return out;
}

async function collectUntilError(iterable: AsyncIterable<ModelStreamEvent>) {
  const events: ModelStreamEvent[] = [];
  try {
    for await (const ev of iterable) events.push(ev);
  } catch (error) {
    return { events, error: error as any };
  }
  throw new Error(`the stream did not fail; it yielded ${JSON.stringify(events)}`);
}

/** The chunks of an .sse fixture, parsed (what the server sent). */
const chunks = (name: string): ChatCompletionChunk[] =>
  fixtureText(name)
    .split("\n\n")
    .map((block) => block.replace(/^data: /, ""))
    .filter((data) => data && data !== "[DONE]")
    .map((data) => JSON.parse(data) as ChatCompletionChunk);

const texts = (events: ModelStreamEvent[]) => events.flatMap((e) => (e.type === "text" ? [e.delta] : []));
const ofType = <T extends ModelStreamEvent["type"]>(events: ModelStreamEvent[], type: T) =>
  events.filter((e): e is Extract<ModelStreamEvent, { type: T }> => e.type === type);
const sentBody = (server: ReturnType<typeof fakeServer>, i = 0) => server.requests[i].body as ChatCompletionCreateParamsStreaming;

describe("OpenAICompatibleStreamingModel: decoding the stream", () => {
  it("yields text deltas in order, then one stop with the stop reason and usage", async () => {
    const { model, server } = setup([sse("stream-text-only.sse")], { rates: { input: 0.2, output: 0.6 } });

    const events = await collect(model.stream(request({ tier: "small" })));

    const expected = chunks("stream-text-only.sse").flatMap((c) => (c.choices[0]?.delta.content ? [c.choices[0].delta.content] : []));
    expect(expected).toHaveLength(5);
    expect(texts(events)).toEqual(expected);
    expect(events.map((e) => e.type)).toEqual(["text", "text", "text", "text", "text", "stop"]);
    const stop = ofType(events, "stop")[0];
    expect(stop.reason).toBe("end_turn");
    expect(stop.usage).toMatchObject({ modelId: MODEL, tier: "small", inputTokens: 1284, outputTokens: 43, attempts: 1 });
    expect(stop.usage.costUsd).toBeCloseTo((1284 * 0.2 + 43 * 0.6) / 1e6, 12);
    expect(server.requests[0].url).toBe(`${BASE}/chat/completions`);
    expect(server.requests[0].headers.get("authorization")).toBeNull();
  });

  it("joins a tool call's argument fragments and parses them once, after the stream finished", async () => {
    const fragments = chunks("stream-text-then-tool.sse").flatMap((c) => c.choices[0]?.delta.tool_calls?.map((t) => t.function?.arguments ?? "") ?? []);
    // The recording splits the JSON mid-key and mid-value: no fragment parses alone.
    expect(fragments.filter((f) => f !== "").length).toBeGreaterThanOrEqual(3);
    for (const f of fragments.filter((f) => f !== "")) expect(() => JSON.parse(f)).toThrow();
    const { model } = setup([sse("stream-text-then-tool.sse", { chunkBytes: 11 })]);

    const events = await collect(model.stream(request({ tier: "mid", tools: TOOLS })));

    expect(events.map((e) => e.type)).toEqual(["text", "text", "text", "tool_call", "stop"]);
    expect(texts(events).join("")).toBe("I'll look for insights about sign-out problems in this workspace.");
    expect(ofType(events, "tool_call")).toEqual([
      { type: "tool_call", id: "chatcmpl-tool-5a1c8e3f9b2d4a7c", name: "search_insights", input: { query: "signed out repeatedly", limit: 10 } },
    ]);
    const stop = ofType(events, "stop")[0];
    expect(stop.reason).toBe("tool_use");
    expect(stop.usage).toMatchObject({ inputTokens: 2471, outputTokens: 96, costUsd: 0 });
  });

  it("keeps two tool calls of one message apart, in index order", async () => {
    const { model } = setup([sse("stream-two-tools.sse")]);

    const events = await collect(model.stream(request({ tools: TOOLS })));

    expect(ofType(events, "tool_call")).toEqual([
      { type: "tool_call", id: "chatcmpl-tool-1e4b7d9a2c6f4e8b", name: "search_insights", input: { query: "onboarding friction" } },
      { type: "tool_call", id: "chatcmpl-tool-9c3f6a1e8d2b4c7a", name: "list_recommendations", input: { status: "proposed", limit: 5 } },
    ]);
    expect(ofType(events, "stop")[0].reason).toBe("tool_use");
  });

  it("runs the tools when a server finishes a tool call with \"stop\" (Ollama)", async () => {
    const { model } = setup([sse("stream-ollama-tool-stop.sse")]);

    const events = await collect(model.stream(request({ tools: TOOLS })));

    expect(events.map((e) => e.type)).toEqual(["tool_call", "stop"]);
    expect(ofType(events, "tool_call")[0]).toEqual({ type: "tool_call", id: "call_7yq2m0ds", name: "search_insights", input: { query: "signed out repeatedly" } });
    expect(ofType(events, "stop")[0]).toMatchObject({ reason: "tool_use", usage: { inputTokens: 1530, outputTokens: 24 } });
  });

  it("yields a reasoning model's reasoning_content as thinking, then the whole reasoning as one block, then the answer", async () => {
    const { model } = setup([sse("stream-reasoning.sse")]);

    const events = await collect(model.stream(request()));

    expect(events.map((e) => e.type)).toEqual(["thinking", "thinking", "thinking_block", "text", "stop"]);
    expect(ofType(events, "thinking").map((e) => e.delta).join("")).toBe("The user asks about sign-outs; the insights list has one on it.");
    // Kept for the turn and the message's thinking_blocks; these servers sign nothing.
    expect(ofType(events, "thinking_block")[0]!.block).toEqual({ type: "thinking", text: "The user asks about sign-outs; the insights list has one on it." });
  });

  it("fails with INTERNAL, naming the tool, when the joined arguments are not JSON", async () => {
    const { model } = setup([sse("stream-bad-arguments.sse")]);

    const { events, error } = await collectUntilError(model.stream(request({ tools: TOOLS })));

    // Nothing usable came out, but the call was generated and billed: the usage the server reported, before the error.
    expect(events).toEqual([{ type: "cut", usage: expect.objectContaining({ inputTokens: 1400, outputTokens: 20, attempts: 1 }) }]);
    expect(error).toBeInstanceOf(AppError);
    expect(error.code).toBe("INTERNAL");
    expect(error.message).toContain("search_insights (chatcmpl-tool-6b2d9f4a1c8e4b3d)");
    expect(error.extra.model_error).toBe('{"query": "sign out", limit: 10}');
  });

  it("drops a tool call the output cap cut off mid-JSON and stops with max_tokens, keeping the text (finish_reason length)", async () => {
    const chunk = (delta: object, finish: string | null = null) =>
      `data: ${JSON.stringify({ id: "chatcmpl-cut", object: "chat.completion.chunk", created: 1752832160, model: MODEL, choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }] })}\n\n`;
    const body =
      chunk({ role: "assistant", content: "Let me update the document." }) +
      chunk({ tool_calls: [{ id: "call_whole", type: "function", index: 0, function: { name: "search_insights", arguments: '{"query": "sign out"}' } }] }) +
      chunk({ tool_calls: [{ id: "call_cut", type: "function", index: 1, function: { name: "list_recommendations", arguments: "" } }] }) +
      chunk({ tool_calls: [{ index: 1, function: { arguments: '{"status": "propo' } }] }) +
      chunk({}, "length") +
      `data: ${JSON.stringify({ id: "chatcmpl-cut", object: "chat.completion.chunk", created: 1752832160, model: MODEL, choices: [], usage: { prompt_tokens: 900, completion_tokens: 4096, total_tokens: 4996 } })}\n\n` +
      "data: [DONE]\n\n";
    const { model } = setup([{ sse: body }]);

    const events = await collect(model.stream(request({ tools: TOOLS })));

    expect(texts(events)).toEqual(["Let me update the document."]);
    // The whole call is kept, as on Bedrock; the cut one is gone.
    expect(ofType(events, "tool_call")).toEqual([{ type: "tool_call", id: "call_whole", name: "search_insights", input: { query: "sign out" } }]);
    expect(ofType(events, "stop")[0]).toMatchObject({ reason: "max_tokens", usage: { inputTokens: 900, outputTokens: 4096 } });
  });

  it("fails with INTERNAL when the stream ends without a finish_reason, after the text it had", async () => {
    const { model } = setup([sse("stream-cut-off.sse")]);

    const { events, error } = await collectUntilError(model.stream(request()));

    expect(texts(events)).toEqual(["Users most often"]);
    expect(error).toBeInstanceOf(AppError);
    expect(error.message).toMatch(/without a finish_reason/);
  });
});

describe("OpenAICompatibleStreamingModel: the request", () => {
  it("maps system, turns, tool uses and tool results to Chat Completions messages, and tools to function tools", async () => {
    const { model, server } = setup([sse("stream-text-only.sse")]);
    const req = request({
      tier: "large",
      modelId: "llama3.1:70b",
      tools: TOOLS,
      maxTokens: 1000,
      temperature: 0.3,
      thinking: { budgetTokens: 8000 },
      messages: [
        { role: "user", content: [{ type: "text", text: "What do users complain about?" }] },
        {
          role: "assistant",
          content: [
            { type: "text", text: "Let me search." },
            { type: "tool_use", id: "call_a", name: "search_insights", input: { query: "complaints" } },
            { type: "tool_use", id: "call_b", name: "list_recommendations", input: {} },
          ],
        },
        {
          role: "user",
          content: [
            { type: "tool_result", id: "call_a", status: "success", content: { insights: [{ id: "i1", title: "Sign-outs" }] } },
            { type: "tool_result", id: "call_b", status: "error", content: "Not allowed in this workspace" },
          ],
        },
        { role: "assistant", content: [{ type: "text", text: "Sign-outs lead." }] },
        { role: "user", content: [{ type: "text", text: " " }, { type: "text", text: "And next?" }] },
      ],
    });

    const events = await collect(model.stream(req));

    expect(ofType(events, "stop")[0].usage.modelId).toBe("llama3.1:70b");
    const body = sentBody(server);
    expect(body.model).toBe("llama3.1:70b");
    expect(body.stream).toBe(true);
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(body.max_tokens).toBe(1000);
    expect(body.temperature).toBe(0.3);
    expect(body.tool_choice).toBeUndefined(); // the model decides ("auto")
    // No portable thinking budget in Chat Completions: nothing is sent for it.
    expect(Object.keys(body).sort()).toEqual(["max_tokens", "messages", "model", "stream", "stream_options", "temperature", "tools"]);
    expect(body.messages).toEqual([
      { role: "system", content: "You are the research copilot." },
      { role: "user", content: "What do users complain about?" },
      {
        role: "assistant",
        content: "Let me search.",
        tool_calls: [
          { id: "call_a", type: "function", function: { name: "search_insights", arguments: '{"query":"complaints"}' } },
          { id: "call_b", type: "function", function: { name: "list_recommendations", arguments: "{}" } },
        ],
      },
      { role: "tool", tool_call_id: "call_a", content: '{"insights":[{"id":"i1","title":"Sign-outs"}]}' },
      { role: "tool", tool_call_id: "call_b", content: "Error: Not allowed in this workspace" },
      { role: "assistant", content: "Sign-outs lead." },
      { role: "user", content: "And next?" },
    ]);
    expect(body.tools).toEqual(TOOLS.map((t) => ({ type: "function", function: { name: t.name, description: t.description, parameters: t.inputSchema } })));
  });

  it("sends no tools when none are offered, the configured model without an override, and no temperature unless set", () => {
    const body = streamBody(request(), MODEL);
    expect(body.tools).toBeUndefined();
    expect(body.model).toBe(MODEL);
    expect(body.temperature).toBeUndefined();
    expect(body.max_tokens).toBe(4096);
    const assistantOnlyTools: ChatCompletionAssistantMessageParam = streamBody(
      request({
        tools: TOOLS,
        messages: [
          { role: "user", content: [{ type: "text", text: "What is planned?" }] },
          { role: "assistant", content: [{ type: "tool_use", id: "c1", name: "list_recommendations", input: {} }] },
          { role: "user", content: [{ type: "tool_result", id: "c1", status: "success", content: { recommendations: [] } }] },
        ],
      }),
      MODEL,
    ).messages[2] as ChatCompletionAssistantMessageParam;
    expect(assistantOnlyTools.content).toBeNull();
    expect(assistantOnlyTools.tool_calls).toHaveLength(1);
  });
});

describe("OpenAICompatibleStreamingModel: transient failures", () => {
  it("retries a busy server (503) and an error payload inside the stream before any output, announcing each retry", async () => {
    const { model, server } = setup([{ status: 503, json: fixtureJson("error-unavailable.json") }, sse("stream-error-frame.sse"), sse("stream-text-only.sse")]);

    const events = await collect(model.stream(request()));

    expect(server.requests).toHaveLength(3);
    expect(ofType(events, "retry").map((e) => e.attempt)).toEqual([2, 3]);
    expect(ofType(events, "retry")[0].reason).toMatch(/Loading model/);
    expect(ofType(events, "retry")[1].reason).toMatch(/overloaded/);
    expect(texts(events)).toHaveLength(5);
    expect(ofType(events, "stop")[0].usage.attempts).toBe(3);
  });

  it("does not retry once output was yielded: a dropped stream fails with SERVICE_UNAVAILABLE", async () => {
    // The text arrives, then the server's error payload (a model that crashed mid-answer).
    const broken = fixtureText("stream-cut-off.sse") + fixtureText("stream-error-frame.sse");
    const { model, server } = setup([{ sse: broken }, sse("stream-text-only.sse")]);

    const { events, error } = await collectUntilError(model.stream(request()));

    expect(texts(events)).toEqual(["Users most often"]);
    expect(error).toBeInstanceOf(AppError);
    expect(error.code).toBe("SERVICE_UNAVAILABLE");
    expect(server.requests).toHaveLength(1);
    // It generated output, so it is billed: estimated (no usage came), 4 characters a token.
    expect(events.at(-1)).toMatchObject({ type: "cut", usage: { outputTokens: Math.ceil("Users most often".length / 4) } });
    expect((events.at(-1) as Extract<ModelStreamEvent, { type: "cut" }>).usage.inputTokens).toBeGreaterThan(0);
  });

  it("gives up with SERVICE_UNAVAILABLE after the configured retries", async () => {
    const server = fakeServer([{ status: 429, json: { error: { message: "Too many requests", type: "rate_limit_error" } } }], { repeatLast: true });
    const model = new OpenAICompatibleStreamingModel({ baseURL: BASE, model: MODEL, apiKey: null, fetch: server.fetch, retry: fastRetry });

    const { events, error } = await collectUntilError(model.stream(request()));

    expect(ofType(events, "retry")).toHaveLength(fastRetry.retries);
    expect(ofType(events, "cut")).toEqual([]); // refused with 429: nothing generated, nothing billed
    expect(error.code).toBe("SERVICE_UNAVAILABLE");
    expect(server.requests).toHaveLength(fastRetry.retries + 1);
  });

  it("fails at once, naming the address, when nothing listens there; other errors pass unchanged", async () => {
    const refused = setup([{ network: "ECONNREFUSED" }]);
    const a = await collectUntilError(refused.model.stream(request()));
    expect(a.error.message).toBe(`The model server at ${BASE} cannot be reached (ECONNREFUSED); is it running?`);
    expect(refused.server.requests).toHaveLength(1);

    const unknown = setup([{ status: 404, json: fixtureJson("error-model-not-found.json") }]);
    const b = await collectUntilError(unknown.model.stream(request()));
    expect(b.error).not.toBeInstanceOf(AppError);
    expect(b.error.status).toBe(404);
    expect(unknown.server.requests).toHaveLength(1);
  });
});

describe("OpenAICompatibleStreamingModel: abort", () => {
  it("stops with an AbortError when the signal fires mid-stream", async () => {
    const controller = new AbortController();
    const text = fixtureText("stream-text-only.sse");
    const { model } = setup([{ sse: text, stallAfterBytes: text.indexOf("signed out") + 40 }]);

    const events: ModelStreamEvent[] = [];
    const err = await (async () => {
      for await (const ev of model.stream(request({ signal: controller.signal }))) {
        events.push(ev);
        if (events.length === 2) setTimeout(() => controller.abort(), 5);
      }
    })().catch((e) => e);

    expect(err.name).toBe("AbortError");
    expect(texts(events).length).toBeGreaterThanOrEqual(2);
    expect(ofType(events, "stop")).toHaveLength(0);
    // The server accepted the request and generated: its estimated use is reported before the abort.
    const cut = ofType(events, "cut");
    expect(cut).toHaveLength(1);
    expect(cut[0]!.usage.outputTokens).toBe(Math.ceil(texts(events).join("").length / 4));
    expect(cut[0]!.usage.inputTokens).toBeGreaterThan(0);
  });

  it("stops waiting between retries when the signal fires", async () => {
    const controller = new AbortController();
    const { model } = setup([{ status: 503, json: fixtureJson("error-unavailable.json") }, sse("stream-text-only.sse")], {
      retry: { retries: 3, minTimeoutMs: 10_000, maxTimeoutMs: 10_000 },
    });

    const started = Date.now();
    const { events, error } = await collectUntilError(
      (async function* () {
        for await (const ev of model.stream(request({ signal: controller.signal }))) {
          if (ev.type === "retry") setTimeout(() => controller.abort(), 5);
          yield ev;
        }
      })(),
    );

    expect(ofType(events, "retry")).toHaveLength(1);
    expect(error.name).toBe("AbortError");
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
