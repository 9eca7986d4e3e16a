/**
 * The harness on the Bedrock engine (issue #21), end to end: the real stream handler through the local gateway, the
 * real Bedrock SDK client over a socket to the stand-in Bedrock Runtime (test/support/bedrock-server.ts), and a real
 * SSE client. The model's answers are the public recording `claude-v2-text.json` (its frames: messageStart, text
 * deltas, stop, metadata with usage) with the text deltas carrying our answer.
 *
 * - an answer whose quote was altered fails the independent verifier (it re-reads the source), the model is asked to
 *   repair it (its request names the failed check), and the repaired answer passes;
 * - an answer that stays wrong ends degraded after the repairs run out;
 * - a complex request runs as a mission of parallel threads, one model stream each.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runsOf } from "../../core/agent";
import { MAX_QUALITY_RETRIES } from "../../core/harness";
import { call, newWorkspace } from "../support/api";
import { uploadResearch, waitFor } from "../support/multipart";
import { liveGateway, orderProblems, readStream, type WireEvent } from "../support/sse";
import { recorded, toolCallTurn, type Frame } from "../support/bedrock-stream";
import { startBedrockServer, type BedrockServer } from "../support/bedrock-server";
import { topUp } from "../support/billing";

process.env.AWS_ACCESS_KEY_ID = "AKIDEXAMPLE";
process.env.AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
process.env.AWS_REGION = "us-east-1";

let bedrock: BedrockServer;
let gw: Awaited<ReturnType<typeof liveGateway>>;
let token: string;
let ws: string;
let sourceId: string;
let insightId: string;

const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);
const INTERVIEW = "# Interview with Ana\n\nI keep getting sent back to the login screen after every update. It is maddening.\n";

/** The recorded text stream with its text deltas carrying `text` (same frames, same stop and usage). */
function answer(text: string): Frame[] {
  const frames = recorded("claude-v2-text.json").frames;
  const deltas = frames.filter((f) => f.type === "contentBlockDelta");
  const pieces = text.match(/.{1,40}/gs) ?? [text];
  const template = deltas[0]!.body as { contentBlockIndex: number; p: string };
  const first = frames.indexOf(deltas[0]!);
  const rest = frames.filter((f) => f.type !== "contentBlockDelta");
  return [...rest.slice(0, first), ...pieces.map((piece) => ({ type: "contentBlockDelta", body: { ...template, delta: { text: piece } } })), ...rest.slice(first)];
}

beforeAll(async () => {
  // The workspace is seeded on the local engine (the insight's search vector), then the copilot runs on Bedrock.
  delete process.env.AI_ENGINE;
  const w = await newWorkspace("Harness on Bedrock");
  token = w.owner.token;
  ws = w.workspace.id;
  await topUp(w.owner.id, 500);
  const up = await uploadResearch(token, ws, { name: "ana.md", data: Buffer.from(INTERVIEW) }, "text/markdown", "interview");
  expect(up.status, up.text).toBe(201);
  sourceId = up.body.id;
  await waitFor(async () => (await call("GET", `/api/research/sources/${sourceId}`, { token })).body.processing_status === "completed");
  const res = await call("POST", "/api/insights", {
    token,
    body: { workspace_id: ws, insight_type: "pain_point", title: "Users are sent back to the login screen after updates", description: "Sign-in loops.", severity: "high", quotes: [{ text: "I keep getting sent back to the login screen after every update", source_id: sourceId, speaker: "Ana" }] },
  });
  expect(res.status, res.text).toBe(201);
  insightId = res.body.id;
  process.env.AI_ENGINE = "bedrock";
  bedrock = await startBedrockServer();
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = bedrock.url;
  gw = await liveGateway();
}, 120_000);
afterAll(async () => {
  await gw?.close();
  await bedrock?.close();
});

const altered = `Users are stuck in a sign-in loop [insight ${"INSIGHT"}]:\n> "I am always sent back to the login screen after each update" (Ana) [source SOURCE]`;
const verbatim = `Users are stuck in a sign-in loop [insight INSIGHT]:\n> "I keep getting sent back to the login screen after every update" (Ana) [source SOURCE]`;
const fill = (t: string) => t.replace("INSIGHT", insightId).replace("SOURCE", sourceId);

