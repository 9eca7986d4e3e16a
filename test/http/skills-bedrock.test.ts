/**
 * Skills on the Bedrock engine (issue #22: activation and suggestion "on recorded model responses"): the real stream
 * handler through the local gateway, the real Bedrock SDK over a socket to the stand-in Bedrock Runtime answering
 * with a public recording of a real ConverseStream response (test/fixtures/bedrock-recorded), and a real SSE client.
 * What a skill changes for a model is its request: the activated skill's instructions and output template are in the
 * system prompt the model receives, and nothing of a skill is when none is active.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { liveGateway, readStream, type WireEvent } from "../support/sse";
import { recorded } from "../support/bedrock-stream";
import { startBedrockServer, type BedrockServer } from "../support/bedrock-server";
import { topUp } from "../support/billing";
import { officialSkill } from "../../core/skill/library";

process.env.AI_ENGINE = "bedrock";
process.env.AWS_ACCESS_KEY_ID = "AKIDEXAMPLE";
process.env.AWS_SECRET_ACCESS_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
process.env.AWS_REGION = "us-east-1";

let bedrock: BedrockServer;
let gw: Awaited<ReturnType<typeof liveGateway>>;
let token: string;
let ws: string;

const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);
/** The system prompt text of a ConverseStream request as the stand-in received it. */
const systemOf = (body: { system?: { text?: string }[] }) => (body.system ?? []).map((b) => b.text ?? "").join("\n");

beforeAll(async () => {
  bedrock = await startBedrockServer();
  process.env.AWS_ENDPOINT_URL_BEDROCK_RUNTIME = bedrock.url;
  gw = await liveGateway();
  const w = await newWorkspace("Skills on Bedrock");
  token = w.owner.token;
  ws = w.workspace.id;
  await topUp(w.owner.id, 500);
});
afterAll(async () => {
  await gw.close();
  await bedrock.close();
});

/** One chat run answered by the recorded text stream; the requests the model received during it. */
async function run(prompt: string) {
  const from = bedrock.requests.length;
  // Replies for the run and for any model call after it (memory extraction runs off the response path).
  const text = recorded("claude-v2-text.json").frames;
  bedrock.reply({ frames: text }, { frames: text }, { frames: text });
  const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt });
  return { events, requests: bedrock.requests.slice(from) };
}

describe("skills on recorded model responses", () => {
  it("puts the activated skill's instructions and output template into the model's system prompt", async () => {
    expect((await call("POST", "/api/skills/install/rice-prioritization", { token, body: { workspace_id: ws } })).status).toBe(200);
    const skill = officialSkill("rice-prioritization")!;

    const { events, requests } = await run("Prioritize the backlog with RICE for next quarter");

    expect(of(events, "skill_activated")).toEqual([{ slug: "rice-prioritization", name: "RICE prioritization", instructions: skill.instructions_md }]);
    expect(events.at(-1)!.event).toBe("done");
    expect(of(events, "error")).toEqual([]);
    const agentCall = requests.find((r) => systemOf(r.body).includes("Active skill: RICE prioritization"));
    expect(agentCall, "no model request carried the skill").toBeDefined();
    const system = systemOf(agentCall!.body);
    expect(system).toContain(`<skill-instructions slug="rice-prioritization">\n${skill.instructions_md}\n</skill-instructions>`);
    expect(system).toContain(`<skill-output-template slug="rice-prioritization">\n${skill.output_template_md}\n</skill-output-template>`);
    // The recorded answer reaches the client as the model streamed it.
    expect(of(events, "token").map((t) => t.content).join("").length).toBeGreaterThan(0);
  });

  it("suggests an official skill the workspace lacks, and the model's request carries no skill", async () => {
    const { events, requests } = await run("Write release notes for version 2.29");
    expect(of(events, "skill_suggestion").map((s) => s.slug)).toEqual(["release-notes"]);
    expect(of(events, "skill_activated")).toEqual([]);
    expect(requests.length).toBeGreaterThan(0);
    for (const r of requests) expect(systemOf(r.body)).not.toContain("<skill-instructions");
  });
});
