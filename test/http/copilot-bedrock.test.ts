/**
 * The copilot on the Bedrock engine, end to end (issue #18 points 1 to 4 and 7): the real stream handler through the
 * local gateway, the real Bedrock SDK client talking over a socket to a stand-in Bedrock Runtime that answers with
 * public recordings of real ConverseStream responses (test/fixtures/bedrock-recorded, whose README says where each
 * came from), and a real SSE client reading the wire.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { call, newWorkspace } from "../support/api";
import { liveGateway, readStream, type WireEvent } from "../support/sse";
import { recorded, refusedTurn, toolCallTurn, type Frame } from "../support/bedrock-stream";
import { startBedrockServer, type BedrockServer } from "../support/bedrock-server";
import { expectEnvelope } from "./_helpers";
import { topUp } from "../support/billing";
import { DEFAULT_CATALOGUE, modelCostUsd } from "../../core/ai/catalogue";
import { runsOf } from "../../core/agent";
import { acquireStreamSlot, MAX_STREAMS_PER_USER, prepareChat, type EventSink } from "../../core/agent/copilot";
import { QUERY_BUDGET_MS } from "../../core/agent/loop";
import * as Chat from "../../core/chat";
import { db } from "../../core/db/service";
import { storeFails } from "../support/store-faults";
import { creditsFor } from "../../core/billing/credits";
import { HISTORY_MAX_CHARS } from "../../core/ai/turns";

process.env.AI_ENGINE = "bedrock";
process.env.AWS_ACCESS_KEY_ID = "AKIDEXAMPLE";
process.env.AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
process.env.AWS_REGION = "us-east-1";

let bedrock: BedrockServer;
let gw: Awaited<ReturnType<typeof liveGateway>>;
let owner: Awaited<ReturnType<typeof newWorkspace>>["owner"];
let ws: string;

const opus = DEFAULT_CATALOGUE.find((m) => m.tier === "large")!;
const haiku = DEFAULT_CATALOGUE.find((m) => m.tier === "small")!;
const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name);

/** The recorded Sonnet 4 reasoning block (deltas, signature, stop), as Bedrock streamed it. */
const thinkingRecording = recorded("claude-sonnet-4-thinking-text.json");
const reasoningFrames = thinkingRecording.frames.filter((f) => {
  const b = f.body as { contentBlockIndex?: number };
  return f.type === "messageStart" || ((f.type === "contentBlockDelta" || f.type === "contentBlockStop") && b.contentBlockIndex === 0);
});
const recordedReasoning = reasoningFrames.flatMap((f) => ((f.body as any).delta?.reasoningContent?.text ? [(f.body as any).delta.reasoningContent.text as string] : [])).join("");
const recordedSignature = reasoningFrames.flatMap((f) => ((f.body as any).delta?.reasoningContent?.signature ? [(f.body as any).delta.reasoningContent.signature as string] : [])).join("");

/**
 * A thinking turn that calls a tool: the recorded reasoning block verbatim, then a tool block framed as the recorded
 * Sonnet 4 tool block (start with id and name, an empty first fragment, the input split mid-token) calling one of our
 * tools, then the recorded stop and usage. No public recording holds both in one stream (see the fixtures' README).
 */
function thinkingThenTool(name: string, input: Record<string, unknown>): Frame[] {
  const tool = recorded("claude-sonnet-4-text-then-tool-use.json").frames;
  const json = JSON.stringify(input);
  const cut = Math.max(1, Math.floor(json.length / 2));
  const start = tool.find((f) => f.type === "contentBlockStart")!.body as any;
  return [
    ...reasoningFrames,
    { type: "contentBlockStart", body: { ...start, start: { toolUse: { ...start.start.toolUse, name } } } },
    ...["", json.slice(0, cut), json.slice(cut)].map((piece) => ({ type: "contentBlockDelta", body: { contentBlockIndex: 1, delta: { toolUse: { input: piece } } } })),
    ...tool.filter((f) => f.type === "contentBlockStop" && (f.body as any).contentBlockIndex === 1),
    ...tool.filter((f) => f.type === "messageStop" || f.type === "metadata"),
  ];
}

