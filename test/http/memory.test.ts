/**
 * Memory end to end (spec 01 Memory, Limits; spec 02 event `briefing`; DESIGN.md 6.6; issue #22 point 1): facts stated
 * to the copilot through the real stream endpoint on the local engine, learned by the memory consumer off the
 * response path (the in-process memory queue), read back through the real memory handler; a correction supersedes;
 * a resumed conversation opens with `briefing` read off the SSE wire by a real SSE client; deletion; scoping.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { call, newUser, newWorkspace } from "../support/api";
import { liveGateway, readStream, type WireEvent } from "../support/sse";
import { expectEnvelope, withEnv } from "./_helpers";
import { registeredQueue } from "../../core/queue";
import type { LocalFifoQueue } from "../../core/queue/local";
import { RUN_HOOKS, runBefore } from "../../core/agent/hooks";
import { db } from "../../core/db/service";
import { deletedBeforeUpdate } from "../support/races";

interface Person { token: string; id: string; email: string }
let gw: Awaited<ReturnType<typeof liveGateway>>;
let owner: Person;
let member: Person;
let outsider: Person;
let ws: string;
let otherWs: string;

/** Wait until the memory consumer has learned from every exchange sent so far. */
const learned = () => (registeredQueue("memory") as LocalFifoQueue).idle();
const of = (events: WireEvent[], name: string) => events.filter((e) => e.event === name);

async function chat(who: Person, prompt: string, extra: Record<string, unknown> = {}) {
  const events = await readStream(gw.base, "/api/stream/chat", who.token, { workspace_id: ws, prompt, ...extra });
  const done = events.at(-1)!;
  expect(done.event, JSON.stringify(events.map((e) => e.event))).toBe("done");
  expect(of(events, "error")).toEqual([]);
  return { events, conversationId: done.data.conversation_id as string };
}

const profile = (who: Person, workspaceId: string | undefined = ws) =>
  call("GET", "/api/memory/profile", { token: who.token, query: workspaceId ? { workspace_id: workspaceId } : {} });
const search = (who: Person, query: string, extra: Record<string, string | number> = {}) =>
  call("GET", "/api/memory/search", { token: who.token, query: { query, workspace_id: ws, ...extra } });
const listed = (who: Person, query: Record<string, string> = {}) => call("GET", "/api/memory", { token: who.token, query: { workspace_id: ws, ...query } });

const MIXPANEL = "We use Mixpanel for product analytics.";
const AMPLITUDE = "We switched to Amplitude for product analytics.";
const ROLE = "I'm the PM of Jupyter Notebook.";
let first: { conversationId: string; userMessageId: string };

beforeAll(async () => {
  gw = await liveGateway();
  const [w, m, x, other] = await Promise.all([newWorkspace("Memory"), newUser(), newUser(), newWorkspace("Memory elsewhere")]);
  owner = w.owner;
  ws = w.workspace.id;
  member = m;
  outsider = x;
  otherWs = other.workspace.id;
  const added = await call("POST", `/api/workspaces/${ws}/members`, { token: owner.token, body: { email: member.email, role: "member" } });
  expect(added.status, added.text).toBe(201);
  // The owner is also a member of another workspace: their memory there is separate.
  const joined = await call("POST", `/api/workspaces/${otherWs}/members`, { token: other.owner.token, body: { email: owner.email } });
  expect(joined.status, joined.text).toBe(201);
});
afterAll(async () => gw.close());

