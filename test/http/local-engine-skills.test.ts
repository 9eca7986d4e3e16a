/**
 * The local engine follows an activated skill's output template (issue #22 point 2), read off the wire of
 * POST /api/stream/chat by a real SSE client: with the official interview-synthesis skill installed, a request that
 * activates it is answered with the template's headings in order, each filled from the workspace's insights and
 * sources (every quote verbatim in its source) or saying there is not enough evidence, with no placeholder or
 * guidance left; the harness contract passes. Without the skill the same request is answered as before.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newWorkspace } from "../support/api";
import { insightQuoting, notesAsSources } from "../support/sources";
import { liveGateway, readStream, type WireEvent } from "../support/sse";
import { topUp } from "../support/billing";
import { officialSkill } from "../../core/skill/library";
import { templateSections } from "../../core/skill/format";
import { NOT_ENOUGH } from "../../core/agent/local-template";

let gw: Awaited<ReturnType<typeof liveGateway>>;
beforeAll(async () => {
  gw = await liveGateway();
});
afterAll(async () => gw.close());

const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);
const text = (events: WireEvent[]) => events.filter((e) => e.event === "token").map((e) => e.data.content).join("");
const squash = (s: string) => s.replace(/\s+/g, " ").trim();

const NOTES = {
  "ana-interview.md": "# Interview with Ana\n\nI keep getting sent back to the login screen after every update. It is maddening.\n",
  "sam-interview.md": "# Interview with Sam\n\nI work offline on home visits and my notes disappear when the signal comes back.\n",
};

/** A workspace with two interview notes and two insights quoting them verbatim. */
async function seeded(name: string) {
  const w = await newWorkspace(name);
  await topUp(w.owner.id, 50);
  const token = w.owner.token;
  const ws = w.workspace.id;
  const sources = await notesAsSources(token, ws, NOTES);
  const insight = (title: string, quote: string, file: string, severity: string) => insightQuoting(token, ws, { title, quote, sourceId: sources[file]!, severity });
  const insights = {
    signIn: await insight("Users keep getting sent back to the login screen", "I keep getting sent back to the login screen after every update", "ana-interview.md", "high"),
    offline: await insight("Notes disappear when the signal comes back", "my notes disappear when the signal comes back", "sam-interview.md", "medium"),
  };
  return { token, ws, sources, insights };
}

const PROMPT = "Synthesize the interviews into themes: what do users struggle with?";

describe("the local engine on an activated skill's output template", () => {
  it("answers with the template's headings in order, quoting only what the workspace holds, and passes the contract", async () => {
    const s = await seeded("Template");
    expect((await call("POST", "/api/skills/install/interview-synthesis", { token: s.token, body: { workspace_id: s.ws } })).status).toBe(200);

    const events = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt: PROMPT });
    expect(of(events, "skill_activated").map((a) => a.slug)).toEqual(["interview-synthesis"]);
    expect(events.at(-1)!.event).toBe("done");
    const answer = text(events);

    const template = officialSkill("interview-synthesis")!.output_template_md;
    const headings = [...answer.matchAll(/^## (.+)$/gm)].map((m) => m[1]);
    expect(headings).toEqual(templateSections(template).map((x) => x.heading));
    expect(answer).not.toMatch(/\{\{|\}\}|<!--/);

    // Themes: both insights, strongest first, each with its id and its quote citing its source.
    const themes = answer.split("## Themes")[1]!.split("\n## ")[0]!;
    expect(themes.indexOf(s.insights.signIn)).toBeGreaterThan(-1);
    expect(themes.indexOf(s.insights.signIn)).toBeLessThan(themes.indexOf(s.insights.offline));
    // Sections the evidence cannot fill say so; nothing is made up for them.
    expect(squash(answer.split("## Contradictions and outliers")[1]!.split("\n## ")[0]!)).toBe(NOT_ENOUGH);

    // Every quote on the wire is verbatim in the source its line cites.
    const quoted = [...answer.matchAll(/^> "([^"]+)".*\[source ([0-9a-f-]{36})\]$/gm)].map((m) => ({ text: m[1]!, source: m[2]! }));
    expect(quoted.length).toBe(2);
    const byId = Object.fromEntries(Object.entries(s.sources).map(([file, id]) => [id, NOTES[file as keyof typeof NOTES]]));
    for (const q of quoted) expect(squash(byId[q.source]!)).toContain(squash(q.text));

    // The harness judges it: the contract (form) and the independent verifier (quotes, ids, counts) both pass.
    expect(of(events, "harness_contract")).toEqual([expect.objectContaining({ passed: true, workflow_type: "chat", issues: [] })]);
    expect(of(events, "harness_verifier")).toEqual([expect.objectContaining({ passed: true, issues: [] })]);
  });

  it("answers the same request without the template when the skill is not installed", async () => {
    const s = await seeded("No template");
    const events = await readStream(gw.base, "/api/stream/chat", s.token, { workspace_id: s.ws, prompt: PROMPT });
    expect(of(events, "skill_activated")).toEqual([]);
    const answer = text(events);
    expect(answer).not.toMatch(/^## /m);
    expect(answer).not.toContain(NOT_ENOUGH);
  });
});