describe("the verifier and the repair on Bedrock", () => {
  it("fails an altered quote against the source, asks the model to repair it, and passes the repaired answer", async () => {
    bedrock.reply({ frames: answer(fill(altered)) }, { frames: answer(fill(verbatim)) });
    const before = bedrock.requests.length;

    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Why do users get signed out?" });

    expect(orderProblems(events)).toEqual([]);
    const [failed, passed] = of(events, "harness_verifier");
    expect(failed).toMatchObject({ passed: false });
    expect(failed.issues).toEqual([`“I am always sent back to the login screen after each update” is not verbatim in source ${sourceId}`]);
    expect(passed).toMatchObject({ passed: true, issues: [] });
    // The model was asked again, with the failed check in its request, after its own answer.
    const requests = bedrock.requests.slice(before);
    expect(requests).toHaveLength(2);
    const turns = requests[1]!.body.messages as { role: string; content: { text?: string }[] }[];
    expect(turns.at(-2)!.role).toBe("assistant");
    expect(turns.at(-1)!.content[0]!.text).toContain("[quality check]");
    expect(turns.at(-1)!.content[0]!.text).toContain(failed.issues[0]);
    const retry = of(events, "harness_retry");
    expect(retry).toEqual([expect.objectContaining({ kind: "quality", attempt: 2, rewrites_answer: true })]);
    // The transient and the quality retry are told apart by `kind`.
    expect(retry.every((r) => r.kind === "quality")).toBe(true);

    const done = events.at(-1)!.data;
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token });
    expect(conv.body.messages.at(-1).content).toBe(fill(verbatim));
    const run = (await runsOf(ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === done.conversation_id)!;
    expect(run).toMatchObject({ verifier_passed: true, contract_passed: true, quality: { retries: 1, degraded: false } });
    // Both model calls are the run's: tokens of the recorded usage, twice.
    const usage = (recorded("claude-v2-text.json").frames.find((f) => f.type === "metadata")!.body as { usage: { totalTokens: number } }).usage;
    expect(run.tokens_used).toBe(2 * usage.totalTokens);
  });

  it("ends degraded when every repair still quotes what the source does not say", async () => {
    bedrock.reply(...Array.from({ length: MAX_QUALITY_RETRIES + 1 }, () => ({ frames: answer(fill(altered)) })));
    const before = bedrock.requests.length;

    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Why do users get signed out again?" });

    expect(orderProblems(events)).toEqual([]);
    expect(bedrock.requests.length - before).toBe(MAX_QUALITY_RETRIES + 1);
    expect(of(events, "harness_verifier").map((v) => v.passed)).toEqual([false, false, false]);
    expect(of(events, "harness_retry").map((r) => r.attempt)).toEqual([2, 3]);
    const [degraded] = of(events, "harness_degraded");
    expect(degraded).toMatchObject({ attempts: 3, reason: `${MAX_QUALITY_RETRIES} repairs did not reach the quality threshold` });
    expect(degraded.rqs).toBeLessThanOrEqual(49);
    const run = (await runsOf(ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === events.at(-1)!.data.conversation_id)!;
    expect(run).toMatchObject({ verifier_passed: false, quality: { degraded: true, retries: 2 } });
  });

  it("a rewrite the turn budget cuts off keeps the complete answer before it, degraded, not a partial run", async () => {
    // Turn 1 answers with the altered quote; the rewrite (turn 2, the last of max_turns 2) calls a tool and is cut.
    bedrock.reply({ frames: answer(fill(altered)) }, { frames: toolCallTurn("tooluse_budget", "search_insights", { query: "login screen" }, { inputTokens: 120, outputTokens: 30 }) });

    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Why are people signed out?", max_turns: 2 });

    expect(orderProblems(events)).toEqual([]);
    expect(of(events, "error")).toEqual([]);
    expect(of(events, "harness_retry")).toEqual([expect.objectContaining({ kind: "quality", attempt: 2, rewrites_answer: true })]);
    expect(of(events, "harness_degraded")).toEqual([
      expect.objectContaining({ attempts: 2, answer_kept: "previous", turn_budget_spent: true, reason: "The query's 2 turns (max_turns) ran out during the rewrite: the answer before it stands" }),
    ]);
    const done = events.at(-1)!.data;
    expect(done.num_turns).toBe(2);
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token });
    expect(conv.body.messages.at(-1).content).toBe(fill(altered));
    const run = (await runsOf(ws)).find((r) => (r.input_data as { conversation_id?: string }).conversation_id === done.conversation_id)!;
    // Charged as the complete run it is, with both model calls' tokens.
    expect(run).toMatchObject({ status: "success", verifier_passed: false, quality: { degraded: true, retries: 1, turn_budget_spent: true } });
    const usage = (recorded("claude-v2-text.json").frames.find((f) => f.type === "metadata")!.body as { usage: { totalTokens: number } }).usage;
    expect(run.tokens_used).toBe(usage.totalTokens + 150);
  });
});