/** One text turn as Bedrock streams it: the text in deltas of 4,000 characters, then the end of the turn and its usage. */
function textTurn(text: string, usage = { inputTokens: 1_200, outputTokens: 300 }): Frame[] {
  return [
    { type: "messageStart", body: { role: "assistant" } },
    ...(text.match(/[\s\S]{1,4000}/g) ?? []).map((piece) => ({ type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { text: piece } } })),
    { type: "contentBlockStop", body: { contentBlockIndex: 0 } },
    { type: "messageStop", body: { stopReason: "end_turn" } },
    { type: "metadata", body: { usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens }, metrics: { latencyMs: 800 } } },
  ];
}

const usageOf = (frames: Frame[]) => (frames.find((f) => f.type === "metadata")!.body as { usage: { inputTokens: number; outputTokens: number } }).usage;

beforeAll(async () => {
  bedrock = await startBedrockServer();
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = bedrock.url;
  gw = await liveGateway();
  const w = await newWorkspace("Copilot on Bedrock");
  owner = w.owner;
  ws = w.workspace.id;
  // Thinking on the large model reserves far more than a trial's credits.
  await topUp(owner.id, 1_000);
});
afterAll(async () => {
  await gw.close();
  await bedrock.close();
});

describe("extended thinking with a tool call (effort max)", () => {
  it("asks within Anthropic's rules and sends the signed reasoning back unchanged ahead of the tool call", async () => {
    const first = thinkingThenTool("workspace_summary", {});
    const second = recorded("claude-v2-text.json").frames;
    bedrock.reply({ frames: first }, { frames: second });
    const before = bedrock.requests.length;

    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "How far along is our research?", effort: "max" });

    const [req1, req2] = bedrock.requests.slice(before);
    // The large tier's model, which thinks; max_tokens above the 16,000-token budget, no temperature.
    expect(req1!.modelId).toBe(opus.id);
    expect(req1!.body.additionalModelRequestFields).toEqual({ thinking: { type: "enabled", budget_tokens: 16_000 } });
    expect(req1!.body.inferenceConfig).toEqual({ maxTokens: 16_000 + 4_096 });
    // The tool call goes back behind its reasoning block, text and signature exactly as streamed.
    const assistant = req2!.body.messages[1];
    expect(assistant.role).toBe("assistant");
    expect(assistant.content[0]).toEqual({ reasoningContent: { reasoningText: { text: recordedReasoning, signature: recordedSignature } } });
    expect(assistant.content[1].toolUse).toMatchObject({ name: "workspace_summary", input: {} });
    expect(req2!.body.messages[2].content[0].toolResult.status).toBe("success");
    expect(req2!.body.additionalModelRequestFields).toEqual(req1!.body.additionalModelRequestFields);

    expect(of(events, "thinking").map((e) => e.data.content).join("")).toBe(recordedReasoning);
    expect(of(events, "tool_result")[0]!.data).toMatchObject({ name: "workspace_summary", status: "success" });
    expect(events.map((e) => e.event)).not.toContain("retry");
    const done = events.at(-1)!;
    expect(done.event).toBe("done");
    expect(done.data.model).toBe(opus.id);

    // The message keeps the block whole; the run is costed at the called model's rates.
    const conv = await call("GET", `/api/chat/conversations/${done.data.conversation_id}`, { token: owner.token });
    const message = conv.body.messages.find((m: { id: string }) => m.id === done.data.message_id);
    expect(message.thinking_blocks).toEqual([{ type: "thinking", content: recordedReasoning, signature: recordedSignature }]);
    const run = (await runsOf(ws)).find((r) => r.agent_type === "chat" && (r.input_data as { conversation_id?: string }).conversation_id === done.data.conversation_id)!;
    const [u1, u2] = [usageOf(first), usageOf(second)];
    expect(run.cost_usd).toBeCloseTo(modelCostUsd(opus, u1.inputTokens + u2.inputTokens, u1.outputTokens + u2.outputTokens), 6);
  });

  it("keeps a recorded redacted reasoning block whole on the message (reasoning_mode deep)", async () => {
    const redacted = recorded("claude-3-7-sonnet-redacted-thinking-text.json");
    const blobs = redacted.frames.flatMap((f) => ((f.body as any).delta?.reasoningContent?.redactedContent ? [(f.body as any).delta.reasoningContent.redactedContent as string] : []));
    bedrock.reply({ frames: redacted.frames });
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Anything to flag?", reasoning_mode: "deep" });
    const done = events.at(-1)!;
    const conv = await call("GET", `/api/chat/conversations/${done.data.conversation_id}`, { token: owner.token });
    const message = conv.body.messages.find((m: { id: string }) => m.id === done.data.message_id);
    expect(message.thinking_blocks).toEqual(blobs.map((data) => ({ type: "redacted_thinking", data })));
  });
});