describe("a fact stated in one conversation", () => {
  it("is learned after the answer and is in the profile and found by search later, with its source", async () => {
    const { conversationId } = await chat(owner, "Hi! I'm the PM of Jupyter Notebook, and we use Mixpanel for product analytics.");
    // Nothing is learned on the response path: the consumer does it after `done`.
    await learned();
    const conv = await call("GET", `/api/chat/conversations/${conversationId}`, { token: owner.token });
    const userMessage = conv.body.messages.find((m: { role: string }) => m.role === "user");
    first = { conversationId, userMessageId: userMessage.id };

    const p = await profile(owner);
    expect(p.status, p.text).toBe(200);
    expect(p.body).toEqual({ static_facts: [ROLE, MIXPANEL], dynamic_facts: [], is_available: true });

    const s = await search(owner, "which analytics tool do we use");
    expect(s.status, s.text).toBe(200);
    expect(s.body.query).toBe("which analytics tool do we use");
    expect(s.body.memories[0]).toMatchObject({
      content: MIXPANEL,
      metadata: { source: { type: "conversation", conversation_id: conversationId, message_id: userMessage.id }, timestamp: userMessage.created_at, workspace_id: ws, kind: "static", contradicts: [] },
    });
    expect(s.body.memories[0].score).toBeGreaterThan(0.5);
    expect(s.body.total).toBeGreaterThanOrEqual(1);
    // top_k bounds the list, not the total.
    const one = await search(owner, "what do you know about me and my team", { top_k: 1 });
    expect(one.body.memories).toHaveLength(Math.min(1, one.body.total));
  });

  it("reaches the next run's system prompt through the run hooks (what a model engine reads)", async () => {
    expect(RUN_HOOKS.map((h) => h.name)).toContain("memory");
    const sent: string[] = [];
    const system = await runBefore({
      userId: owner.id, workspaceId: ws, conversationId: randomUUID(), resumedFrom: null, priorMessageCount: 0, prompt: "Draft a PRD",
      agentType: "chat", send: (event) => sent.push(event), signal: new AbortController().signal,
    });
    expect(system).toContain(`- ${MIXPANEL}`);
    expect(system).toContain(`- ${ROLE}`);
    // Not a resumed conversation: no briefing (other hooks may send their own events).
    expect(sent).not.toContain("briefing");
    // Another member's run carries nothing of it.
    const theirs = await runBefore({
      userId: member.id, workspaceId: ws, conversationId: randomUUID(), resumedFrom: null, priorMessageCount: 0, prompt: "Draft a PRD",
      agentType: "chat", send: () => undefined, signal: new AbortController().signal,
    });
    expect(theirs).not.toContain("Mixpanel");
  });
});

describe("a later correction", () => {
  it("supersedes the fact: gone from profile and search, kept in history with when it stopped being true", async () => {
    await chat(owner, `Actually, ${AMPLITUDE.charAt(0).toLowerCase()}${AMPLITUDE.slice(1)}`);
    await learned();

    const p = await profile(owner);
    expect(p.body.static_facts).toEqual([ROLE, AMPLITUDE]);
    const s = await search(owner, "which analytics tool do we use");
    expect(s.body.memories.map((m: { content: string }) => m.content)).toContain(AMPLITUDE);
    expect(s.body.memories.map((m: { content: string }) => m.content)).not.toContain(MIXPANEL);

    const history = await listed(owner, { status: "superseded" });
    expect(history.status, history.text).toBe(200);
    const current = await listed(owner, { status: "current" });
    const amplitude = current.body.memories.find((m: { content: string }) => m.content === AMPLITUDE);
    expect(history.body).toEqual({
      total: 1,
      memories: [
        expect.objectContaining({
          content: MIXPANEL, status: "superseded", superseded_by: amplitude.id, source: { type: "conversation", conversation_id: first.conversationId, message_id: first.userMessageId },
        }),
      ],
    });
    expect(history.body.memories[0].invalid_at).toBe(amplitude.valid_at);
    expect((await listed(owner)).body.total).toBe(3);
  });
});