describe("mid-stream alerts on Bedrock", () => {
  it("warns at 500 characters of an answer that cites nothing, and flags a quote the workspace does not hold", async () => {
    const long = `Users "love the new dashboard with all its colorful charts" according to everyone. ${"They find the app mostly fine and rarely complain about it in any way. ".repeat(8)}`;
    bedrock.reply({ frames: answer(long) }, { frames: answer("Users find the app mostly fine; I found no quote in the workspace to support more.") });

    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Summarize the mood" });

    expect(orderProblems(events)).toEqual([]);
    const alerts = of(events, "harness_stream_alert");
    expect(alerts.map((a) => [a.checkpoint, a.severity])).toEqual([[500, "warning"], [500, "critical"]]);
    expect(alerts[0].issue).toBe("500 characters in, the answer cites no insight or source");
    expect(alerts[1].issue).toBe("The answer quotes text that is not in the workspace: “love the new dashboard with all its colorful charts”");
    for (const a of alerts) expect(typeof a.suggestion).toBe("string");
    // The alert comes while the answer streams: tokens before it and after it.
    const at = events.findIndex((e) => e.event === "harness_stream_alert");
    expect(events.slice(0, at).some((e) => e.event === "token")).toBe(true);
    // The post-flight decides: the unsupported quote fails the verifier; the repaired answer quotes nothing and passes.
    expect(of(events, "harness_verifier").map((v) => v.passed)).toEqual([false, true]);
    expect(of(events, "harness_verifier")[0].issues).toEqual(["“love the new dashboard with all its colorful charts” cites no source and is not found in the workspace"]);
  });
});

describe("a mission on Bedrock", () => {
  it("runs each subtask as its own model stream, in parallel, with the subtask as the objective", async () => {
    const text = recorded("claude-v2-text.json").frames;
    bedrock.reply({ frames: text }, { frames: text });
    const before = bedrock.requests.length;

    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "What do users struggle with? Draft a PRD for the sign-in fix." });

    expect(orderProblems(events)).toEqual([]);
    const [mission] = of(events, "mission_proposed");
    expect(mission.subtasks.map((s: { workflow_type: string }) => s.workflow_type)).toEqual(["research", "drafting"]);
    const requests = bedrock.requests.slice(before);
    expect(requests).toHaveLength(2);
    const objectives = requests.map((r) => (r.body.messages.at(-1).content[0].text as string)).sort();
    expect(objectives).toEqual(["Draft a PRD for the sign-in fix.", "What do users struggle with?"]);
    for (const r of requests) expect(r.body.system[0].text).toContain("Mission subtask");
    expect(of(events, "harness_subtask_start").every((s) => s.parallel)).toBe(true);
    expect(events.at(-1)!.data.mission_id).toBe(mission.mission_id);
    expect(events.filter((e) => e.event === "token").map((e) => e.data.content).join("")).toBe("### 1. What do users struggle with?\n\nThis is a test\n\n### 2. Draft a PRD for the sign-in fix.\n\nThis is a test");
  });
});
