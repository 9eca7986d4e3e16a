/**
 * AI_ENGINE=openai-compatible end to end through core/ai/select.ts: the settings (core/config.ts), the one-sentence
 * errors for missing ones, and the three ports talking real HTTP to a local server that answers with the recorded
 * bodies of test/fixtures/openai (as Ollama or vLLM would on 127.0.0.1).
 */
import { once } from "node:events";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { ChatCompletionCreateParams } from "openai/resources/chat/completions";
import type { EmbeddingCreateParams } from "openai/resources/embeddings";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import type { ModelStreamEvent } from "../../../core/ai/ports";
import { fixtureText } from "../../fixtures/openai/fake-server";

const KEYS = [
  "AI_ENGINE",
  "OPENAI_BASE_URL",
  "OPENAI_MODEL",
  "OPENAI_API_KEY",
  "OPENAI_EMBEDDING_MODEL",
  "OPENAI_INPUT_USD_PER_1M_TOKENS",
  "OPENAI_OUTPUT_USD_PER_1M_TOKENS",
] as const;
const saved = Object.fromEntries(KEYS.map((k) => [k, process.env[k]]));

/** A fresh copy of select.ts (it memoizes the ports per process). */
const load = async () => {
  vi.resetModules();
  return import("../../../core/ai/select");
};

beforeEach(() => {
  for (const k of KEYS) delete process.env[k];
});
afterEach(() => {
  for (const k of KEYS) {
    if (saved[k] === undefined) delete process.env[k];
    else process.env[k] = saved[k];
  }
});

describe("choosing the engine", () => {
  it("reads AI_ENGINE; anything else is local; both model engines take the model paths", async () => {
    const { aiEngine, isModelEngine } = await load();
    expect(aiEngine()).toBe("local");
    process.env.AI_ENGINE = "openai-compatible";
    expect(aiEngine()).toBe("openai-compatible");
    expect(isModelEngine()).toBe(true);
    process.env.AI_ENGINE = "bedrock";
    expect(isModelEngine()).toBe(true);
    process.env.AI_ENGINE = "openai";
    expect(aiEngine()).toBe("local");
    expect(isModelEngine()).toBe(false);
  });

  it("fails with one sentence naming the missing setting", async () => {
    const { checkAiSettings, model, streamingModel } = await load();
    process.env.AI_ENGINE = "openai-compatible";
    expect(() => checkAiSettings()).toThrow(
      "AI_ENGINE=openai-compatible needs OPENAI_BASE_URL, the model server's OpenAI-compatible API address (for Ollama: http://127.0.0.1:11434/v1).",
    );
    await expect(model()).rejects.toThrow(/needs OPENAI_BASE_URL/);
    process.env.OPENAI_BASE_URL = "127.0.0.1:11434";
    expect(() => checkAiSettings()).toThrow('OPENAI_BASE_URL must be an http(s) URL such as http://127.0.0.1:11434/v1, not "127.0.0.1:11434".');
    process.env.OPENAI_BASE_URL = "http://127.0.0.1:11434/v1";
    expect(() => checkAiSettings()).toThrow(
      "AI_ENGINE=openai-compatible needs OPENAI_MODEL, the name of a chat model with tool calling that the server runs (for Ollama, e.g. qwen2.5:7b-instruct).",
    );
    await expect(streamingModel()).rejects.toThrow(/needs OPENAI_MODEL/);
    // A failure is not memoized: once the setting is there, the port loads.
    process.env.OPENAI_MODEL = "qwen2.5:7b-instruct";
    expect(() => checkAiSettings()).not.toThrow();
    expect((await streamingModel()).engine).toBe("openai-compatible");
    expect(await model()).not.toBeNull();
  });

  it("leaves the other engines' settings alone", async () => {
    const { checkAiSettings, model } = await load();
    expect(() => checkAiSettings()).not.toThrow();
    expect(await model()).toBeNull();
  });
});