describe("a conversation created with resumed_from", () => {
  it("opens with a briefing on the wire: what changed since, active counts and the relevant memories; only once", async () => {
    // The workspace moves on after the first conversation's last message.
    const insight = await call("POST", "/api/insights", {
      token: owner.token,
      body: { workspace_id: ws, insight_type: "pain_point", title: "Analytics events are missing after export", description: "Exports drop the analytics events." },
    });
    expect(insight.status, insight.text).toBe(201);
    const doc = await call("POST", "/api/documents", { token: owner.token, body: { workspace_id: ws, document_type: "prd", title: "Export analytics PRD", content: "# Export\n\nKeep events.\n" } });
    expect(doc.status, doc.text).toBe(201);
    const resumed = await call("POST", "/api/chat/conversations", { token: owner.token, body: { workspace_id: ws, resumed_from: first.conversationId } });
    expect(resumed.status, resumed.text).toBe(201);

    const { events } = await chat(owner, "Where were we on analytics?", { conversation_id: resumed.body.id });
    // It comes before the agent speaks or calls a tool (the harness's pre-flight events may precede it).
    const at = events.findIndex((e) => e.event === "briefing");
    const agentStarts = events.findIndex((e) => ["tool_use", "token", "turn", "thinking"].includes(e.event));
    expect(at, JSON.stringify(events.map((e) => e.event))).toBeGreaterThanOrEqual(0);
    expect(at).toBeLessThan(agentStarts);
    expect(of(events, "briefing")).toHaveLength(1);
    const b = events[at]!.data;
    expect(b).toMatchObject({ conversation_id: resumed.body.id, resumed_from: first.conversationId });
    const prior = await call("GET", `/api/chat/conversations/${first.conversationId}`, { token: owner.token });
    expect(b.since).toBe(prior.body.last_message_at);
    expect(b.delta.insights).toEqual({ count: 1, items: [{ id: insight.body.id, title: "Analytics events are missing after export" }] });
    expect(b.delta.documents).toEqual({ count: 1, items: [{ id: doc.body.id, title: "Export analytics PRD" }] });
    expect(b.delta.sources).toEqual({ count: 0, items: [] });
    expect(b.active).toEqual({ sources: 0, insights: 1, recommendations: 0, documents: 1, pending_actions: 0 });
    expect(b.memory.map((m: { content: string }) => m.content)).toContain(AMPLITUDE);
    expect(b.memory.map((m: { content: string }) => m.content)).not.toContain(MIXPANEL);
    expect(b.summary).toContain("1 new insight");

    // The next message of the same conversation is not a resumption.
    const again = await chat(owner, "And what do users struggle with?", { conversation_id: resumed.body.id });
    expect(of(again.events, "briefing")).toEqual([]);
    // A conversation that resumes nothing gets no briefing.
    expect(of((await chat(owner, "What do users struggle with?")).events, "briefing")).toEqual([]);
    await learned();
  });
});

describe("scoping", () => {
  it("another member, another workspace and an outsider never see the facts", async () => {
    const theirs = await profile(member);
    expect(theirs.body).toEqual({ static_facts: [], dynamic_facts: [], is_available: true });
    expect((await search(member, "which analytics tool do we use")).body).toEqual({ memories: [], total: 0, query: "which analytics tool do we use" });
    expect((await listed(member)).body).toEqual({ memories: [], total: 0 });

    // The same user in another workspace: nothing of this one.
    expect((await profile(owner, otherWs)).body).toEqual({ static_facts: [], dynamic_facts: [], is_available: true });
    expect((await search(owner, "which analytics tool do we use", { workspace_id: otherWs })).body.memories).toEqual([]);
    // Without a workspace: their own facts of every workspace they are in.
    expect((await profile(owner, undefined)).body.static_facts).toEqual([ROLE, AMPLITUDE]);

    for (const res of [await profile(outsider), await search(outsider, "analytics"), await listed(outsider), await call("DELETE", "/api/memory", { token: outsider.token, query: { workspace_id: ws } })]) {
      expectEnvelope(res, 403, "FORBIDDEN");
    }
    // A fact by id: another member's and an outsider's delete are the 404 of an unknown id.
    const fact = (await listed(owner, { status: "current" })).body.memories[0];
    for (const who of [member, outsider]) expectEnvelope(await call("DELETE", `/api/memory/${fact.id}`, { token: who.token }), 404, "NOT_FOUND");
    expect((await listed(owner)).body.total).toBe(3);
  });
});

describe("deletion", () => {
  it("deletes one fact (gone from profile, search and history), then everything in the workspace", async () => {
    const current = (await listed(owner, { status: "current" })).body.memories;
    const role = current.find((m: { content: string }) => m.content === ROLE);
    const del = await call("DELETE", `/api/memory/${role.id}`, { token: owner.token });
    expect(del.status, del.text).toBe(204);
    expectEnvelope(await call("DELETE", `/api/memory/${role.id}`, { token: owner.token }), 404, "NOT_FOUND");
    expect((await profile(owner)).body.static_facts).toEqual([AMPLITUDE]);
    expect((await search(owner, "what is my role")).body.memories.map((m: { content: string }) => m.content)).not.toContain(ROLE);
    expect((await listed(owner)).body.memories.map((m: { id: string }) => m.id)).not.toContain(role.id);

    const all = await call("DELETE", "/api/memory", { token: owner.token, query: { workspace_id: ws } });
    expect(all.status, all.text).toBe(200);
    expect(all.body).toEqual({ workspace_id: ws, deleted: 2 });
    expect((await listed(owner)).body).toEqual({ memories: [], total: 0 });
    expect((await profile(owner)).body).toEqual({ static_facts: [], dynamic_facts: [], is_available: true });
    expect((await search(owner, "which analytics tool do we use")).body.memories).toEqual([]);
  });
});

