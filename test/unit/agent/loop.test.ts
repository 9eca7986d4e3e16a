/**
 * The agent loop (core/agent/loop.ts) with both engines: Bedrock over recorded-shaped ConverseStream output fed at the
 * HTTP layer (the SDK's decoder runs), and the local engine; the tools run for real against DynamoDB Local.
 */
import { beforeAll, describe, expect, it, vi } from "vitest";
import * as z from "zod";
import { serviceLog } from "../../../core/log";
import type { ReadTool } from "../../../core/agent/tools/types";
import { partialRunOf, RUN_CONTEXT_MAX_BYTES, runAgent, type AgentEvent } from "../../../core/agent/loop";
import { LocalAgentModel } from "../../../core/agent/local-engine";
import { TOOLS, type ToolContext } from "../../../core/agent/tools";
import { MODEL_RATES, type ConversationTurn, type ModelStreamEvent, type StreamingModel } from "../../../core/ai/ports";
import { call, newWorkspace } from "../../support/api";
import { setup, stream, type Frame } from "../../support/bedrock-stream";

let ctx: ToolContext;
let token: string;
let insightId: string;

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Loop");
  token = owner.token;
  ctx = { userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [] };
  const res = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: workspace.id, insight_type: "pain_point", title: "Users are signed out after every update", description: "Sign-in loops after updates.", severity: "high" },
  });
  insightId = res.body.id;
});

/** A Converse stream that calls one tool, its input split in fragments as Bedrock sends it. */
function toolCall(id: string, name: string, input: Record<string, unknown>, usage = { inputTokens: 1000, outputTokens: 50 }): Frame[] {
  const json = JSON.stringify(input);
  const cut = Math.max(1, Math.floor(json.length / 2));
  return [
    { type: "messageStart", body: { role: "assistant" } },
    { type: "contentBlockStart", body: { contentBlockIndex: 0, start: { toolUse: { toolUseId: id, name } } } },
    { type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { toolUse: { input: json.slice(0, cut) } } } },
    { type: "contentBlockDelta", body: { contentBlockIndex: 0, delta: { toolUse: { input: json.slice(cut) } } } },
    { type: "contentBlockStop", body: { contentBlockIndex: 0 } },
    { type: "messageStop", body: { stopReason: "tool_use" } },
    { type: "metadata", body: { usage: { ...usage, totalTokens: usage.inputTokens + usage.outputTokens }, metrics: { latencyMs: 900 } } },
  ];
}

const prompt = (text: string): ConversationTurn[] => [{ role: "user", content: [{ type: "text", text }] }];

async function run(model: Parameters<typeof runAgent>[0]["model"], text: string, maxTurns = 5, signal = new AbortController().signal) {
  const events: AgentEvent[] = [];
  const result = await runAgent({ model, ctx, system: "You are the copilot.", messages: prompt(text), tools: TOOLS, tier: "small", maxTurns, signal, emit: (e) => events.push(e) });
  return { result, events, names: events.map((e) => e.event) };
}

