import {
  AccessDeniedException,
  BedrockRuntimeClient,
  ConverseCommand,
  InvokeModelCommand,
  ModelNotReadyException,
  ServiceUnavailableException,
  ThrottlingException,
} from "@aws-sdk/client-bedrock-runtime";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { BedrockEmbedder, BedrockModel, DEFAULT_MODEL_IDS, modelIdsFromEnv, toolInputSchema } from "../../../core/ai/bedrock";
import { AppError } from "../../../core/error";
import { costUsd, type StructuredRequest } from "../../../core/ai/ports";
import { fixture } from "./helpers";

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

describe("BedrockModel.structured", () => {
  const client = new BedrockRuntimeClient({ region: "us-east-1" });
  const mock = mockClient(client);
  beforeEach(() => mock.reset());

  it("forces the single tool, validates its input and reports usage and cost from the response", async () => {
    mock.on(ConverseCommand).resolves(fixture("converse-tool-good.json"));
    const model = new BedrockModel({ client, retry: fastRetry });

    const { output, usage } = await model.structured(request("small"));

    expect(output).toEqual({
      label: "pain_point",
      summary: "Users are signed out repeatedly and must re-enter credentials.",
      confidence: 0.82,
    });
    const calls = mock.commandCalls(ConverseCommand);
    expect(calls).toHaveLength(1);
    const input = calls[0].args[0].input;
    expect(input.modelId).toBe(model.modelId("small"));
    expect(input.toolConfig?.toolChoice).toEqual({ tool: { name: "classify_feedback" } });
    expect(input.toolConfig?.tools).toHaveLength(1);
    const json = input.toolConfig?.tools?.[0].toolSpec?.inputSchema?.json as Record<string, any>;
    expect(json.required).toEqual(["label", "summary", "confidence"]);
    expect(json.properties.label.enum).toEqual(["pain_point", "feature_request", "praise"]);
    expect(json.$schema).toBeUndefined();
    expect(input.system).toEqual([{ text: "Classify the feedback." }]);
    expect(input.messages).toEqual([{ role: "user", content: [{ text: request().messages[0].text }] }]);
    expect(usage).toMatchObject({ tier: "small", inputTokens: 1234, outputTokens: 156, attempts: 1 });
    // small tier: 0.80 USD / 1M input, 4.00 USD / 1M output (spec 02 Credits)
    expect(usage.costUsd).toBeCloseTo((1234 * 0.8 + 156 * 4.0) / 1e6, 12);
    expect(usage.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("repairs malformed output once by sending the validation errors back as an error toolResult", async () => {
    mock
      .on(ConverseCommand)
      .resolvesOnce(fixture("converse-tool-malformed.json"))
      .resolvesOnce(fixture("converse-tool-repaired.json"));
    const model = new BedrockModel({ client, retry: fastRetry });

    const { output, usage } = await model.structured(request("mid"));

    expect(output).toEqual({ label: "pain_point", summary: "Users are signed out repeatedly.", confidence: 0.9 });
    const calls = mock.commandCalls(ConverseCommand);
    expect(calls).toHaveLength(2);
    const repair = calls[1].args[0].input.messages!;
    expect(repair).toHaveLength(3);
    expect(repair[1].role).toBe("assistant");
    expect(repair[1].content).toEqual(fixture("converse-tool-malformed.json").output.message.content);
    const result = repair[2].content![0].toolResult!;
    expect(result.toolUseId).toBe("tooluse_Xq3n8TQqS0mWm3kq1yS2dA");
    expect(result.status).toBe("error");
    const text = (result.content![0] as { text: string }).text;
    expect(text).toContain("at label");
    expect(text).toContain("at confidence");
    // Usage adds up both calls; mid tier is 3.00 / 15.00 USD per 1M tokens.
    expect(usage).toMatchObject({ inputTokens: 1234 + 1420, outputTokens: 98 + 61, attempts: 2 });
    expect(usage.costUsd).toBeCloseTo(((1234 + 1420) * 3 + (98 + 61) * 15) / 1e6, 12);
  });

  it("starts afresh when the repair is malformed too, and when the answer has no tool call", async () => {
    mock
      .on(ConverseCommand)
      .resolvesOnce(fixture("converse-tool-malformed.json"))
      .resolvesOnce(fixture("converse-tool-malformed.json"))
      .resolvesOnce(fixture("converse-text-only.json"))
      .resolvesOnce(fixture("converse-tool-good.json"));
    const model = new BedrockModel({ client, retry: fastRetry, freshAttempts: 3 });

    const { output, usage } = await model.structured(request());

    expect(output.label).toBe("pain_point");
    const calls = mock.commandCalls(ConverseCommand);
    expect(calls).toHaveLength(4);
    expect(calls[2].args[0].input.messages).toHaveLength(1); // fresh attempt: only the user turn
    expect(calls[3].args[0].input.messages).toHaveLength(1); // no tool call: nothing to repair, fresh again
    expect(usage.attempts).toBe(4);
    expect(usage.outputTokens).toBe(98 + 98 + 12 + 156);
  });

  it("never returns unvalidated output: fails with INTERNAL after its repairs and fresh attempts", async () => {
    mock.on(ConverseCommand).resolves(fixture("converse-tool-malformed.json"));
    const model = new BedrockModel({ client, retry: fastRetry, freshAttempts: 2 });

    const err = await model.structured(request()).catch((e) => e);

    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("INTERNAL");
    expect(mock.commandCalls(ConverseCommand)).toHaveLength(4);
  });

  it("retries throttling with exponential backoff and jitter, then succeeds", async () => {
    mock
      .on(ConverseCommand)
      .rejectsOnce(new ThrottlingException({ message: "Too many requests, please wait before trying again.", $metadata: {} }))
      .rejectsOnce(new ServiceUnavailableException({ message: "Service unavailable", $metadata: {} }))
      .rejectsOnce(new ModelNotReadyException({ message: "Model not ready", $metadata: {} }))
      .resolvesOnce(fixture("converse-tool-good.json"));
    const spy = vi.spyOn(globalThis, "setTimeout");
    const model = new BedrockModel({ client, retry: { retries: 5, minTimeoutMs: 20, maxTimeoutMs: 1000 } });

    const { usage } = await model.structured(request());

    const delays = spy.mock.calls.map((c) => c[1] as number).filter((d) => d >= 20);
    spy.mockRestore();
    expect(usage.attempts).toBe(4);
    expect(usage.inputTokens).toBe(1234); // failed attempts carry no usage
    expect(delays).toHaveLength(3);
    // delay k (from 0) is in [20·2^k, 2·20·2^k): exponential with a random factor in [1, 2)
    delays.forEach((d, k) => {
      expect(d).toBeGreaterThanOrEqual(20 * 2 ** k);
      expect(d).toBeLessThan(2 * 20 * 2 ** k + 1);
    });
  });

  it("gives up on persistent throttling with SERVICE_UNAVAILABLE, and does not retry other errors", async () => {
    mock.on(ConverseCommand).rejects(new ThrottlingException({ message: "Too many requests", $metadata: {} }));
    const model = new BedrockModel({ client, retry: fastRetry });
    const err = await model.structured(request()).catch((e) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err.code).toBe("SERVICE_UNAVAILABLE");
    expect(mock.commandCalls(ConverseCommand)).toHaveLength(fastRetry.retries + 1);

    mock.reset();
    mock.on(ConverseCommand).rejects(new AccessDeniedException({ message: "no access", $metadata: {} }));
    const denied = await model.structured(request()).catch((e) => e);
    expect(denied).toBeInstanceOf(AccessDeniedException);
    expect(mock.commandCalls(ConverseCommand)).toHaveLength(1);
  });
});

describe("model ids and cost", () => {
  it("reads model ids per tier from the environment with defaults", () => {
    expect(modelIdsFromEnv({})).toEqual(DEFAULT_MODEL_IDS);
    expect(modelIdsFromEnv({ BEDROCK_MODEL_LARGE: "my-profile" }).large).toBe("my-profile");
    expect(new BedrockModel({ client: new BedrockRuntimeClient({ region: "us-east-1" }), modelIds: { mid: "x" } }).modelId("mid")).toBe("x");
  });

  it("prices tokens at the spec's per-tier rates", () => {
    expect(costUsd("small", 1_000_000, 1_000_000)).toBeCloseTo(4.8, 10);
    expect(costUsd("mid", 1_000_000, 0)).toBeCloseTo(3, 10);
    expect(costUsd("large", 2_000, 1_000)).toBeCloseTo((2_000 * 15 + 1_000 * 75) / 1e6, 12);
  });

  it("turns a zod schema into a tool input schema without $schema", () => {
    const json = toolInputSchema(z.object({ a: z.string(), b: z.array(z.number()).optional() }));
    expect(json).toMatchObject({ type: "object", required: ["a"], properties: { a: { type: "string" }, b: { type: "array" } } });
    expect(json.$schema).toBeUndefined();
  });
});

describe("BedrockEmbedder (Titan v2)", () => {
  const client = new BedrockRuntimeClient({ region: "us-east-1" });
  const mock = mockClient(client);
  beforeEach(() => mock.reset());
  afterEach(() => vi.useRealTimers());

  const titanBody = (dims: number, seed: number) => {
    const v = Array.from({ length: dims }, (_, i) => Math.sin(seed * 31 + i));
    const n = Math.hypot(...v);
    return new TextEncoder().encode(JSON.stringify({ embedding: v.map((x) => x / n), inputTextTokenCount: 7 }));
  };

  it("sends normalize:true and the dimension, returns unit vectors in input order with bounded concurrency", async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    mock.on(InvokeModelCommand).callsFake(async (input) => {
      inFlight++;
      maxInFlight = Math.max(maxInFlight, inFlight);
      await new Promise((r) => setTimeout(r, 5));
      inFlight--;
      const body = JSON.parse(input.body as string);
      return { body: titanBody(body.dimensions, body.inputText.length), contentType: "application/json" };
    });
    const emb = new BedrockEmbedder({ client, dimensions: 512, concurrency: 3, retry: fastRetry });
    const texts = Array.from({ length: 10 }, (_, i) => "x".repeat(i + 1));

    const out = await emb.embed(texts);

    expect(emb.id).toBe("bedrock:amazon.titan-embed-text-v2:0:512");
    expect(out).toHaveLength(10);
    out.forEach((v, i) => {
      expect(v).toBeInstanceOf(Float32Array);
      expect(v.length).toBe(512);
      expect(Math.hypot(...v)).toBeCloseTo(1, 5);
      expect(v[0]).toBeCloseTo(Math.sin((i + 1) * 31) / Math.hypot(...Array.from({ length: 512 }, (_, j) => Math.sin((i + 1) * 31 + j))), 5);
    });
    expect(maxInFlight).toBeLessThanOrEqual(3);
    expect(maxInFlight).toBeGreaterThan(1);
    const sent = JSON.parse(mock.commandCalls(InvokeModelCommand)[0].args[0].input.body as string);
    expect(sent).toMatchObject({ dimensions: 512, normalize: true });
    expect(mock.commandCalls(InvokeModelCommand)[0].args[0].input.modelId).toBe("amazon.titan-embed-text-v2:0");
    expect(emb.tokensUsed).toBe(70);
  });

  it("retries throttling and rejects a response of the wrong dimension", async () => {
    mock
      .on(InvokeModelCommand)
      .rejectsOnce(new ThrottlingException({ message: "slow down", $metadata: {} }))
      .resolves({ body: titanBody(1024, 1) as never });
    const emb = new BedrockEmbedder({ client, dimensions: 1024, retry: fastRetry });
    expect((await emb.embed(["hello"]))[0].length).toBe(1024);
    expect(mock.commandCalls(InvokeModelCommand)).toHaveLength(2);

    const small = new BedrockEmbedder({ client, dimensions: 256, retry: fastRetry });
    await expect(small.embed(["hello"])).rejects.toThrow(/1024 dimensions, expected 256/);
  });
});
