/**
 * The local agent engine (core/agent/local-engine.ts) through the agent loop, with the real tools against DynamoDB
 * Local: a question about sources is answered from `list_sources`, and a status change acts on the recommendation the
 * prompt names (by id, id prefix or title words) or asks which one, queuing nothing, when no title clearly matches.
 */
import { beforeAll, describe, expect, it } from "vitest";
import { runAgent, type AgentEvent } from "../../../core/agent/loop";
import { LocalAgentModel, namedRecommendation, targetStatus } from "../../../core/agent/local-engine";
import { TOOLS, type ToolContext } from "../../../core/agent/tools";
import { call, newWorkspace } from "../../support/api";
import { uploadResearch, waitFor } from "../../support/multipart";

let ctx: ToolContext;
let token: string;
const sources: Record<string, string> = {};
const recs: Record<"pdf" | "offline" | "android" | "ios", string> = { pdf: "", offline: "", android: "", ios: "" };

const model = new LocalAgentModel(TOOLS);

async function run(text: string, context = ctx) {
  const events: AgentEvent[] = [];
  const result = await runAgent({
    model,
    ctx: context,
    system: "You are the copilot.",
    messages: [{ role: "user", content: [{ type: "text", text }] }],
    tools: TOOLS,
    tier: "small",
    maxTurns: 5,
    signal: new AbortController().signal,
    emit: (e) => events.push(e),
  });
  return { result, events };
}

/** The input of the one pending action a run queued. */
async function queuedInput(pendingActionIds: string[]) {
  expect(pendingActionIds).toHaveLength(1);
  const pa = await call("GET", `/api/pending-actions/${pendingActionIds[0]}`, { token });
  expect(pa.status, pa.text).toBe(200);
  expect(pa.body.toolName).toBe("update_recommendation_status");
  return pa.body.toolInput as { recommendation_id: string; status: string };
}

beforeAll(async () => {
  const { owner, workspace } = await newWorkspace("Local engine");
  token = owner.token;
  ctx = { userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [] };
  for (const [name, type, text] of [
    ["onboarding-interview-dana.md", "interview", "# Interview with Dana\n\nDana said the first sign-in took her three tries.\n\nShe wanted to skip the tour.\n"],
    ["clinic-interview-lee.md", "interview", "# Interview with Lee\n\nLee works offline in rural clinics.\n\nSyncing later loses notes.\n"],
    ["app-store-feedback.md", "feedback", "# App store feedback\n\nThe PDF export is hidden.\n\nPlease add dark mode.\n"],
  ] as const) {
    const up = await uploadResearch(token, workspace.id, { name, data: Buffer.from(text) }, "text/markdown", type);
    expect(up.status, up.text).toBe(201);
    sources[name] = up.body.id;
  }
  await waitFor(async () => {
    const list = await call("GET", "/api/research/sources", { token, query: { workspace_id: workspace.id } });
    return list.body.sources.every((s: { processing_status: string }) => s.processing_status === "completed");
  });
  // Created oldest first: the list (and the old "top suggested" guess) puts the newest, iOS, first.
  for (const [key, title] of [
    ["pdf", "Let users export their records as PDF"],
    ["offline", "Add an offline mode for field clinics"],
    ["android", "Fix the sign-in loop on Android"],
    ["ios", "Fix the sign-in loop on iOS"],
  ] as const) {
    const res = await call("POST", "/api/recommendations", { token, body: { workspace_id: workspace.id, title, description: `${title}.` } });
    expect(res.status, res.text).toBe(201);
    recs[key] = res.body.id;
  }
}, 120_000);

describe("local engine: questions about sources", () => {
  it("answers 'which interviews do we have?' from list_sources: titles, type, status, counts and ids", async () => {
    const { result } = await run("Which interviews do we have?");

    expect(result.steps.map((s) => [s.name, s.status])).toEqual([["list_sources", "success"]]);
    expect(result.text).not.toContain("could not find anything");
    expect(result.text).toContain("2 interviews");
    expect(result.text).toContain("**onboarding-interview-dana.md** (interview, completed");
    expect(result.text).toContain(`[source ${sources["clinic-interview-lee.md"]}]`);
    // The other sources are counted, not listed as interviews.
    expect(result.text).toContain("3 research sources");
    expect(result.text).toContain("1 feedback");
    expect(result.text).not.toContain(`[source ${sources["app-store-feedback.md"]}]`);
  });

  it("lists every source, whatever its status, for a general question", async () => {
    const { result } = await run("What research sources do we have?");

    expect(result.steps.map((s) => s.name)).toEqual(["list_sources"]);
    for (const id of Object.values(sources)) expect(result.text).toContain(`[source ${id}]`);
    expect(result.text).toContain("3 completed");
  });

  it("says so when the workspace has no source of the kind asked about", async () => {
    const { result } = await run("Which surveys do we have?");

    expect(result.steps.map((s) => s.name)).toEqual(["list_sources"]);
    expect(result.text).toContain("no surveys");
    expect(result.text).toContain("3 research sources");
  });
});