describe("a search that stores new vectors (the embedder changed)", () => {
  it("leaves out a fact deleted while its vector was being stored, and answers the rest", async () => {
    const { owner: me, workspace } = await newWorkspace("Memory re-embedded");
    const stated = await readStream(gw.base, "/api/stream/chat", me.token, { workspace_id: workspace.id, prompt: "Hi! I'm the PM of Jupyter Notebook, and we use Mixpanel for product analytics." });
    expect(stated.at(-1)!.event).toBe("done");
    await learned();
    const facts = (await call("GET", "/api/memory", { token: me.token, query: { workspace_id: workspace.id } })).body.memories as { id: string; content: string }[];
    expect(facts.map((f) => f.content).sort()).toEqual([ROLE, MIXPANEL]);
    // Vectors from an embedder no longer in use, and the head moved on so no container serves its cached vectors.
    for (const f of facts) await db().entities.memoryFact.patch({ workspace_id: workspace.id, user_id: me.id, id: f.id }).set({ embedder_id: "retired-embedder" }).go();
    await db().entities.memoryHead.update({ workspace_id: workspace.id, user_id: me.id }).add({ version: 1 }).go();

    // The role is deleted just before the search stores its new vector.
    const role = facts.find((f) => f.content === ROLE)!;
    const found = await deletedBeforeUpdate(
      `memory#${me.id}#${role.id}`,
      () => call("DELETE", `/api/memory/${role.id}`, { token: me.token }),
      () => call("GET", "/api/memory/search", { token: me.token, query: { query: "which analytics tool do we use", workspace_id: workspace.id } }),
    );
    expect(found.status, found.text).toBe(200);
    expect(found.body.memories.map((m: { content: string }) => m.content)).toEqual([MIXPANEL]);
    // The next search reads the memory as it is now.
    const again = await call("GET", "/api/memory/search", { token: me.token, query: { query: "what is my role", workspace_id: workspace.id } });
    expect(again.body.memories.map((m: { metadata: { memory_id: string } }) => m.metadata.memory_id)).not.toContain(role.id);
  });
});

describe("validation and availability", () => {
  it("answers 422 in the envelope for bad queries and ids", async () => {
    const bad: [string, Record<string, string>][] = [
      ["/api/memory/search", { workspace_id: ws }],
      ["/api/memory/search", { workspace_id: ws, query: "" }],
      ["/api/memory/search", { workspace_id: ws, query: "   " }],
      ["/api/memory/search", { workspace_id: ws, query: "x".repeat(501) }],
      ["/api/memory/search", { workspace_id: ws, query: "ok", top_k: "0" }],
      ["/api/memory/search", { workspace_id: ws, query: "ok", top_k: "21" }],
      ["/api/memory/search", { workspace_id: ws, query: "ok", top_k: "many" }],
      ["/api/memory/search", { workspace_id: "not-a-uuid", query: "ok" }],
      ["/api/memory/profile", { workspace_id: "not-a-uuid" }],
      ["/api/memory", {}],
      ["/api/memory", { workspace_id: ws, status: "forgotten" }],
      ["/api/memory", { workspace_id: ws, limit: "501" }],
    ];
    for (const [path, query] of bad) expectEnvelope(await call("GET", path, { token: owner.token, query }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("DELETE", "/api/memory/not-a-uuid", { token: owner.token }), 422, "VALIDATION_ERROR");
    expectEnvelope(await call("DELETE", "/api/memory", { token: owner.token }), 422, "VALIDATION_ERROR");
    // The limits themselves pass.
    expect((await search(owner, "x".repeat(500), { top_k: 20 })).status).toBe(200);
  });

  it("answers the empty results when memory is unavailable, and learns nothing then", async () => {
    await withEnv({ MEMORY: "off" }, async () => {
      expect((await profile(owner)).body).toEqual({ static_facts: [], dynamic_facts: [], is_available: false });
      expect((await search(owner, "analytics")).body).toEqual({ memories: [], total: 0, query: "analytics" });
      await chat(owner, "We use Linear for issue tracking.");
      await learned();
    });
    expect((await listed(owner)).body.total).toBe(0);
  });
});
