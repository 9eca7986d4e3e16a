/**
 * The copilot (core/agent/copilot.ts) when the model fails after earlier turns: the stored assistant message keeps
 * what the run did before the error (its steps, the pending action the client saw queued), beside the error event.
 * The real stream handler through the local gateway, the Bedrock SDK against the stand-in Bedrock Runtime.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../../support/api";
import { liveGateway, readStream, type WireEvent } from "../../support/sse";
import { refusedTurn, toolCallTurn } from "../../support/bedrock-stream";
import { startBedrockServer, type BedrockServer } from "../../support/bedrock-server";
import { topUp } from "../../support/billing";
import { DEFAULT_CATALOGUE } from "../../../core/ai/catalogue";

process.env.AI_ENGINE = "bedrock";
process.env.AWS_ACCESS_KEY_ID = "AKIDEXAMPLE";
process.env.AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
process.env.AWS_REGION = "us-east-1";

let bedrock: BedrockServer;
let gw: Awaited<ReturnType<typeof liveGateway>>;
let token: string;
let ws: string;

const haiku = DEFAULT_CATALOGUE.find((m) => m.tier === "small")!;
const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name);

beforeAll(async () => {
  bedrock = await startBedrockServer();
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = bedrock.url;
  gw = await liveGateway();
  const w = await newWorkspace("Copilot partial run");
  token = w.owner.token;
  ws = w.workspace.id;
  await topUp(w.owner.id, 100);
});
afterAll(async () => {
  await gw.close();
  await bedrock.close();
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

    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Record that export is hard to find", model: haiku.id, effort: "low" });

    const queued = of(events, "tool_result")[0]!.data as { status: string; pending_action_id: string };
    expect(queued.status).toBe("queued");
    expect(of(events, "error")).toHaveLength(1);
    const done = events.at(-1)!.data;
    expect(done.tool_count).toBe(1);
    const conv = await call("GET", `/api/chat/conversations/${done.conversation_id}`, { token });
    const message = conv.body.messages.find((m: { id: string }) => m.id === done.message_id);
    expect(message.execution_metadata).toMatchObject({ stop_reason: "error", num_turns: 2, pending_action_ids: [queued.pending_action_id] });
    expect(message.execution_metadata.steps).toMatchObject([{ name: "create_insight", status: "queued", pending_action_id: queued.pending_action_id }]);
    expect(message.content).toMatch(/^I could not finish: /);
  });
});