describe("runAgent with Bedrock (recorded streams at the HTTP layer)", () => {
  it("runs a read tool, hands its result back, streams thinking and text, and sums usage and cost over calls", async () => {
    const { http, model } = setup([{ frames: toolCall("tooluse_1", "search_insights", { query: "signed out", limit: 5 }) }, { frames: stream("thinking-then-text.json") }]);

    const { result, events, names } = await run(model, "Why are users signed out?");

    expect(names.filter((n) => n !== "token" && n !== "thinking")).toEqual(["tool_use", "tool_result", "turn", "turn"]);
    expect(events.find((e) => e.event === "tool_result")!.data).toMatchObject({ name: "search_insights", status: "success" });
    expect(result.thinking.join("")).toContain("launch time comes first");
    expect(result.text).toBe("Fix launch times first: they hurt three times as many users as sign-outs.");
    expect(result).toMatchObject({ numTurns: 2, status: "success", stopReason: "end_turn" });
    // The second request carries the tool call and its result, as Converse expects.
    const second = http.requests[1]!.body;
    expect(second.messages[1].content[0].toolUse).toMatchObject({ toolUseId: "tooluse_1", name: "search_insights", input: { query: "signed out", limit: 5 } });
    const toolResult = second.messages[2].content[0].toolResult;
    expect(toolResult.toolUseId).toBe("tooluse_1");
    expect(JSON.stringify(toolResult.content)).toContain(insightId);
    expect(second.toolConfig.tools.map((t: any) => t.toolSpec.name)).toEqual(TOOLS.map((t) => t.name));
    const last = stream("thinking-then-text.json").find((f) => f.type === "metadata")!.body as { usage: { inputTokens: number; outputTokens: number } };
    const inTok = 1000 + last.usage.inputTokens;
    const outTok = 50 + last.usage.outputTokens;
    expect(result.usage).toMatchObject({ inputTokens: inTok, outputTokens: outTok, calls: 2 });
    expect(result.usage.costUsd).toBeCloseTo((inTok * MODEL_RATES.small.input + outTok * MODEL_RATES.small.output) / 1e6, 10);
  });

  it("queues a gated write as a pending action and tells the model it is queued", async () => {
    const { http, model } = setup([
      { frames: toolCall("tooluse_2", "create_insight", { insight_type: "pain_point", title: "Export is hidden", description: "Users cannot find export.", severity: "medium" }) },
      { frames: stream("text-only.json") },
    ]);

    const { result, events } = await run(model, "Record that export is hidden");

    const queued = events.find((e) => e.event === "tool_result")!.data as { status: string; pending_action_id: string };
    expect(queued.status).toBe("queued");
    expect(result.pendingActionIds).toEqual([queued.pending_action_id]);
    const handedBack = http.requests[1]!.body.messages[2].content[0].toolResult;
    expect(JSON.stringify(handedBack.content)).toContain(`"status":"queued"`);
    const pa = await call("GET", `/api/pending-actions/${queued.pending_action_id}`, { token });
    expect(pa.body).toMatchObject({ status: "pending", toolName: "create_insight" });
    const list = await call("GET", "/api/insights", { token, query: { workspace_id: ctx.workspaceId } });
    expect(list.body.insights.map((i: { title: string }) => i.title)).not.toContain("Export is hidden");
  });

  it("hands an unknown tool or invalid input back to the model as an error result", async () => {
    const { http, model } = setup([
      { frames: toolCall("tooluse_3", "delete_workspace", {}) },
      { frames: toolCall("tooluse_4", "get_insight", { insight_id: "not-a-uuid" }) },
      { frames: stream("text-only.json") },
    ]);

    const { result } = await run(model, "Clean up");

    expect(result.steps.map((s) => [s.name, s.status])).toEqual([["delete_workspace", "error"], ["get_insight", "error"]]);
    expect(http.requests[1]!.body.messages[2].content[0].toolResult.status).toBe("error");
    expect(JSON.stringify(http.requests[2]!.body.messages[4].content[0].toolResult.content)).toContain("insight_id");
  });

  it("reports a throttled model call's retry as harness_retry of kind transient (the harness's quality retry is kind quality)", async () => {
    const { model } = setup([{ status: 429, errorType: "ThrottlingException", message: "Too many requests, please wait before trying again." }, { frames: stream("text-only.json") }]);
    const { events, result } = await run(model, "Hello");
    const retry = events.find((e) => e.event === "harness_retry")!.data as Record<string, unknown>;
    expect(retry).toMatchObject({ kind: "transient", attempt: 2, reason: expect.stringContaining("ThrottlingException") });
    expect(result.status).toBe("success");
    // The run's transcript ends with the answer, ready for a repair turn to follow.
    expect(result.messages.at(-1)).toMatchObject({ role: "assistant", content: [{ type: "text", text: result.text }] });
  });

  it("stops at max_turns as partial", async () => {
    const { model } = setup([{ frames: toolCall("tooluse_5", "workspace_summary", {}) }]);
    const { result } = await run(model, "Overview", 1);
    expect(result).toMatchObject({ numTurns: 1, status: "partial", stopReason: "max_turns", text: "" });
  });

  it("ends as partial when aborted mid-stream (client gone), without throwing", async () => {
    const frames = stream("text-only.json");
    const { model } = setup([{ frames, holdAfter: 3 }]);
    const controller = new AbortController();
    const events: AgentEvent[] = [];
    const pending = runAgent({
      model, ctx, system: "s", messages: prompt("Hi"), tools: TOOLS, tier: "small", maxTurns: 3, signal: controller.signal,
      emit: (e) => {
        events.push(e);
        if (e.event === "token") controller.abort(new Error("client disconnected"));
      },
    });
    const result = await pending;
    expect(result).toMatchObject({ status: "partial", stopReason: "aborted" });
    const tokens = events.flatMap((e) => (e.event === "token" ? [e.data.content] : []));
    expect(tokens.length).toBeGreaterThan(0);
    // The interrupted turn's text is the run's, as the client saw it (it was dropped with the turn).
    expect(result.text).toBe(tokens.join(""));
  });

  it("keeps what a run did before a model error on the error: its text, steps and pending action ids", async () => {
    const { model } = setup([
      { frames: toolCall("tooluse_6", "create_insight", { insight_type: "pain_point", title: "Search is slow", description: "Results take seconds.", severity: "low" }) },
      { status: 400, errorType: "ValidationException", message: "Input is too long for requested model." },
    ]);
    const events: AgentEvent[] = [];
    const error = await runAgent({ model, ctx, system: "s", messages: prompt("Record that search is slow"), tools: TOOLS, tier: "small", maxTurns: 5, signal: new AbortController().signal, emit: (e) => events.push(e) }).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(error).toBeDefined();
    const queued = events.find((e) => e.event === "tool_result")!.data as { pending_action_id: string };
    expect(partialRunOf(error)).toMatchObject({ status: "partial", stopReason: "error", numTurns: 2, pendingActionIds: [queued.pending_action_id], steps: [{ name: "create_insight", status: "queued" }] });
    expect(partialRunOf(new Error("not from a run"))).toBeUndefined();
  });
});