describe("the ports against a model server on 127.0.0.1", () => {
  let server: Server;
  let base: string;
  const seen: { path: string; authorization?: string; body: any }[] = [];

  const readBody = async (req: IncomingMessage) => {
    const parts: Buffer[] = [];
    for await (const p of req) parts.push(p as Buffer);
    return JSON.parse(Buffer.concat(parts).toString("utf8"));
  };

  beforeAll(async () => {
    server = createServer(async (req, res) => {
      const body = await readBody(req);
      seen.push({ path: req.url ?? "", authorization: req.headers.authorization, body });
      if (req.url === "/v1/chat/completions") {
        const chat = body as ChatCompletionCreateParams;
        if (chat.stream) {
          res.writeHead(200, { "content-type": "text/event-stream" });
          // Written in pieces, as a server flushes tokens.
          const text = fixtureText("stream-text-then-tool.sse");
          for (let i = 0; i < text.length; i += 64) res.write(text.slice(i, i + 64));
          return res.end();
        }
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(fixtureText("chat-tool-good.json"));
      }
      if (req.url === "/v1/embeddings") {
        const input = (body as EmbeddingCreateParams).input as string[];
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(
          JSON.stringify({
            object: "list",
            data: input.map((t, index) => ({ object: "embedding", index, embedding: Array.from({ length: 8 }, (_, i) => (i === t.length % 8 ? 2 : 0)) })),
            model: (body as EmbeddingCreateParams).model,
            usage: { prompt_tokens: input.length, total_tokens: input.length },
          }),
        );
      }
      res.writeHead(404, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: `no route ${req.url}` } }));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));
  beforeEach(() => {
    seen.length = 0;
    process.env.AI_ENGINE = "openai-compatible";
    process.env.OPENAI_BASE_URL = base;
    process.env.OPENAI_MODEL = "qwen2.5-7b-instruct";
  });

  it("model(): structured output with the key as a bearer token and the configured prices", async () => {
    process.env.OPENAI_API_KEY = "sk-local-test";
    process.env.OPENAI_INPUT_USD_PER_1M_TOKENS = "1";
    process.env.OPENAI_OUTPUT_USD_PER_1M_TOKENS = "2";
    const { model } = await load();
    const m = (await model())!;

    const { output, usage } = await m.structured({
      tier: "mid",
      system: "Classify the feedback.",
      messages: [{ role: "user", text: "I keep getting signed out." }],
      tool: {
        name: "classify_feedback",
        description: "Record the classification.",
        schema: z.object({ label: z.string(), summary: z.string(), confidence: z.number() }),
      },
    });

    expect(output.label).toBe("pain_point");
    expect(usage).toMatchObject({ modelId: "qwen2.5-7b-instruct", inputTokens: 412, outputTokens: 61 });
    expect(usage.costUsd).toBeCloseTo((412 * 1 + 61 * 2) / 1e6, 12);
    expect(seen[0]).toMatchObject({ path: "/v1/chat/completions", authorization: "Bearer sk-local-test", body: { model: "qwen2.5-7b-instruct" } });
  });

  it("streamingModel(): the copilot's stream, without an Authorization header when no key is set", async () => {
    const { streamingModel } = await load();
    const s = await streamingModel();
    expect(s.engine).toBe("openai-compatible");

    const events: ModelStreamEvent[] = [];
    for await (const ev of s.stream({ tier: "mid", system: "You are the copilot.", messages: [{ role: "user", content: [{ type: "text", text: "Sign-outs?" }] }], tools: [] })) {
      events.push(ev);
    }

    expect(events.map((e) => e.type)).toEqual(["text", "text", "text", "tool_call", "stop"]);
    expect(seen[0].authorization).toBeUndefined();
    expect(seen[0].body.stream).toBe(true);
  });

  it("embedder(): the local embedder without OPENAI_EMBEDDING_MODEL, the server's model with it", async () => {
    let { embedder } = await load();
    expect((await embedder()).id).toBe("local:use-lite:512");
    expect(seen).toHaveLength(0);

    process.env.OPENAI_EMBEDDING_MODEL = "nomic-embed-text";
    ({ embedder } = await load());
    const emb = await embedder();
    expect(emb.id).toBe("openai-compatible:nomic-embed-text:8");
    const [v] = await emb.embed(["abc"]);
    expect(Array.from(v)).toEqual([0, 0, 0, 1, 0, 0, 0, 0]);
    expect(seen.map((r) => r.path)).toEqual(["/v1/embeddings", "/v1/embeddings"]);
  });
});
