/**
 * The local agent engine over the wire (POST /api/stream/chat on the local gateway, read by a real SSE client): a
 * question about sources is answered from `list_sources`, and a status change queues the recommendation the prompt
 * names, or asks which one, queuing nothing, when two titles match it equally well.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { uploadResearch, waitFor } from "../support/multipart";
import { liveGateway, readStream, type WireEvent } from "../support/sse";

let gw: Awaited<ReturnType<typeof liveGateway>>;
let token: string;
let ws: string;
const sources: Record<string, string> = {};
const recs: Record<string, string> = {};

const text = (events: WireEvent[]) => events.filter((e) => e.event === "token").map((e) => e.data.content).join("");
const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);
const pendingCount = async () => (await call("GET", "/api/pending-actions", { token, query: { workspace_id: ws } })).body.items.length as number;

beforeAll(async () => {
  gw = await liveGateway();
  const w = await newWorkspace("Copilot, local engine");
  token = w.owner.token;
  ws = w.workspace.id;
  for (const [name, type, body] of [
    ["pharmacy-interview-ana.md", "interview", "# Interview with Ana\n\nAna could not find where to upload a prescription.\n"],
    ["nurse-interview-sam.md", "interview", "# Interview with Sam\n\nSam works offline on home visits and loses notes.\n"],
    ["support-tickets-may.md", "support_ticket", "# Tickets\n\nSign-in loops after the update.\n"],
  ] as const) {
    const up = await uploadResearch(token, ws, { name, data: Buffer.from(body) }, "text/markdown", type);
    expect(up.status, up.text).toBe(201);
    sources[name] = up.body.id;
  }
  await waitFor(async () => (await call("GET", "/api/research/sources", { token, query: { workspace_id: ws } })).body.sources.every((s: { processing_status: string }) => s.processing_status === "completed"));
  // Oldest first: the named one (PDF) is the last in the list's order, never its top.
  for (const [key, title] of [
    ["pdf", "Let users export their records as PDF"],
    ["android", "Fix the sign-in loop on Android"],
    ["ios", "Fix the sign-in loop on iOS"],
  ] as const) {
    const res = await call("POST", "/api/recommendations", { token, body: { workspace_id: ws, title, description: `${title}.` } });
    expect(res.status, res.text).toBe(201);
    recs[key] = res.body.id;
  }
}, 120_000);
afterAll(async () => gw.close());

describe("the local engine over POST /api/stream/chat", () => {
  it("answers 'which interviews do we have?' with the interviews list_sources returned", async () => {
    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Which interviews do we have?" });

    expect(of(events, "tool_use").map((t) => t.name)).toEqual(["list_sources"]);
    expect(of(events, "tool_result")[0]).toMatchObject({ name: "list_sources", status: "success" });
    const answer = text(events);
    expect(answer).not.toContain("could not find anything");
    expect(answer).toContain("3 research sources: 2 interviews, 1 support ticket (3 completed)");
    expect(answer).toContain(`**pharmacy-interview-ana.md** (interview, completed`);
    expect(answer).toContain(`[source ${sources["nurse-interview-sam.md"]}]`);
    expect(answer).not.toContain(sources["support-tickets-may.md"]);
    expect(events.at(-1)!.event).toBe("done");
  });

  it("queues the status change of the recommendation the prompt names, not the top one", async () => {
    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Accept the recommendation to let users export their records as PDF" });

    expect(of(events, "tool_use").map((t) => t.name)).toEqual(["list_recommendations", "update_recommendation_status"]);
    const queued = of(events, "tool_result").find((r) => r.name === "update_recommendation_status")!;
    expect(queued).toMatchObject({ status: "queued", preview: { summary: 'Move recommendation "Let users export their records as PDF" from suggested to accepted' } });
    const pa = await call("GET", `/api/pending-actions/${queued.pending_action_id}`, { token });
    expect(pa.status, pa.text).toBe(200);
    expect(pa.body.toolInput).toMatchObject({ recommendation_id: recs.pdf, status: "accepted" });
    expect(text(events)).toContain(queued.pending_action_id);
  });

  it("asks which recommendation, naming both, when two titles match equally well, and queues nothing", async () => {
    const before = await pendingCount();
    const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt: "Accept the recommendation to fix the sign-in loop" });

    expect(of(events, "tool_use").map((t) => t.name)).toEqual(["list_recommendations"]);
    expect(of(events, "tool_result").some((r) => r.status === "queued")).toBe(false);
    const answer = text(events);
    expect(answer).toContain("Which recommendation should I accept?");
    expect(answer).toContain(`**Fix the sign-in loop on Android** (suggested) [recommendation ${recs.android}]`);
    expect(answer).toContain(`**Fix the sign-in loop on iOS** (suggested) [recommendation ${recs.ios}]`);
    expect(answer).not.toContain(recs.pdf);
    expect(events.at(-1)).toMatchObject({ event: "done" });
    expect(await pendingCount()).toBe(before);
  });
});
