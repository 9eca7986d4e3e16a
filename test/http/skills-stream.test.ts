/**
 * Skills in copilot runs (issue #22; spec 02 Events skill_activated, skill_suggestion), on the local engine, read
 * off the wire of POST /api/stream/chat by a real SSE client: an installed, enabled skill whose trigger keywords or
 * description match the request is loaded (event first, then the run; last_used_at and activation_count recorded);
 * a disabled one is not; an official skill the workspace lacks is suggested once per user and workspace.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newUser, newWorkspace } from "../support/api";
import { liveGateway, readStream, type WireEvent } from "../support/sse";
import { setAccount, topUp } from "../support/billing";
import { officialSkill, officialSkills } from "../../core/skill/library";
import { SkillMatcher } from "../../core/skill/match";

let gw: Awaited<ReturnType<typeof liveGateway>>;
beforeAll(async () => {
  gw = await liveGateway();
});
afterAll(async () => gw.close());

const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name).map((e) => e.data);
const chat = (token: string, ws: string, prompt: string) => readStream(gw.base, "/api/stream/chat", token, { workspace_id: ws, prompt });

async function workspace(name: string) {
  const w = await newWorkspace(name);
  await topUp(w.owner.id, 50);
  return { token: w.owner.token, ws: w.workspace.id, owner: w.owner };
}

describe("activation", () => {
  it("loads an installed skill whose trigger keywords the request contains, before the run's first step", async () => {
    const w = await workspace("Activation");
    expect((await call("POST", "/api/skills/install/interview-synthesis", { token: w.token, body: { workspace_id: w.ws } })).status).toBe(200);

    const events = await chat(w.token, w.ws, "Synthesize the interviews we ran last week into themes");

    const activated = of(events, "skill_activated");
    const skill = officialSkill("interview-synthesis")!;
    expect(activated).toEqual([{ slug: "interview-synthesis", name: "Interview synthesis", instructions: skill.instructions_md }]);
    const names = events.map((e) => e.event);
    expect(names.indexOf("skill_activated")).toBeLessThan(names.findIndex((n) => n === "tool_use" || n === "token"));
    expect(names.at(-1)).toBe("done");
    expect(of(events, "skill_suggestion")).toEqual([]);

    const [installed] = (await call("GET", "/api/skills/workspace", { token: w.token, query: { workspace_id: w.ws } })).body;
    expect(installed.activation_count).toBe(1);
    expect(Date.parse(installed.last_used_at)).toBeGreaterThan(Date.now() - 60_000);
  });

  it("loads a custom skill by its own trigger keyword, and a description match when no keyword is named", async () => {
    const w = await workspace("Custom activation");
    await setAccount(w.owner.id, { plan: "growth", status: "active" });
    const made = await call("POST", "/api/skills/custom", {
      token: w.token,
      body: {
        workspace_id: w.ws, slug: "exit-call-digest", name: "Exit call digest",
        description: "Digest cancellation calls: the reasons customers give for cancelling their subscription, grouped, each with a quote.",
        instructions_md: "Group cancellation reasons; quote each.", trigger_keywords: ["exit calls"],
        output_template_md: "# Exit calls: {{period}}\n\n## Reasons",
      },
    });
    expect(made.status, made.text).toBe(200);
    expect(of(await chat(w.token, w.ws, "What came out of the exit calls in May?"), "skill_activated").map((a) => a.slug)).toEqual(["exit-call-digest"]);
    expect(of(await chat(w.token, w.ws, "Which reasons for cancelling a subscription do customers give?"), "skill_activated").map((a) => a.slug)).toEqual(["exit-call-digest"]);
    const [installed] = (await call("GET", "/api/skills/workspace", { token: w.token, query: { workspace_id: w.ws } })).body;
    expect(installed.activation_count).toBe(2);
  });

  it("a custom skill deleted and created again under its slug is matched on its new words", async () => {
    const w = await workspace("Recreated");
    await setAccount(w.owner.id, { plan: "growth", status: "active" });
    const make = (name: string, keyword: string, description: string) =>
      call("POST", "/api/skills/custom", { token: w.token, body: { workspace_id: w.ws, slug: "weekly-brief", name, description, instructions_md: `Write the ${keyword}.`, trigger_keywords: [keyword] } });
    expect((await make("Alpha report", "alpha report", "A report on alpha testers' sessions.")).status).toBe(200);
    expect(of(await chat(w.token, w.ws, "Write the alpha report"), "skill_activated").map((a) => a.name)).toEqual(["Alpha report"]);
    expect((await call("DELETE", "/api/skills/custom/weekly-brief", { token: w.token, query: { workspace_id: w.ws } })).status).toBe(200);
    expect((await make("Beta summary", "beta summary", "A summary of beta feedback by theme.")).status).toBe(200);
    expect(of(await chat(w.token, w.ws, "Write the beta summary"), "skill_activated").map((a) => a.name)).toEqual(["Beta summary"]);
    expect(of(await chat(w.token, w.ws, "Write the alpha report"), "skill_activated")).toEqual([]);
  });

  it("does not load a disabled skill, nor any skill for a request that calls for none", async () => {
    const w = await workspace("Disabled");
    await call("POST", "/api/skills/install/release-notes", { token: w.token, body: { workspace_id: w.ws } });
    await call("PATCH", "/api/skills/install/release-notes", { token: w.token, body: { workspace_id: w.ws, is_enabled: false } });
    const events = await chat(w.token, w.ws, "Write release notes for version 2.29");
    expect(of(events, "skill_activated")).toEqual([]);

    const plain = await chat(w.token, w.ws, "What do users struggle with?");
    expect(plain.map((e) => e.event).filter((n) => n.startsWith("skill_"))).toEqual([]);
  });
});

describe("suggestion", () => {
  it("suggests a matching official skill the workspace lacks, once per user and workspace", async () => {
    const w = await workspace("Suggestion");
    const first = await chat(w.token, w.ws, "Write release notes for version 2.29");
    expect(of(first, "skill_activated")).toEqual([]);
    expect(of(first, "skill_suggestion")).toEqual([{ slug: "release-notes", name: "Release notes", reason: 'Your request mentions "release notes", a trigger of the Release notes skill.' }]);

    // The same user, again (another conversation too): not repeated.
    expect(of(await chat(w.token, w.ws, "Draft the release notes for 2.30 please"), "skill_suggestion")).toEqual([]);

    // Another member of the workspace hears it once too.
    const member = await newUser();
    expect((await call("POST", `/api/workspaces/${w.ws}/members`, { token: w.token, body: { email: member.email, role: "member" } })).status).toBe(201);
    expect(of(await chat(member.token, w.ws, "Release notes for 2.29, please"), "skill_suggestion").map((s) => s.slug)).toEqual(["release-notes"]);

    // Once installed, it activates instead of being suggested.
    await call("POST", "/api/skills/install/release-notes", { token: w.token, body: { workspace_id: w.ws } });
    const after = await chat(w.token, w.ws, "Write release notes for version 2.31");
    expect(of(after, "skill_activated").map((a) => a.slug)).toEqual(["release-notes"]);
    expect(of(after, "skill_suggestion")).toEqual([]);
  });

  it("suggests nothing on a description match alone", async () => {
    const w = await workspace("Weak match");
    // Words of the Kano skill's description, none of its trigger keywords or its name: a match, of the weak kind.
    const prompt = "Sort features by how satisfaction changes when they are present or absent, from paired functional and dysfunctional questions";
    expect(new SkillMatcher(officialSkills()).match(prompt)[0]).toMatchObject({ slug: "kano-survey-analysis", kind: "description" });
    const events = await chat(w.token, w.ws, prompt);
    expect(of(events, "skill_suggestion")).toEqual([]);
  });
});