describe("the model catalogue (422 before any stream opens)", () => {
  it("refuses a model outside the catalogue, naming the allowed ids", async () => {
    const before = bedrock.requests.length;
    const res = await call("POST", "/api/stream/chat", { token: owner.token, body: { workspace_id: ws, prompt: "hi", model: "anthropic.claude-opus-4-1-20250805-v1:0-not-listed" } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    for (const m of DEFAULT_CATALOGUE) expect(res.body.detail).toContain(m.id);
    expect(res.body.errors[0].loc).toEqual(["body", "model"]);
    expect(bedrock.requests.length).toBe(before);
  });

  it("refuses thinking on a named model that cannot think, and bills a named model at its own rates", async () => {
    const res = await call("POST", "/api/stream/chat", { token: owner.token, body: { workspace_id: ws, prompt: "hi", model: haiku.id, effort: "max" } });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.detail).toContain("does not support extended thinking");

    const text = recorded("claude-v2-text.json").frames;
    bedrock.reply({ frames: text });
    const before = bedrock.requests.length;
    // effort low would be the small tier anyway; a named large model is what is called and what is billed.
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Say hello", model: opus.id, effort: "low" });
    expect(bedrock.requests[before]!.modelId).toBe(opus.id);
    const done = events.at(-1)!.data;
    const run = (await runsOf(ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === done.conversation_id)!;
    const u = usageOf(text);
    expect(run.cost_usd).toBeCloseTo(modelCostUsd(opus, u.inputTokens, u.outputTokens), 6);
    expect(run.model_id).toBe(opus.id);
  });

  it("a named model at an effort holds what the estimate's creditRangeHigh says, so blocked there is refused here and the reverse", async () => {
    const w = await newWorkspace("Effort on a named model");
    const estimate = async (q: Record<string, string>) =>
      (await call("GET", "/api/billing/estimate", { token: w.owner.token, query: { workspace_id: w.workspace.id, ...q } })).body;
    const low = await estimate({ model: opus.id, effort: "low" });
    const own = await estimate({ model: opus.id });
    // The large tier at effort low holds the low envelope at opus's rates; without an effort, the tier's own (high).
    expect(low.creditRangeHigh).toBeLessThan(own.creditRangeHigh);
    const between = Math.ceil(low.creditRangeHigh) + 1;
    expect(between).toBeLessThan(own.creditRangeHigh);
    if (low.remainingCredits < between) await topUp(w.owner.id, between - low.remainingCredits);
    expect(await estimate({ model: opus.id, effort: "low" })).toMatchObject({ remainingCredits: between, blocked: false });
    expect(await estimate({ model: opus.id })).toMatchObject({ remainingCredits: between, blocked: true });

    // The stream holds the same: a low-effort ask opens (it used to hold the tier's own 45 and be refused), one with no effort does not.
    bedrock.reply({ frames: recorded("claude-v2-text.json").frames });
    const events = await readStream(gw.base, "/api/stream/chat", w.owner.token, { workspace_id: w.workspace.id, prompt: "Say hello", model: opus.id, effort: "low" });
    expect(events.at(-1)!.event).toBe("done");
    const refused = await call("POST", "/api/stream/chat", { token: w.owner.token, body: { workspace_id: w.workspace.id, prompt: "Say hello", model: opus.id } });
    expectEnvelope(refused, 402, "USAGE_LIMIT_EXCEEDED");
    expect(refused.body.reason).toBe("credits_exhausted");
  });
});

describe("history that earlier runs left behind", () => {
  it("sends alternating turns without blank text, whatever the stored conversation holds", async () => {
    // A conversation as older builds left it: an empty answer (a run aborted before any text) and a prompt that
    // never got an answer (a crash after the user's message).
    const conversation = await Chat.openConversation(owner.id, ws, undefined, "First question");
    await Chat.appendMessage(conversation, { role: "user", content: "First question" });
    await Chat.appendMessage(conversation, { role: "assistant", content: "" });
    await Chat.appendMessage(conversation, { role: "user", content: "Second question, never answered" });
    bedrock.reply({ frames: recorded("claude-v2-text.json").frames });
    const before = bedrock.requests.length;

    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Third question", conversation_id: conversation.id });

    expect(events.at(-1)!.event).toBe("done");
    const { messages, toolConfig } = bedrock.requests[before]!.body;
    expect(messages.map((m: { role: string }) => m.role)).toEqual(["user"]);
    expect(messages[0].content.map((c: { text: string }) => c.text)).toEqual(["First question", "Second question, never answered", "Third question"]);
    for (const m of messages) for (const c of m.content) if ("text" in c) expect(c.text.trim()).not.toBe("");
    expect(toolConfig.tools.length).toBeGreaterThan(0);
  });
});

describe("the plan's chat-history window (spec 02 Limits: Plans)", () => {
  /** Move a stored message (and the conversation's last activity) `days` into the past. */
  async function age(conversation: { id: string; workspace_id: string }, messageId: string, days: number, touchConversation: boolean) {
    const e = db().entities;
    const stored = (await e.message.query.byConversation({ workspace_id: conversation.workspace_id, conversation_id: conversation.id }).go({ consistent: true })).data.find((m) => m.id === messageId)!;
    const old = new Date(Date.now() - days * 86_400_000).toISOString();
    await e.message.delete({ workspace_id: stored.workspace_id, conversation_id: stored.conversation_id, created_at: stored.created_at, id: stored.id }).go();
    await e.message.create({ ...stored, created_at: old }).go();
    if (touchConversation) await e.conversation.patch({ workspace_id: conversation.workspace_id, id: conversation.id }).set({ last_message_at: old }).go();
  }

  it("a conversation last active before the window cannot be continued (404, as reading it answers), and older messages of one inside it never reach the model", async () => {
    const days = (await Chat.historyWindow(ws)).days;
    const stale = await Chat.openConversation(owner.id, ws, undefined, "Old question");
    const staleMessage = await Chat.appendMessage(stale, { role: "user", content: "Old question" });
    await age(stale, staleMessage.id, days + 10, true);
    expectEnvelope(await call("GET", `/api/chat/conversations/${stale.id}`, { token: owner.token }), 404, "NOT_FOUND");
    const before = bedrock.requests.length;
    const refused = await call("POST", "/api/stream/chat", { token: owner.token, body: { workspace_id: ws, prompt: "Go on", conversation_id: stale.id } });
    expectEnvelope(refused, 404, "NOT_FOUND");
    expect(bedrock.requests.length).toBe(before);

    const mixed = await Chat.openConversation(owner.id, ws, undefined, "Expired question");
    const expired = await Chat.appendMessage(mixed, { role: "user", content: "Expired question about exports" });
    await age(mixed, expired.id, days + 10, false);
    await Chat.appendMessage(mixed, { role: "user", content: "A recent question about onboarding" });
    await Chat.appendMessage(mixed, { role: "assistant", content: "A recent answer about onboarding" });
    bedrock.reply({ frames: recorded("claude-v2-text.json").frames });
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "And then?", conversation_id: mixed.id });
    expect(events.at(-1)!.event).toBe("done");
    const texts = (bedrock.requests[before]!.body.messages as { content: { text?: string }[] }[]).flatMap((m) => m.content.flatMap((c) => (c.text ? [c.text] : [])));
    expect(texts.some((t) => t.includes("A recent answer about onboarding"))).toBe(true);
    expect(texts.some((t) => t.includes("Expired question"))).toBe(false);
  });
});