describe("local engine: a status change names the recommendation the user meant", () => {
  it("takes the recommendation whose title the prompt names, not the top one", async () => {
    const { result } = await run("Accept the recommendation to let users export their records as PDF");
    expect(await queuedInput(result.pendingActionIds)).toEqual(expect.objectContaining({ recommendation_id: recs.pdf, status: "accepted" }));
  });

  it("understands title words between the verb and 'recommendation'", async () => {
    const { result } = await run("Please accept the offline mode recommendation");
    expect(await queuedInput(result.pendingActionIds)).toEqual(expect.objectContaining({ recommendation_id: recs.offline, status: "accepted" }));
  });

  it("takes a recommendation named by its id, or by the first characters of its id", async () => {
    const byId = await run(`Mark recommendation ${recs.android} as in progress`);
    expect(await queuedInput(byId.result.pendingActionIds)).toEqual(expect.objectContaining({ recommendation_id: recs.android, status: "in_progress" }));

    const byPrefix = await run(`Reject recommendation ${recs.pdf.slice(0, 8)}`);
    expect(await queuedInput(byPrefix.result.pendingActionIds)).toEqual(expect.objectContaining({ recommendation_id: recs.pdf, status: "rejected" }));
  });

  it("asks which one, naming the candidates, when two titles match equally well, and queues nothing", async () => {
    const { result } = await run("Accept the recommendation to fix the sign-in loop");

    expect(result.pendingActionIds).toEqual([]);
    expect(result.steps.map((s) => s.name)).toEqual(["list_recommendations"]);
    expect(result.text).toContain("Which recommendation");
    expect(result.text).toContain(`**Fix the sign-in loop on Android** (suggested) [recommendation ${recs.android}]`);
    expect(result.text).toContain(`[recommendation ${recs.ios}]`);
    expect(result.text).not.toContain(recs.pdf);
  });

  it("asks, listing the recommendations, when no title matches the prompt, and queues nothing", async () => {
    const { result } = await run("Accept the recommendation about dark mode for night shifts");

    expect(result.pendingActionIds).toEqual([]);
    expect(result.text).toContain("Which recommendation");
    for (const id of Object.values(recs)) expect(result.text).toContain(`[recommendation ${id}]`);
  });

  it("asks for the status when the prompt names none", async () => {
    const { result } = await run("Change the status of the offline mode recommendation");

    expect(result.pendingActionIds).toEqual([]);
    expect(result.text).toMatch(/which status/i);
  });
});

describe("namedRecommendation and targetStatus (pure)", () => {
  const rec = (id: string, title: string, status = "suggested") => ({ id, title, status, priority_rank: null, impact_score: null });
  const android = rec("a1b2c3d4-0000-4000-8000-000000000001", "Fix sign-in on Android");
  const tablets = rec("a1b2c3d4-0000-4000-8000-000000000002", "Fix sign-in on Android tablets");
  const exports = rec("facade00-0000-4000-8000-000000000003", "Export records as PDF");

  it("prefers the longest whole title the prompt contains", () => {
    expect(namedRecommendation("Accept the recommendation: fix sign-in on Android tablets", [android, tablets, exports])).toEqual({ rec: tablets });
    expect(namedRecommendation("Accept the recommendation to fix sign-in on Android, please", [android, tablets, exports])).toEqual({ rec: android });
  });

  it("matches title words through simple inflections (exporting, records)", () => {
    expect(namedRecommendation("accept the one about exporting PDFs", [android, tablets, exports])).toEqual({ rec: exports });
  });

  it("reads an id prefix only when it has a digit and names one recommendation", () => {
    // "facade" is a word, not an id; "a1b2c3d4" starts two ids, so it names neither.
    expect(namedRecommendation("accept the facade recommendation", [exports])).toMatchObject({ candidates: [exports], why: "none" });
    expect(namedRecommendation("accept a1b2c3d4", [android, tablets])).toMatchObject({ why: "tie" });
  });

  it("passes an unknown id on to the tool when the list was cut, and asks when the list was whole", () => {
    const id = "00000000-0000-4000-8000-00000000abcd";
    expect(namedRecommendation(`reject recommendation ${id}`, [android], false)).toMatchObject({ rec: { id } });
    expect(namedRecommendation(`reject recommendation ${id}`, [android], true)).toMatchObject({ candidates: [android], why: "unknown_id" });
  });

  it("does not take a title that shares one generic word with a prompt about something else", () => {
    expect(namedRecommendation("accept the dark mode recommendation for night shifts", [rec("x", "Add an offline mode"), exports])).toMatchObject({ why: "none" });
  });

  it("reads the status after 'as'/'to' first, then the verb, and none when the prompt names none", () => {
    expect(targetStatus("mark the accepted one as implemented")).toBe("implemented");
    expect(targetStatus("move it back to suggested")).toBe("suggested");
    expect(targetStatus("set it to in progress")).toBe("in_progress");
    expect(targetStatus("reject the PDF recommendation")).toBe("rejected");
    expect(targetStatus("change the status of the PDF recommendation")).toBeUndefined();
  });
});