describe("runAgent with the local engine", () => {
  it("searches, then answers only from the tool result with the insight's id", async () => {
    const { result, names } = await run(new LocalAgentModel(), "What do users struggle with after an update?");
    expect(names.filter((n) => n !== "token")).toEqual(["tool_use", "tool_result", "turn", "turn"]);
    expect(result.steps[0]).toMatchObject({ name: "search_insights", status: "success" });
    expect(result.text).toContain(`[insight ${insightId}]`);
    expect(result.usage.costUsd).toBe(0);
  });

  it("never chooses a write on similarity alone: a prompt with no write cue only reads", async () => {
    const { result } = await run(new LocalAgentModel(), "Tell me about the things people mention");
    // It did run a tool (a read), so the check below is about what it ran, not about running nothing.
    expect(result.steps.length).toBeGreaterThan(0);
    expect(result.steps.every((s) => s.status === "success")).toBe(true);
    expect(result.pendingActionIds).toEqual([]);
  });
});

describe("a tool that fails unexpectedly", () => {
  it("tells the model only that it failed, and logs the error with the tool's name for whoever investigates", async () => {
    const broken: ReadTool = {
      name: "count_widgets", description: "Count widgets.", cues: [], gated: false, input: z.object({}),
      run: async () => {
        throw new TypeError("Cannot read properties of undefined (reading 'widgets')");
      },
    };
    const { model } = setup([{ frames: toolCall("tooluse_9", "count_widgets", {}) }, { frames: stream("text-only.json") }]);
    const logged = vi.spyOn(serviceLog(), "error").mockImplementation(() => undefined);
    try {
      const events: AgentEvent[] = [];
      await runAgent({ model, ctx, system: "You are the copilot.", messages: prompt("How many widgets?"), tools: [...TOOLS, broken], tier: "small", maxTurns: 3, signal: new AbortController().signal, emit: (e) => events.push(e) });
      expect(events.find((e) => e.event === "tool_result")!.data).toMatchObject({ name: "count_widgets", status: "error" });
      expect(logged).toHaveBeenCalledWith("agent tool failed", expect.objectContaining({ tool: "count_widgets", error: expect.objectContaining({ message: expect.stringContaining("reading 'widgets'") }) }));
    } finally {
      logged.mockRestore();
    }
  });
});

describe("tool results over a long run", () => {
  /** A model that calls `read_big` on each of its first `calls` turns, then answers; it records each request's size. */
  function scripted(calls: number) {
    const sizes: number[] = [];
    const usage = { modelId: "scripted", tier: "small" as const, inputTokens: 10, outputTokens: 5, costUsd: 0, latencyMs: 1, attempts: 1 };
    const model: StreamingModel = {
      engine: "local",
      async *stream(req): AsyncGenerator<ModelStreamEvent> {
        sizes.push(JSON.stringify(req.messages).length);
        if (sizes.length <= calls) {
          yield { type: "tool_call", id: `call_${sizes.length}`, name: "read_big", input: {} };
          yield { type: "stop", reason: "tool_use", usage };
        } else {
          yield { type: "text", delta: "Here is what I found." };
          yield { type: "stop", reason: "end_turn", usage };
        }
      },
    };
    return { model, sizes };
  }
  const big: ReadTool = { name: "read_big", description: "Read a large file.", cues: [], gated: false, input: z.object({}), run: async () => ({ text: "x".repeat(30_000) }) };

  it("stops handing results back past the run's budget, and the run still ends with the answer (30 turns of 24,000 characters passed the context)", async () => {
    const { model, sizes } = scripted(25);
    const result = await runAgent({ model, ctx, system: "s", messages: prompt("Read everything"), tools: [big], tier: "small", maxTurns: 30, signal: new AbortController().signal, emit: () => undefined });

    expect(result).toMatchObject({ status: "success", stopReason: "end_turn", text: "Here is what I found.", numTurns: 26 });
    // Every result was clipped to 24,000 characters; 25 of them would be 600,000.
    expect(Math.max(...sizes)).toBeLessThan(RUN_CONTEXT_MAX_BYTES + 25 * 500);
    expect(sizes.at(-1)!).toBeGreaterThan(RUN_CONTEXT_MAX_BYTES - 30_000);
    // The early results went back whole (clipped), the later ones as the stub telling the model to answer.
    const handed = result.messages.flatMap((m) => m.content.flatMap((p) => (p.type === "tool_result" ? [JSON.stringify(p.content)] : [])));
    expect(handed[0]!.length).toBeGreaterThan(20_000);
    expect(handed.at(-1)).toContain("context budget is spent");
    expect(result.steps.at(-1)).toMatchObject({ name: "read_big", status: "success", truncated: true });
  });
});
