/**
 * OpenAICompatibleModel and OpenAICompatibleEmbedder against recorded-shape Chat Completions and Embeddings bodies
 * served at the HTTP level (test/fixtures/openai/fake-server.ts: a `fetch` handed to the `openai` SDK, so the SDK's
 * request building and error mapping run). Fixtures: test/fixtures/openai (hand-written from the API reference).
 */
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming, ChatCompletionToolMessageParam } from "openai/resources/chat/completions";
import type { EmbeddingCreateParams } from "openai/resources/embeddings";
import { afterEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { OpenAICompatibleEmbedder, OpenAICompatibleModel } from "../../../core/ai/openai";
import type { StructuredRequest } from "../../../core/ai/ports";
import type { SynthesisSource } from "../../../core/ai/synthesis";
import { synthesizeWithModel } from "../../../core/ai/synthesis/bedrock";
import { AppError } from "../../../core/error";
import { fakeServer, fixtureJson, type Reply } from "../../fixtures/openai/fake-server";
import { hashEmbedder } from "./helpers";

const BASE = "http://127.0.0.1:11434/v1";
const MODEL = "qwen2.5-7b-instruct";

const schema = z.object({
  label: z.enum(["pain_point", "feature_request", "praise"]),
  summary: z.string().min(5),
  confidence: z.number().min(0).max(1),
});

const request = (tier: StructuredRequest<unknown>["tier"] = "small"): StructuredRequest<z.infer<typeof schema>> => ({
  tier,
  system: "Classify the feedback.",
  messages: [{ role: "user", text: "I keep getting signed out of the app every time I open it." }],
  tool: { name: "classify_feedback", description: "Record the classification.", schema },
});

const fastRetry = { retries: 3, minTimeoutMs: 1, maxTimeoutMs: 5 };
const ok = (name: string): Reply => ({ json: fixtureJson(name) });
const sentBody = (server: ReturnType<typeof fakeServer>, i: number) => server.requests[i].body as ChatCompletionCreateParamsNonStreaming;

function setup(replies: Reply[], opts: ConstructorParameters<typeof OpenAICompatibleModel>[0] = {}) {
  const server = fakeServer(replies);
  const model = new OpenAICompatibleModel({ baseURL: BASE, model: MODEL, apiKey: null, fetch: server.fetch, rates: { input: 0, output: 0 }, retry: fastRetry, ...opts });
  return { server, model };
}

describe("OpenAICompatibleModel.structured", () => {
  it("offers the single tool, forces a call, parses and validates its arguments, and reports usage", async () => {
    const { server, model } = setup([ok("chat-tool-good.json")]);

    const { output, usage } = await model.structured(request("small"));

    expect(output).toEqual({ label: "pain_point", summary: "Users are signed out repeatedly and must re-enter credentials.", confidence: 0.82 });
    expect(server.requests).toHaveLength(1);
    const seen = server.requests[0];
    expect(seen.url).toBe(`${BASE}/chat/completions`);
    expect(seen.method).toBe("POST");
    // No key configured: no Authorization header at all (the SDK would otherwise refuse to send the request).
    expect(seen.headers.get("authorization")).toBeNull();
    expect(seen.headers.get("openai-organization")).toBeNull();
    const body = sentBody(server, 0);
    expect(body.model).toBe(MODEL);
    expect(body.stream).toBeUndefined();
    expect(body.tool_choice).toBe("required");
    expect(body.max_tokens).toBe(4096);
    expect(body.temperature).toBe(0);
    expect(body.messages).toEqual([
      { role: "system", content: "Classify the feedback." },
      { role: "user", content: "I keep getting signed out of the app every time I open it." },
    ]);
    expect(body.tools).toHaveLength(1);
    const tool = body.tools![0];
    if (tool.type !== "function") throw new Error("not a function tool");
    expect(tool.function.name).toBe("classify_feedback");
    expect(tool.function.description).toBe("Record the classification.");
    const params = tool.function.parameters as Record<string, any>;
    expect(params.type).toBe("object");
    expect(params.required).toEqual(["label", "summary", "confidence"]);
    expect(params.properties.label.enum).toEqual(["pain_point", "feature_request", "praise"]);
    expect(params.$schema).toBeUndefined();
    // A model server of your own costs nothing unless rates are set.
    expect(usage).toEqual({ modelId: MODEL, tier: "small", inputTokens: 412, outputTokens: 61, costUsd: 0, latencyMs: expect.any(Number), attempts: 1 });
  });

  it("sends the API key as a bearer token when one is set, and prices tokens at the configured rates", async () => {
    const { server, model } = setup([ok("chat-tool-good.json")], { apiKey: "sk-local-test", rates: { input: 0.5, output: 1.5 } });

    const { usage } = await model.structured(request("large"));

    expect(server.requests[0].headers.get("authorization")).toBe("Bearer sk-local-test");
    expect(usage.costUsd).toBeCloseTo((412 * 0.5 + 61 * 1.5) / 1e6, 12);
    expect(usage.tier).toBe("large");
  });

  it("accepts the call as Ollama sends it", async () => {
    const { model } = setup([ok("chat-tool-ollama.json")]);
    const { output, usage } = await model.structured(request());
    expect(output.confidence).toBe(0.82);
    expect(usage.inputTokens).toBe(389);
  });

  it("repairs arguments that miss the schema once, answering the call with a tool message that lists the problems", async () => {
    const { server, model } = setup([ok("chat-tool-malformed.json"), ok("chat-tool-repaired.json")]);

    const { output, usage } = await model.structured(request("mid"));

    expect(output).toEqual({ label: "pain_point", summary: "Users are signed out repeatedly.", confidence: 0.9 });
    expect(server.requests).toHaveLength(2);
    const repair = sentBody(server, 1).messages;
    expect(repair).toHaveLength(4);
    const malformed = fixtureJson<ChatCompletion>("chat-tool-malformed.json").choices[0].message;
    expect(repair[2]).toEqual({ role: "assistant", content: malformed.content, tool_calls: malformed.tool_calls });
    const answer = repair[3] as ChatCompletionToolMessageParam;
    expect(answer.role).toBe("tool");
    expect(answer.tool_call_id).toBe("chatcmpl-tool-2f6b9d4e1a3c4b7d");
    expect(answer.content).toContain("at label");
    expect(answer.content).toContain("at confidence");
    expect(answer.content).toContain("Call classify_feedback again");
    expect(usage).toMatchObject({ inputTokens: 412 + 538, outputTokens: 48 + 39, attempts: 2 });
  });

  it("repairs arguments that are not JSON, saying the answer was cut off at the token limit", async () => {
    const { server, model } = setup([ok("chat-tool-bad-json.json"), ok("chat-tool-repaired.json")]);

    const { output } = await model.structured(request());

    expect(output.confidence).toBe(0.9);
    const answer = sentBody(server, 1).messages[3] as ChatCompletionToolMessageParam;
    expect(answer.content).toMatch(/the arguments are not valid JSON/);
    expect(answer.content).toContain("cut off at the token limit");
  });

  it("starts afresh when the repair is malformed too, and when the answer has no tool call", async () => {
    const { server, model } = setup(
      [ok("chat-tool-malformed.json"), ok("chat-tool-malformed.json"), ok("chat-text-only.json"), ok("chat-tool-good.json")],
      { freshAttempts: 3 },
    );

    const { output, usage } = await model.structured(request());

    expect(output.label).toBe("pain_point");
    expect(server.requests).toHaveLength(4);
    expect(sentBody(server, 2).messages).toHaveLength(2); // fresh attempt: system + the user turn
    expect(sentBody(server, 3).messages).toHaveLength(2); // no tool call: nothing to repair, fresh again
    expect(usage.attempts).toBe(4);
    expect(usage.outputTokens).toBe(48 + 48 + 22 + 61);
  });

  it("never returns unvalidated output: fails with INTERNAL after its repairs and fresh attempts", async () => {
    const { server, model } = setup(Array.from({ length: 4 }, () => ok("chat-tool-malformed.json")));

    const err = await model.structured(request()).catch((e) => e);

    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("INTERNAL");
    expect(err.extra.model_error).toContain("at label");
    expect(server.requests).toHaveLength(4);
  });

  it("switches to the named tool_choice when the server rejects \"required\", and keeps it", async () => {
    const { server, model } = setup([{ status: 400, json: fixtureJson("error-tool-choice.json") }, ok("chat-tool-good.json"), ok("chat-tool-good.json")]);

    await model.structured(request());
    await model.structured(request());

    expect(server.requests.map((_, i) => sentBody(server, i).tool_choice)).toEqual([
      "required",
      { type: "function", function: { name: "classify_feedback" } },
      { type: "function", function: { name: "classify_feedback" } },
    ]);
  });

  it("retries a busy server (503, 429, a dropped connection) with exponential backoff and jitter", async () => {
    const spy = vi.spyOn(globalThis, "setTimeout");
    const { server, model } = setup(
      [
        { status: 503, json: fixtureJson("error-unavailable.json") },
        { status: 429, json: { error: { message: "Too many requests", type: "rate_limit_error" } } },
        { network: "ECONNRESET" },
        ok("chat-tool-good.json"),
      ],
      { retry: { retries: 5, minTimeoutMs: 20, maxTimeoutMs: 1000 } },
    );

    const { usage } = await model.structured(request());

    const delays = spy.mock.calls.map((c) => c[1] as number).filter((d) => d >= 20 && d < 1000);
    spy.mockRestore();
    expect(server.requests).toHaveLength(4);
    expect(usage.attempts).toBe(4);
    expect(usage.inputTokens).toBe(412); // failed attempts carry no usage
    expect(delays).toHaveLength(3);
    delays.forEach((d, k) => {
      expect(d).toBeGreaterThanOrEqual(20 * 2 ** k);
      expect(d).toBeLessThan(2 * 20 * 2 ** k + 1);
    });
  });

  it("gives up on a persistently busy server with SERVICE_UNAVAILABLE", async () => {
    const server = fakeServer([{ status: 503, json: fixtureJson("error-unavailable.json") }], { repeatLast: true });
    const model = new OpenAICompatibleModel({ baseURL: BASE, model: MODEL, apiKey: null, fetch: server.fetch, retry: fastRetry });
    const err = await model.structured(request()).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("SERVICE_UNAVAILABLE");
    expect(err.message).toBe("The AI model is busy; please retry shortly");
    expect(server.requests).toHaveLength(fastRetry.retries + 1);
  });

  it("fails at once, naming the address, when nothing listens there", async () => {
    const { server, model } = setup([{ network: "ECONNREFUSED" }]);
    const err = await model.structured(request()).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("SERVICE_UNAVAILABLE");
    expect(err.message).toBe(`The model server at ${BASE} cannot be reached (ECONNREFUSED); is it running?`);
    expect(server.requests).toHaveLength(1);
  });

  it("passes other errors on unchanged, without retrying (an unknown model: 404)", async () => {
    const { server, model } = setup([{ status: 404, json: fixtureJson("error-model-not-found.json") }]);
    const err = await model.structured(request()).catch((e) => e);
    expect(err).not.toBeInstanceOf(AppError);
    expect(err.status).toBe(404);
    expect(err.message).toContain("not found, try pulling it first");
    expect(server.requests).toHaveLength(1);
  });
});

describe("OpenAICompatibleEmbedder", () => {
  afterEach(() => vi.restoreAllMocks());

  /** Answers /embeddings like a server: one vector per input, in `index` order reversed (the API allows any order). */
  const embeddings = (dims: number): Reply => (req) => {
    const body = req.body as EmbeddingCreateParams;
    const inputs = body.input as string[];
    return {
      json: {
        object: "list",
        data: inputs
          .map((text, index) => ({ object: "embedding", index, embedding: Array.from({ length: dims }, (_, i) => Math.cos(text.length * 7 + i) * 3) }))
          .reverse(),
        model: body.model,
        usage: { prompt_tokens: inputs.length * 4, total_tokens: inputs.length * 4 },
      },
    };
  };

  it("learns the dimension from a probe, batches, keeps input order and returns unit vectors", async () => {
    const server = fakeServer([embeddings(8)], { repeatLast: true });

    const emb = await OpenAICompatibleEmbedder.create({ baseURL: BASE, model: "nomic-embed-text", apiKey: null, fetch: server.fetch, batchSize: 4, retry: fastRetry });
    const texts = Array.from({ length: 10 }, (_, i) => "y".repeat(i + 1));
    const out = await emb.embed(texts);

    expect(emb.dimensions).toBe(8);
    expect(emb.id).toBe("openai-compatible:nomic-embed-text:8");
    expect(out).toHaveLength(10);
    out.forEach((v, i) => {
      expect(v).toBeInstanceOf(Float32Array);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
      const raw = Array.from({ length: 8 }, (_, j) => Math.cos((i + 1) * 7 + j));
      expect(v[0]).toBeCloseTo(raw[0] / Math.hypot(...raw), 5);
    });
    // The probe, then 10 texts in batches of 4.
    expect(server.requests.map((r) => (r.body as EmbeddingCreateParams).input)).toEqual([
      ["dimension probe"],
      texts.slice(0, 4),
      texts.slice(4, 8),
      texts.slice(8),
    ]);
    const body = server.requests[1].body as EmbeddingCreateParams;
    expect(server.requests[1].url).toBe(`${BASE}/embeddings`);
    expect(body.model).toBe("nomic-embed-text");
    expect(body.encoding_format).toBe("float");
    expect(emb.tokensUsed).toBe(4 + 40);
  });

  it("sends empty texts as a space and rejects an answer of another dimension", async () => {
    const server = fakeServer([embeddings(8), embeddings(8), embeddings(6)]);
    const emb = await OpenAICompatibleEmbedder.create({ baseURL: BASE, model: "all-minilm", apiKey: null, fetch: server.fetch, retry: fastRetry });

    await emb.embed(["", "  "]);
    expect((server.requests[1].body as EmbeddingCreateParams).input).toEqual([" ", " "]);
    await expect(emb.embed(["hello"])).rejects.toThrow(/returned 6 dimensions, expected 8/);
  });

  it("needs an embedding model, and says which setting names it", async () => {
    await expect(OpenAICompatibleEmbedder.create({ baseURL: BASE, apiKey: null, model: "" })).rejects.toThrow(/OPENAI_EMBEDDING_MODEL/);
  });
});

describe("synthesis through the OpenAI-compatible model (the Model port's callers, grounding included)", () => {
  const answers = [
    "I get signed out every single time I open the app and have to type my password again.",
    "Being logged out constantly makes checking my balance slow.",
    "Why does it forget my login after every update? I have to sign in again each time.",
    "Please add a dark mode, the white screen is blinding at night.",
    "A dark theme for evening use would be great for my eyes.",
  ];
  const source: SynthesisSource = {
    id: "survey",
    title: "Mobile app survey",
    source_type: "survey",
    extracted_text: `What bothers you most?\n${answers.join("\n")}\n`,
    units: answers.map((text, i) => ({ kind: "response" as const, text, speaker: `row ${i + 2}`, fields: { question: "What bothers you most?" } })),
  };

  it("repairs a citation of an unknown mention id, and keeps only verbatim quotes rebuilt from the cited mentions", async () => {
    const { server, model } = setup([ok("chat-synthesis-unknown-id.json"), ok("chat-synthesis-insights.json")], { rates: { input: 0, output: 0 } });

    const out = await synthesizeWithModel({ sources: [source], model, embedder: hashEmbedder() });

    const first = sentBody(server, 0);
    expect(first.tool_choice).toBe("required");
    const prompt = first.messages[1].content as string;
    for (const id of ["m1", "m2", "m3", "m4", "m5"]) expect(prompt).toContain(`${id} [survey: Mobile app survey`);
    const repair = sentBody(server, 1).messages.at(-1) as ChatCompletionToolMessageParam;
    expect(repair.content).toContain("unknown mention id");
    expect(out.insights.map((i) => i.title)).toEqual(["Users are signed out again and again", "Dark mode is wanted for evening use"]);
    const quotes = out.insights.flatMap((i) => i.quotes.map((q) => q.text));
    expect(quotes.length).toBeGreaterThan(0);
    // The model's own "quote" is dropped: every quote is (a span of) a cited answer, found verbatim in the source.
    expect(quotes).not.toContain("The app logs me out constantly and I lose my work");
    for (const q of quotes) {
      expect(answers.some((a) => a.includes(q))).toBe(true);
      expect(source.extracted_text.includes(q)).toBe(true);
    }
    expect(out.insights[0].mention_count).toBe(3);
    expect(out.usage).toMatchObject({ modelId: MODEL, tier: "mid", inputTokens: 611 + 874, outputTokens: 204 + 198, attempts: 2, costUsd: 0 });
  });
});