describe("a client that leaves, and the 300 s budget", () => {
  it("a disconnect over the wire stops the model call and the run is charged as cancelled", async () => {
    // Two text deltas, then the stand-in holds the stream open as a slow model would.
    bedrock.reply({ frames: recorded("claude-v2-text.json").frames, holdAfter: 3 });
    const before = bedrock.requests.length;

    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Tell me a long story" }, { onEvent: (e, close) => e.event === "token" && close() });

    expect(of(events, "token").length).toBeGreaterThan(0);
    const seen = bedrock.requests[before]!;
    await seen.closed; // resolves only if the SDK's connection was torn down before the reply ended
    expect(seen.wasClosedEarly()).toBe(true);
    await vi.waitFor(async () => {
      const runs = await runsOf(ws);
      const run = runs.find((r) => (r.input_data as { prompt?: string }).prompt === "Tell me a long story");
      expect(run).toMatchObject({ status: "partial" });
      // The cut call was accepted and generated: it is charged at its estimated use (at least the 0.25 minimum).
      expect(run!.tokens_used).toBeGreaterThan(0);
      expect(run!.cost_usd).toBeGreaterThan(0);
      expect(run!.credits_charged).toBeGreaterThanOrEqual(0.25);
    }, { timeout: 10_000, interval: 100 });
    // What the run left: the prompt and a readable answer in the conversation, and every stream slot free again.
    await vi.waitFor(async () => {
      const list = await call("GET", "/api/chat/conversations", { token: owner.token, query: { workspace_id: ws, limit: "100" } });
      const found = (list.body.conversations as { id: string; title: string }[]).find((c) => c.title === "Tell me a long story")!;
      const conv = await call("GET", `/api/chat/conversations/${found.id}`, { token: owner.token });
      expect(conv.body.messages.map((m: { role: string }) => m.role)).toEqual(["user", "assistant"]);
      expect(conv.body.messages[1].content.length).toBeGreaterThan(0);
    }, { timeout: 10_000, interval: 100 });
    await vi.waitFor(async () => {
      const slots = await Promise.all(Array.from({ length: MAX_STREAMS_PER_USER }, () => acquireStreamSlot(owner.id)));
      await Promise.all(slots.map((release) => release()));
    }, { timeout: 10_000, interval: 100 });
  });

  it("ends a run past 300 s with error TIMEOUT then done, and stops the model call (fake timers)", async () => {
    bedrock.reply({ frames: recorded("claude-v2-text.json").frames, holdAfter: 1 });
    const before = bedrock.requests.length;
    const sent: { event: string; data: any }[] = [];
    const client = new AbortController();
    const sink: EventSink = { token: (t) => sent.push({ event: "token", data: { content: t } }), send: (event, data) => sent.push({ event, data }), signal: client.signal };
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    try {
      const prepared = await prepareChat(owner.id, { workspace_id: ws, prompt: "Think about everything", max_turns: 5, attachment_ids: [] } as never);
      const running = prepared.run(sink).finally(() => prepared.release());
      await vi.waitFor(() => expect(bedrock.requests.length).toBe(before + 1), { timeout: 10_000, interval: 20 });
      await vi.advanceTimersByTimeAsync(QUERY_BUDGET_MS);
      await running;
    } finally {
      vi.useRealTimers();
    }
    const names = sent.map((e) => e.event);
    expect(names.slice(-3)).toEqual(["error", "context_metrics", "done"]);
    expect(sent.at(-3)!.data).toEqual({ code: "TIMEOUT", message: `The query ran past its ${QUERY_BUDGET_MS / 1000} s budget` });
    await bedrock.requests[before]!.closed;
    const done = sent.at(-1)!.data;
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token: owner.token });
    const answer = conv.body.messages.find((m: { id: string }) => m.id === done.message_id);
    expect(answer.content).toBe("Stopped before answering: the query ran past its 300 s budget.");
  });
});

describe("a finished answer the budget overtakes during its quality rewrite", () => {
  it("is the answer the conversation keeps, with error TIMEOUT (it stored the rewrite's fragment or a stop notice)", async () => {
    // A block quote that cites nothing fails the answer's contract: the harness asks the model to rewrite it.
    const first = "Users keep describing the same problem:\n\n> I keep getting sent back to the login screen\n\nSign-in is the top complaint.";
    // The rewrite's model call sends its start and one text delta, then holds as a slow model would.
    bedrock.reply({ frames: textTurn(first) }, { frames: recorded("claude-v2-text.json").frames, holdAfter: 2 });
    const before = bedrock.requests.length;
    let events: WireEvent[];
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    try {
      const reading = readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "What do users say about signing in?", model: haiku.id, effort: "low" }, { timeoutMs: 2 * QUERY_BUDGET_MS });
      await vi.waitFor(() => expect(bedrock.requests.length).toBe(before + 2), { timeout: 20_000, interval: 20 });
      await vi.advanceTimersByTimeAsync(QUERY_BUDGET_MS);
      events = await reading;
    } finally {
      vi.useRealTimers();
    }
    await bedrock.requests[before + 1]!.closed; // the rewrite's model call was stopped
    expect(of(events, "harness_retry").map((e) => e.data)).toEqual([expect.objectContaining({ kind: "quality", rewrites_answer: true })]);
    expect(of(events, "error").map((e) => e.data)).toEqual([{ code: "TIMEOUT", message: `The query ran past its ${QUERY_BUDGET_MS / 1000} s budget` }]);
    const done = events.at(-1)!.data;
    expect(done.num_turns).toBeGreaterThan(0);
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token: owner.token });
    const answer = conv.body.messages.find((m: { id: string }) => m.id === done.message_id);
    expect(answer.content).toBe(first);
  });
});

describe("an answer longer than a message may be", () => {
  it("is stored cut to 100,000 characters with a marker after the client received it whole (it was refused, 422, and lost)", async () => {
    const long = "Sign-in loops after every update are the top complaint. ".repeat(2_200); // 123,200 characters
    bedrock.reply({ frames: textTurn(long) });
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Tell me everything about sign-in", model: haiku.id, effort: "low" });
    expect(of(events, "token").map((e) => e.data.content).join("")).toBe(long);
    expect(of(events, "error")).toEqual([]);
    const done = events.at(-1)!.data;
    expect(done.message_id).toBeTruthy();
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token: owner.token });
    const answer = conv.body.messages.find((m: { id: string }) => m.id === done.message_id);
    expect(answer.role).toBe("assistant");
    expect(answer.content.length).toBeLessThanOrEqual(100_000);
    expect(long.startsWith(answer.content.slice(0, 90_000))).toBe(true);
    expect(answer.content).toMatch(/\[Answer cut to fit the message: \d+ more characters\]$/);
  });
});

describe("a run that fails after some model calls", () => {
  it("is recorded and charged with the calls it made (it was recorded at 0 tokens, 0 cost, 0 credits)", async () => {
    // A tool call, then the second call refused in its stream (not transient: no retry), and the run fails.
    const toolTurn = toolCallTurn("tooluse_fail_1", "search_insights", { query: "sign-in", limit: 3 }, { inputTokens: 3800, outputTokens: 70 });
    bedrock.reply({ frames: toolTurn }, { frames: refusedTurn() });
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Search sign-in problems", model: haiku.id, effort: "low" });
    expect(of(events, "error")).toHaveLength(1);
    const done = events.at(-1)!.data;
    const run = (await runsOf(ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === done.conversation_id)!;
    expect(run).toMatchObject({ status: "failed", tokens_used: 3870 });
    expect(run.cost_usd).toBeCloseTo(modelCostUsd(haiku, 3800, 70), 6);
    // Spec 02: failed with cost, at least 0.25, and the metered cost (0.5-credit steps).
    expect(run.credits_charged).toBe(creditsFor(modelCostUsd(haiku, 3800, 70), "failed"));
    expect(run.credits_charged).toBeGreaterThan(0);
  });

  it("whose settlement fails once is settled again with the calls it made, not at 0", async () => {
    const toolTurn = toolCallTurn("tooluse_fail_2", "search_insights", { query: "sign-in", limit: 3 }, { inputTokens: 3800, outputTokens: 70 });
    bedrock.reply({ frames: toolTurn }, { frames: refusedTurn() });
    // The run's own settlement (its ledger transaction) fails once; the stream's retry settles it.
    const fault = storeFails(/^TransactWriteItems/, "#settle", 1);
    let events: WireEvent[];
    try {
      events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Search sign-in problems again", model: haiku.id, effort: "low" });
    } finally {
      fault.remove();
    }
    expect(fault.failed()).toBe(1);
    expect(of(events, "error")).toHaveLength(1);
    // Spec 02: failed with cost, at least 0.25, and the metered cost.
    expect(events.at(-1)!.data.credits).toBe(creditsFor(modelCostUsd(haiku, 3800, 70), "failed"));
  });
});

describe("a conversation longer than the model's context window allows", () => {
  it("hands the model only its newest messages within the history budget (it sent all 20, up to 2,000,000 characters)", async () => {
    const conv = (await call("POST", "/api/chat/conversations", { token: owner.token, body: { workspace_id: ws } })).body;
    const key = { id: conv.id as string, workspace_id: ws, user_id: owner.id };
    // 12 stored messages of 40,000 characters each: 480,000 characters, past any Claude model's window with the rest.
    for (let i = 0; i < 12; i++) await Chat.appendMessage(key, { role: i % 2 ? "assistant" : "user", content: `message ${i}: ${"words of research ".repeat(2_222)}`.slice(0, 40_000) });
    bedrock.reply({ frames: recorded("claude-v2-text.json").frames });
    const before = bedrock.requests.length;
    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, conversation_id: conv.id, prompt: "And what next?", model: haiku.id, effort: "low" });
    expect(events.at(-1)!.event).toBe("done");
    expect(of(events, "error")).toEqual([]);
    const sent = bedrock.requests[before]!.body.messages as { role: string; content: { text?: string }[] }[];
    const texts = sent.flatMap((m) => m.content.flatMap((c) => (c.text ? [c.text] : [])));
    expect(texts.join("").length).toBeLessThanOrEqual(HISTORY_MAX_CHARS + 10_000);
    // The newest stored messages and the prompt are there; the oldest are not.
    expect(texts.some((t) => t.startsWith("message 11:"))).toBe(true);
    expect(texts.some((t) => t.startsWith("message 0:"))).toBe(false);
    expect(texts.at(-1)).toContain("And what next?");
    expect(sent[0]!.role).toBe("user");
  });
});

describe("a run whose model fails after it queued an action", () => {
  it("stores the message with the run's steps and pending action id beside the error (it stored steps: [] and pending_action_ids: [])", async () => {
    const toolTurn = toolCallTurn(
      "tooluse_partial_1",
      "create_insight",
      { insight_type: "pain_point", title: "Export is hard to find", description: "Users cannot find export.", severity: "medium" },
      { inputTokens: 3000, outputTokens: 60 },
    );
    // The second call is refused in its stream (not transient: no retry), and the run fails.
    bedrock.reply({ frames: toolTurn }, { frames: refusedTurn() });

    const events = await readStream(gw.base, "/api/stream/chat", owner.token, { workspace_id: ws, prompt: "Record that export is hard to find", model: haiku.id, effort: "low" });

    const queued = of(events, "tool_result")[0]!.data as { status: string; pending_action_id: string };
    expect(queued.status).toBe("queued");
    expect(of(events, "error")).toHaveLength(1);
    const done = events.at(-1)!.data;
    expect(done.tool_count).toBe(1);
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token: owner.token });
    const message = conv.body.messages.find((m: { id: string }) => m.id === done.message_id);
    expect(message.execution_metadata).toMatchObject({ stop_reason: "error", num_turns: 2, pending_action_ids: [queued.pending_action_id] });
    expect(message.execution_metadata.steps).toMatchObject([{ name: "create_insight", status: "queued", pending_action_id: queued.pending_action_id }]);
    expect(message.content).toMatch(/^I could not finish: /);
  });
});
