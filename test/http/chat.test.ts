/**
 * Chat conversations over HTTP (spec 01 Conversation, Message, Chat conversations, Limits; DESIGN.md section 5
 * message feedback) and the operations the copilot's agent loop calls (openConversation, appendMessage, history,
 * inferred fields on append). Conversations are private to their creator: anyone else asking by id gets 404.
 */
import { randomUUID } from "node:crypto";
import { afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import * as Chat from "../../core/chat";
import { AppError } from "../../core/error";
import { routesOf } from "../../functions/http/routes";
import { call, newUser, newWorkspace } from "../support/api";
import { expectEnvelope, fillPath, partitionItems } from "./_helpers";
import { setAccount } from "../support/billing";
import { deletedBeforeUpdate } from "../support/races";
import { idIndexLags } from "../support/index-lag";
import { LIST_RESPONSE_BYTES } from "../../core/response-size";
import { db as chatDb } from "../../core/db/service";

type Token = string;
interface Person { token: Token; id: string; email: string }
type Conv = Chat.ConversationView;

let owner: Person;
let member: Person;
let outsider: Person;
let wsId: string;
let otherWsId: string;

beforeAll(async () => {
  const [{ owner: o, workspace }, m, x, other] = await Promise.all([newWorkspace("Chat"), newUser(), newUser(), newWorkspace("Other")]);
  owner = o;
  member = m;
  outsider = x;
  wsId = workspace.id;
  otherWsId = other.workspace.id;
  const added = await call("POST", `/api/workspaces/${wsId}/members`, { token: owner.token, body: { email: member.email, role: "member" } });
  expect(added.status, added.text).toBe(201);
  // The owner of "Chat" is also a member of "Other", so the same user has conversations in two workspaces.
  const joined = await call("POST", `/api/workspaces/${otherWsId}/members`, { token: other.owner.token, body: { email: owner.email } });
  expect(joined.status, joined.text).toBe(201);
});

afterEach(() => {
  vi.useRealTimers();
});

async function newConv(who: Person, body: Record<string, unknown> = {}, workspaceId = wsId): Promise<Conv> {
  const res = await call("POST", "/api/chat/conversations", { token: who.token, body: { workspace_id: workspaceId, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body as Conv;
}

const say = (conv: Conv, content: string, role: "user" | "assistant" = "user", extra: Partial<Chat.NewMessage> = {}) =>
  Chat.appendMessage(conv, { role, content, ...extra });

const list = (who: Person, query: Record<string, string | number | boolean | undefined> = {}) =>
  call("GET", "/api/chat/conversations", { token: who.token, query: { workspace_id: wsId, ...query } });

const search = (who: Person, query: Record<string, string | number | undefined>) =>
  call("GET", "/api/chat/conversations/search", { token: who.token, query: { workspace_id: wsId, ...query } });

const ids = (items: { id: string }[]) => items.map((i) => i.id);

/** Expect a core call to fail with this AppError code. */
async function rejectsWith(promise: Promise<unknown>, code: string) {
  const err = await promise.then(() => undefined, (e: unknown) => e);
  expect(err, `expected ${code}`).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe(code);
}

describe("POST /api/chat/conversations", () => {
  it("creates an empty conversation of the caller with the default title (201)", async () => {
    const res = await call("POST", "/api/chat/conversations", { token: owner.token, body: { workspace_id: wsId } });
    expect(res.status, res.text).toBe(201);
    expect(res.body).toMatchObject({
      workspace_id: wsId,
      user_id: owner.id,
      title: "New Conversation",
      purpose: null,
      working_state: null,
      resumed_from: null,
      is_archived: false,
      last_message_at: null,
      message_count: 0,
    });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    // It expires with the plan's history window even if no message is ever written (else it is kept for ever).
    const stored = (await chatDb().entities.conversation.get({ workspace_id: wsId, id: res.body.id }).go()).data!;
    const days = (await Chat.historyWindow(wsId)).days;
    expect(stored.ttl).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000) + days * 86_400 - 60);
    expect(stored.ttl).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + days * 86_400);
    expect(res.body.updated_at >= res.body.created_at).toBe(true);
    const named = await newConv(owner, { title: "  Pricing research  " });
    expect(named.title).toBe("Pricing research");
  });

  it("accepts resumed_from only for the caller's own conversation in the same workspace (422 otherwise)", async () => {
    const prior = await newConv(owner);
    const resumed = await newConv(owner, { resumed_from: prior.id });
    expect(resumed.resumed_from).toBe(prior.id);

    const othersConv = await newConv(member);
    const elsewhere = await newConv(owner, {}, otherWsId);
    for (const bad of [othersConv.id, elsewhere.id, randomUUID()]) {
      const res = await call("POST", "/api/chat/conversations", { token: owner.token, body: { workspace_id: wsId, resumed_from: bad } });
      expectEnvelope(res, 422, "VALIDATION_ERROR");
      expect(res.body.errors[0].loc).toEqual(["body", "resumed_from"]);
    }
  });

  it("validates the body (422) and checks membership (403, also for an unknown workspace)", async () => {
    const post = (token: Token, body: unknown) => call("POST", "/api/chat/conversations", { token, body });
    for (const body of [{}, { workspace_id: "nope" }, { workspace_id: wsId, title: "" }, { workspace_id: wsId, title: "x".repeat(201) }, { workspace_id: wsId, colour: "red" }]) {
      expectEnvelope(await post(owner.token, body), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await post(outsider.token, { workspace_id: wsId }), 403, "FORBIDDEN");
    expectEnvelope(await post(owner.token, { workspace_id: randomUUID() }), 403, "FORBIDDEN");
  });
});

describe("GET /api/chat/conversations", () => {
  let me: Person;
  let ws: string;
  let c: Record<string, Conv>;
  const mine = (query: Record<string, string | number | boolean | undefined> = {}) =>
    call("GET", "/api/chat/conversations", { token: me.token, query: { workspace_id: ws, ...query } });

  beforeAll(async () => {
    const { owner: o, workspace } = await newWorkspace("Listing");
    me = o;
    ws = workspace.id;
    c = {};
    // Sequential, so creation and message times order them.
    for (const name of ["first", "second", "third"]) c[name] = await newConv(me, { title: name }, ws);
    await say(c.first!, "hello first");
    await say(c.second!, "hello second");
    c.fourth = await newConv(me, { title: "fourth" }, ws);
    c.archived = await newConv(me, { title: "archived" }, ws);
    await say(c.archived!, "old");
    expect((await call("POST", `/api/chat/conversations/${c.archived!.id}/archive`, { token: me.token })).status).toBe(200);
  });

  it("lists the caller's conversations, most recent message first; empty ones by created_at", async () => {
    const res = await mine();
    expect(res.status, res.text).toBe(200);
    // fourth has no message but was created after every message; third has none and is the oldest.
    expect(ids(res.body.conversations)).toEqual([c.fourth!.id, c.second!.id, c.first!.id, c.third!.id]);
    expect(res.body.total).toBe(4);
    expect(res.body.has_more).toBe(false);
    const second = res.body.conversations[1];
    expect(second.message_count).toBe(1);
    expect(second.last_message_at).toEqual(expect.any(String));

    // A new message moves its conversation to the top.
    await say(c.third!, "back again");
    expect(ids((await mine()).body.conversations)).toEqual([c.third!.id, c.fourth!.id, c.second!.id, c.first!.id]);
  });

  it("paginates with limit and offset and reports has_more", async () => {
    const all = ids((await mine()).body.conversations);
    const page = await mine({ limit: 2, offset: 1 });
    expect(ids(page.body.conversations)).toEqual(all.slice(1, 3));
    expect(page.body).toMatchObject({ total: 4, has_more: true });
    const last = await mine({ limit: 2, offset: 2 });
    expect(ids(last.body.conversations)).toEqual(all.slice(2, 4));
    expect(last.body.has_more).toBe(false);
    expect((await mine({ offset: 10 })).body).toEqual({ conversations: [], total: 4, has_more: false });
  });

  it("shows archived conversations only with include_archived", async () => {
    const withArchived = await mine({ include_archived: true });
    expect(withArchived.body.total).toBe(5);
    expect(ids(withArchived.body.conversations)).toContain(c.archived!.id);
    expect(withArchived.body.conversations.find((x: Conv) => x.id === c.archived!.id).is_archived).toBe(true);
    expect(ids((await mine({ include_archived: false })).body.conversations)).not.toContain(c.archived!.id);
  });

  it("lists only the caller's own conversations", async () => {
    const a = await newConv(owner, { title: "owner's" });
    const b = await newConv(member, { title: "member's" });
    const ownerIds = ids((await list(owner, { limit: 100, include_archived: true })).body.conversations);
    const memberIds = ids((await list(member, { limit: 100, include_archived: true })).body.conversations);
    expect(ownerIds).toContain(a.id);
    expect(ownerIds).not.toContain(b.id);
    expect(memberIds).toContain(b.id);
    expect(memberIds).not.toContain(a.id);
  });

  it("returns 20 by default, and refuses limits beyond 1..100 and bad parameters (422); non-member 403", async () => {
    const { owner: o, workspace } = await newWorkspace("Many conversations");
    await Promise.all(Array.from({ length: 21 }, () => newConv(o, {}, workspace.id)));
    const byDefault = await call("GET", "/api/chat/conversations", { token: o.token, query: { workspace_id: workspace.id } });
    expect(byDefault.body.conversations).toHaveLength(20);
    expect(byDefault.body).toMatchObject({ total: 21, has_more: true });
    const max = await call("GET", "/api/chat/conversations", { token: o.token, query: { workspace_id: workspace.id, limit: 100 } });
    expect(max.body.conversations).toHaveLength(21);

    for (const bad of [{ limit: 101 }, { limit: 0 }, { offset: -1 }, { include_archived: "maybe" }, { workspace_id: "nope" }]) {
      expectEnvelope(await mine(bad), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await call("GET", "/api/chat/conversations", { token: me.token }), 422, "VALIDATION_ERROR");
    expectEnvelope(await list(outsider), 403, "FORBIDDEN");
  });
});

describe("GET /api/chat/conversations/search", () => {
  let me: Person;
  let ws: string;
  let exportConv: Conv;
  let archivedConv: Conv;

  beforeAll(async () => {
    const { owner: o, workspace } = await newWorkspace("Search");
    me = o;
    ws = workspace.id;
    const colleague = await newUser();
    await call("POST", `/api/workspaces/${ws}/members`, { token: me.token, body: { email: colleague.email } });
    exportConv = await newConv(me, { title: "Exports" }, ws);
    await say(exportConv, "Why is the CSV Export broken?");
    await say(exportConv, "The csv export fails on files over 10 MB.", "assistant");
    await say(exportConv, "Nothing to see here.", "assistant");
    archivedConv = await newConv(me, { title: "Old exports" }, ws);
    await say(archivedConv, "An archived question about CSV files");
    await call("POST", `/api/chat/conversations/${archivedConv.id}/archive`, { token: me.token });
    // Another member's conversation in the same workspace, and the same user's conversation elsewhere.
    const theirs = await newConv(colleague, { title: "Colleague" }, ws);
    await say(theirs, "my CSV export question");
    const second = await call("POST", "/api/workspaces", { token: me.token, body: { name: "Second" } });
    expect(second.status, second.text).toBe(201);
    await say(await newConv(me, {}, second.body.id), "csv elsewhere");
  });

  const find = (query: Record<string, string | number | undefined>) =>
    call("GET", "/api/chat/conversations/search", { token: me.token, query: { workspace_id: ws, ...query } });

  it("matches message content case-insensitively, newest first, the caller's conversations only (archived included)", async () => {
    const res = await find({ q: "cSv" });
    expect(res.status, res.text).toBe(200);
    expect(res.body.total).toBe(3);
    expect(res.body.results).toEqual([
      { conversation_id: archivedConv.id, title: "Old exports", message_content: "An archived question about CSV files", message_created_at: expect.any(String) },
      { conversation_id: exportConv.id, title: "Exports", message_content: "The csv export fails on files over 10 MB.", message_created_at: expect.any(String) },
      { conversation_id: exportConv.id, title: "Exports", message_content: "Why is the CSV Export broken?", message_created_at: expect.any(String) },
    ]);
    const times = res.body.results.map((r: { message_created_at: string }) => r.message_created_at);
    expect([...times].sort().reverse()).toEqual(times);
    const upper = await find({ q: "CSV EXPORT BROKEN" });
    expect(upper.body.results.map((r: { message_content: string }) => r.message_content)).toEqual(["Why is the CSV Export broken?"]);
    expect((await find({ q: "export is broken" })).body.total).toBe(0);
    expect((await find({ q: "csv export" })).body.total).toBe(2);
    expect((await find({ q: "nonexistent phrase" })).body).toEqual({ results: [], total: 0 });
  });

  it("another member's matching conversation never appears", async () => {
    const mineOnly = await find({ q: "my CSV export question" });
    expect(mineOnly.body).toEqual({ results: [], total: 0 });
  });

  it("caps results with limit while total counts every match; long messages come back as a snippet around the match", async () => {
    const limited = await find({ q: "csv", limit: 1 });
    expect(limited.body.results).toHaveLength(1);
    expect(limited.body.total).toBe(3);

    const long = await newConv(me, { title: "Long" }, ws);
    await say(long, `${"a".repeat(5_000)} NEEDLE-in-haystack ${"b".repeat(5_000)}`, "assistant");
    const hit = (await find({ q: "needle-in" })).body.results[0];
    expect(hit.conversation_id).toBe(long.id);
    expect(hit.message_content).toContain("NEEDLE-in-haystack");
    expect(hit.message_content.length).toBeLessThanOrEqual(1_002);
    expect(hit.message_content.startsWith("…")).toBe(true);
  });

  it("refuses an empty, missing or over-long q and limits beyond 1..100 (422); non-member 403", async () => {
    for (const bad of [{ q: "" }, { q: "   " }, {}, { q: "x".repeat(501) }, { q: "csv", limit: 101 }, { q: "csv", limit: 0 }]) {
      expectEnvelope(await find(bad), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await search(outsider, { q: "csv" }), 403, "FORBIDDEN");
  });
});

describe("GET /api/chat/conversations/{id}", () => {
  it("returns the owner's conversation with every message in order, assistant fields null when absent", async () => {
    const conv = await newConv(owner, { title: "Detail" });
    const first = await say(conv, "What do users say about exports?");
    const answer = await say(conv, "They want CSV.", "assistant", {
      inferred_intent: "research_question",
      thinking_blocks: [{ type: "thinking", text: "look at insights" }],
      decision_context: { model: "local", effort: "low" },
      execution_metadata: { steps: [{ tool: "search_insights", ms: 12 }] },
    });
    const third = await say(conv, "Thanks");
    const res = await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token });
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ id: conv.id, title: "Detail", message_count: 3, last_message_at: third.created_at });
    expect(ids(res.body.messages)).toEqual([first.id, answer.id, third.id]);
    expect(res.body.messages[0]).toEqual({
      id: first.id,
      conversation_id: conv.id,
      role: "user",
      content: "What do users say about exports?",
      created_at: first.created_at,
      inferred_intent: null,
      thinking_blocks: null,
      decision_context: null,
      execution_metadata: null,
    });
    expect(res.body.messages[1]).toMatchObject({
      role: "assistant",
      inferred_intent: "research_question",
      thinking_blocks: [{ type: "thinking", text: "look at insights" }],
      decision_context: { model: "local", effort: "low" },
      execution_metadata: { steps: [{ tool: "search_insights", ms: 12 }] },
    });
  });

  it("is private: another member and an outsider get 404, as does an unknown id; a malformed id is 422", async () => {
    const conv = await newConv(owner);
    expectEnvelope(await call("GET", `/api/chat/conversations/${conv.id}`, { token: member.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/chat/conversations/${conv.id}`, { token: outsider.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", `/api/chat/conversations/${randomUUID()}`, { token: owner.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("GET", "/api/chat/conversations/not-a-uuid", { token: owner.token }), 422, "VALIDATION_ERROR");
  });

  it("a conversation the id index does not know yet (it lags its table) is found a moment later, not answered 404", async () => {
    const conv = await newConv(owner, { title: "Just made" });
    const lag = idIndexLags(conv.id, 2);
    try {
      const res = await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token });
      expect(res.status, res.text).toBe(200);
      expect(res.body.id).toBe(conv.id);
    } finally {
      lag.restore();
    }
    expect(lag.hidden()).toBe(2);
  });

  it("an owner who left the workspace gets 404 on their old conversation, as for one that does not exist", async () => {
    const { owner: o, workspace } = await newWorkspace("Leaving");
    const leaver = await newUser();
    await call("POST", `/api/workspaces/${workspace.id}/members`, { token: o.token, body: { email: leaver.email } });
    const conv = await newConv(leaver, {}, workspace.id);
    const gone = await call("DELETE", `/api/workspaces/${workspace.id}/members/${leaver.id}`, { token: o.token });
    expect(gone.status, gone.text).toBe(204);
    expectEnvelope(await call("GET", `/api/chat/conversations/${conv.id}`, { token: leaver.token }), 404, "NOT_FOUND");
  });
});

describe("PATCH, archive and restore", () => {
  it("patches title and is_archived (strict, at least one field)", async () => {
    const conv = await newConv(owner);
    const renamed = await call("PATCH", `/api/chat/conversations/${conv.id}`, { token: owner.token, body: { title: "Renamed" } });
    expect(renamed.status, renamed.text).toBe(200);
    expect(renamed.body).toMatchObject({ id: conv.id, title: "Renamed", is_archived: false });
    expect(renamed.body.updated_at >= conv.updated_at).toBe(true);
    const both = await call("PATCH", `/api/chat/conversations/${conv.id}`, { token: owner.token, body: { title: "Both", is_archived: true } });
    expect(both.body).toMatchObject({ title: "Both", is_archived: true });
    const got = await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token });
    expect(got.body).toMatchObject({ title: "Both", is_archived: true });

    for (const body of [{}, { title: "" }, { is_archived: "yes" }, { purpose: "sneaky" }]) {
      expectEnvelope(await call("PATCH", `/api/chat/conversations/${conv.id}`, { token: owner.token, body }), 422, "VALIDATION_ERROR");
    }
    expectEnvelope(await call("PATCH", `/api/chat/conversations/${conv.id}`, { token: member.token, body: { title: "Hijack" } }), 404, "NOT_FOUND");
    expect((await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token })).body.title).toBe("Both");
  });

  it("archive hides a conversation from the list, restore brings it back; both without a body, idempotent", async () => {
    const conv = await newConv(owner, { title: "Archive me" });
    const archived = await call("POST", `/api/chat/conversations/${conv.id}/archive`, { token: owner.token });
    expect(archived.status, archived.text).toBe(200);
    expect(archived.body).toMatchObject({ id: conv.id, is_archived: true });
    expect((await call("POST", `/api/chat/conversations/${conv.id}/archive`, { token: owner.token, body: {} })).body.is_archived).toBe(true);
    expect(ids((await list(owner, { limit: 100 })).body.conversations)).not.toContain(conv.id);

    const restored = await call("POST", `/api/chat/conversations/${conv.id}/restore`, { token: owner.token });
    expect(restored.status).toBe(200);
    expect(restored.body.is_archived).toBe(false);
    expect(ids((await list(owner, { limit: 100 })).body.conversations)).toContain(conv.id);

    expectEnvelope(await call("POST", `/api/chat/conversations/${conv.id}/archive`, { token: member.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", `/api/chat/conversations/${conv.id}/restore`, { token: outsider.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", `/api/chat/conversations/${conv.id}/archive`, { token: owner.token, body: { now: true } }), 422, "VALIDATION_ERROR");
  });
});

describe("a conversation heavier than one answer may be (Lambda: 6 MB)", () => {
  it("GET conversation and GET messages give the newest messages that fit; the cursor pages back to the oldest", async () => {
    // A workspace of its own: the other tests' searches read every message of their user.
    const { owner: heavy, workspace } = await newWorkspace("Heavy chat");
    const conv = await newConv(heavy, {}, workspace.id);
    const long = "words ".repeat(16_500); // 99,000 characters: 65 of them are 6.4 MB
    for (let k = 0; k < 65; k++) await say(conv, `${k} ${long}`, k % 2 ? "assistant" : "user");
    const detail = await call("GET", `/api/chat/conversations/${conv.id}`, { token: heavy.token });
    expect(detail.status).toBe(200);
    expect(Buffer.byteLength(detail.text)).toBeLessThan(LIST_RESPONSE_BYTES + 10_000);
    expect(detail.body.message_count).toBe(65);
    const newestGiven = detail.body.messages as { content: string; created_at: string }[];
    expect(newestGiven.at(-1)!.content.startsWith("64 ")).toBe(true);
    expect(newestGiven.length).toBeLessThan(65);

    const seen: string[] = [];
    let before: string | undefined;
    for (let pages = 0; pages < 5 && seen.length < 65; pages++) {
      const page = await call("GET", `/api/chat/conversations/${conv.id}/messages`, { token: heavy.token, query: before ? { before } : {} });
      expect(page.status).toBe(200);
      expect(Buffer.byteLength(page.text)).toBeLessThan(LIST_RESPONSE_BYTES + 10_000);
      seen.unshift(...(page.body as { content: string }[]).map((m) => m.content.split(" ")[0]!));
      before = page.body[0].created_at;
    }
    expect(seen).toEqual(Array.from({ length: 65 }, (_, k) => String(k)));
  }, 120_000);
});

describe("feedback racing a DELETE", () => {
  it("is 404 when the conversation is deleted before the feedback is written, and leaves nothing behind", async () => {
    const conv = await newConv(owner);
    await say(conv, "Why do people leave?");
    const answer = await say(conv, "Because sign-in fails.", "assistant");
    const res = await deletedBeforeUpdate(
      `conversation#${conv.id}`,
      () => call("DELETE", `/api/chat/conversations/${conv.id}`, { token: owner.token }),
      () => call("POST", `/api/chat/messages/${answer.id}/feedback`, { token: owner.token, body: { rating: "positive" } }),
      /^(TransactWrite|Put)/,
    );
    expectEnvelope(res, 404, "NOT_FOUND");
    expect((await partitionItems(`ws#${wsId}`)).filter((i) => String(i.sk).startsWith(`conversation#${conv.id}`))).toEqual([]);
  });
});

describe("PATCH and archive racing a DELETE", () => {
  it("answer 404 when the conversation is deleted between their read and their write (it was a 500)", async () => {
    for (const send of [
      (id: string) => call("PATCH", `/api/chat/conversations/${id}`, { token: owner.token, body: { title: "Late" } }),
      (id: string) => call("POST", `/api/chat/conversations/${id}/archive`, { token: owner.token }),
    ]) {
      const conv = await newConv(owner);
      const res = await deletedBeforeUpdate(`conversation#${conv.id}`, () => call("DELETE", `/api/chat/conversations/${conv.id}`, { token: owner.token }), () => send(conv.id));
      expectEnvelope(res, 404, "NOT_FOUND");
      // Nothing was brought back by the late write.
      expect((await partitionItems(`ws#${wsId}`)).filter((i) => String(i.sk).startsWith(`conversation#${conv.id}`))).toEqual([]);
    }
  });
});

describe("DELETE /api/chat/conversations/{id}", () => {
  it("removes the conversation, its messages and their feedback, and nothing else", async () => {
    const { owner: o, workspace } = await newWorkspace("Deleting");
    const doomed = await newConv(o, {}, workspace.id);
    const kept = await newConv(o, {}, workspace.id);
    await say(doomed, "question");
    const answer = await say(doomed, "answer", "assistant");
    await say(kept, "keep me");
    const fb = await call("POST", `/api/chat/messages/${answer.id}/feedback`, { token: o.token, body: { rating: "positive" } });
    expect(fb.status, fb.text).toBe(200);
    const prefix = `conversation#${doomed.id}`;
    const before = (await partitionItems(`ws#${workspace.id}`)).filter((i) => String(i.sk).startsWith(prefix));
    expect(before).toHaveLength(4); // conversation, two messages, one feedback

    expectEnvelope(await call("DELETE", `/api/chat/conversations/${doomed.id}`, { token: member.token }), 404, "NOT_FOUND");
    const res = await call("DELETE", `/api/chat/conversations/${doomed.id}`, { token: o.token });
    expect(res.status, res.text).toBe(204);

    const items = await partitionItems(`ws#${workspace.id}`);
    expect(items.filter((i) => String(i.sk).startsWith(prefix))).toEqual([]);
    expect(items.filter((i) => String(i.sk).startsWith(`conversation#${kept.id}`))).toHaveLength(2);
    expectEnvelope(await call("GET", `/api/chat/conversations/${doomed.id}`, { token: o.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("DELETE", `/api/chat/conversations/${doomed.id}`, { token: o.token }), 404, "NOT_FOUND");
    expectEnvelope(await call("POST", `/api/chat/messages/${answer.id}/feedback`, { token: o.token, body: { rating: "negative" } }), 404, "NOT_FOUND");
    expect(await Chat.feedbackOf(workspace.id)).toEqual([]);
    const search = await call("GET", "/api/chat/conversations/search", { token: o.token, query: { workspace_id: workspace.id, q: "answer" } });
    expect(search.body.total).toBe(0);
  });

  it("an answer appended while the delete runs (after it listed the messages) is deleted too, and never found by search", async () => {
    const { dynamoClient } = await import("../../core/db/client");
    const { owner: o, workspace } = await newWorkspace("Deleting mid-answer");
    const doomed = await newConv(o, {}, workspace.id);
    await say(doomed, "question");
    const prefix = `conversation#${doomed.id}`;
    // The stream's answer lands just after the delete's Query of the conversation's items came back.
    const name = "appendAfterListing";
    let appended = false;
    dynamoClient().middlewareStack.add(
      (next, context) => async (args) => {
        const out = await next(args);
        const input = args.input as { ExpressionAttributeValues?: Record<string, unknown> };
        if (!appended && context.commandName === "QueryCommand" && input.ExpressionAttributeValues?.[":sk"] === prefix) {
          appended = true;
          await say(doomed, "late answer about exports", "assistant");
        }
        return out;
      },
      { step: "initialize", name },
    );
    try {
      const res = await call("DELETE", `/api/chat/conversations/${doomed.id}`, { token: o.token });
      expect(res.status, res.text).toBe(204);
    } finally {
      dynamoClient().middlewareStack.remove(name);
    }
    expect(appended).toBe(true);
    expect((await partitionItems(`ws#${workspace.id}`)).filter((i) => String(i.sk).startsWith(prefix))).toEqual([]);
    const found = await call("GET", "/api/chat/conversations/search", { token: o.token, query: { workspace_id: workspace.id, q: "late answer" } });
    expect(found.status, found.text).toBe(200);
    expect(found.body).toEqual({ results: [], total: 0 });
  });

  it("deleting the workspace purges its conversations, messages and feedback", async () => {
    const { owner: o, workspace } = await newWorkspace("Purged");
    const conv = await newConv(o, {}, workspace.id);
    await say(conv, "hi");
    const answer = await say(conv, "hello", "assistant");
    await call("POST", `/api/chat/messages/${answer.id}/feedback`, { token: o.token, body: { rating: "positive" } });
    expect((await call("DELETE", `/api/workspaces/${workspace.id}`, { token: o.token })).status).toBe(204);
    expect(await partitionItems(`ws#${workspace.id}`)).toEqual([]);
  });
});

describe("GET /api/chat/conversations/{id}/messages", () => {
  let conv: Conv;
  let made: Chat.MessageView[];
  const page = (query: Record<string, string | number | undefined>, token = owner.token) =>
    call("GET", `/api/chat/conversations/${conv.id}/messages`, { token, query });

  beforeAll(async () => {
    conv = await newConv(owner, { title: "Paging" });
    made = [];
    for (let k = 0; k < 7; k++) made.push(await say(conv, `message ${k}`, k % 2 ? "assistant" : "user"));
  });

  it("a cursor past year 9999 (an offset reaches it from 9999-12-31) is after every message, not before them all", async () => {
    for (const before of ["9999-12-31T00:00:00Z", "9999-12-31T23:59:59-05:00"]) {
      const res = await page({ before });
      expect(res.status, res.text).toBe(200);
      expect(ids(res.body)).toEqual(ids(made));
    }
  });

  it("returns every message oldest first by default (limit 100)", async () => {
    const res = await page({});
    expect(res.status, res.text).toBe(200);
    expect(ids(res.body)).toEqual(ids(made));
  });

  it("returns the newest `limit` messages before the cursor, oldest first, and the cursor walks back exactly", async () => {
    const newest = await page({ limit: 3 });
    expect(ids(newest.body)).toEqual(ids(made.slice(4)));
    const older = await page({ limit: 3, before: newest.body[0].created_at });
    expect(ids(older.body)).toEqual(ids(made.slice(1, 4)));
    const oldest = await page({ limit: 3, before: older.body[0].created_at });
    expect(ids(oldest.body)).toEqual([made[0]!.id]);
    expect((await page({ limit: 3, before: oldest.body[0].created_at })).body).toEqual([]);
    // The cursor is strict and accepts any ISO offset.
    const at = new Date(made[2]!.created_at);
    const offset = new Date(at.getTime() + 3_600_000).toISOString().replace("Z", "+01:00");
    expect(ids((await page({ before: offset })).body)).toEqual(ids(made.slice(0, 2)));
    expect(ids((await page({ before: "2000-01-01T00:00:00Z" })).body)).toEqual([]);
    // ISO 8601 without an offset is UTC, as every timestamp the service gives out is.
    expect(ids((await page({ before: made[2]!.created_at.replace(/Z$/, "") })).body)).toEqual(ids(made.slice(0, 2)));
  });

  it("refuses a limit beyond 1..500 or a bad cursor (422); anyone but the owner 404", async () => {
    for (const bad of [{ limit: 501 }, { limit: 0 }, { before: "yesterday" }, { before: "2024-13-01T00:00:00Z" }]) {
      expectEnvelope(await page(bad), 422, "VALIDATION_ERROR");
    }
    expect((await page({ limit: 500 })).status).toBe(200);
    expectEnvelope(await page({}, member.token), 404, "NOT_FOUND");
    expectEnvelope(await page({}, outsider.token), 404, "NOT_FOUND");
  });
});

describe("POST /api/chat/messages/{id}/feedback", () => {
  let conv: Conv;
  let question: Chat.MessageView;
  let answer: Chat.MessageView;
  beforeAll(async () => {
    conv = await newConv(owner, { title: "Feedback" });
    question = await say(conv, "How many users churned?");
    answer = await say(conv, "About 12%.", "assistant");
  });
  const rate = (messageId: string, body: unknown, token = owner.token) =>
    call("POST", `/api/chat/messages/${messageId}/feedback`, { token, body });

  it("stores the owner's rating of an assistant message; a second post replaces it", async () => {
    const first = await rate(answer.id, { rating: "negative", tags: ["inaccurate", "too_short", "inaccurate"], comment: "Wrong number" });
    expect(first.status, first.text).toBe(200);
    expect(first.body).toEqual({
      id: expect.any(String),
      message_id: answer.id,
      conversation_id: conv.id,
      workspace_id: wsId,
      user_id: owner.id,
      rating: "negative",
      tags: ["inaccurate", "too_short"],
      comment: "Wrong number",
      created_at: expect.any(String),
    });
    const second = await rate(answer.id, { rating: "positive" });
    expect(second.status).toBe(200);
    expect(second.body).toMatchObject({ id: first.body.id, rating: "positive", tags: [], comment: null });
    expect(second.body.created_at >= first.body.created_at).toBe(true);

    const stored = (await partitionItems(`ws#${wsId}`)).filter((i) => String(i.sk).startsWith(`conversation#${conv.id}#feedback#`));
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ rating: "positive", message_id: answer.id });
    const dashboard = await Chat.feedbackOf(wsId);
    expect(dashboard.filter((f) => f.message_id === answer.id)).toEqual([second.body]);
  });

  it("a message the id index does not know yet is found a moment later, not answered 404", async () => {
    const fresh = await say(conv, "Fresh answer.", "assistant");
    const lag = idIndexLags(fresh.id);
    try {
      const res = await rate(fresh.id, { rating: "positive" });
      expect(res.status, res.text).toBe(200);
    } finally {
      lag.restore();
    }
    expect(lag.hidden()).toBe(1);
  });

  it("refuses a user message (422), someone else's or an unknown message (404), and bad bodies (422)", async () => {
    const res = await rate(question.id, { rating: "positive" });
    expectEnvelope(res, 422, "VALIDATION_ERROR");
    expect(res.body.errors[0].loc).toEqual(["path", "message_id"]);
    expectEnvelope(await rate(answer.id, { rating: "positive" }, member.token), 404, "NOT_FOUND");
    expectEnvelope(await rate(answer.id, { rating: "positive" }, outsider.token), 404, "NOT_FOUND");
    expectEnvelope(await rate(randomUUID(), { rating: "positive" }), 404, "NOT_FOUND");
    for (const body of [
      {},
      { rating: 5 },
      { rating: "meh" },
      { rating: "positive", tags: Array.from({ length: 11 }, (_, k) => `t${k}`) },
      { rating: "positive", tags: ["x".repeat(51)] },
      { rating: "positive", comment: "x".repeat(2001) },
      { rating: "positive", extra: true },
    ]) {
      expectEnvelope(await rate(answer.id, body), 422, "VALIDATION_ERROR");
    }
    expect((await rate(answer.id, { rating: "positive", tags: Array.from({ length: 10 }, (_, k) => `t${k}`), comment: "x".repeat(2000) })).status).toBe(200);
  });

  it("feedbackOf lists a workspace's feedback newest first, from a date", async () => {
    const { owner: o, workspace } = await newWorkspace("Dashboard");
    const c = await newConv(o, {}, workspace.id);
    const a1 = await say(c, "one", "assistant");
    const a2 = await say(c, "two", "assistant");
    const f1 = (await rate(a1.id, { rating: "positive" }, o.token)).body;
    const f2 = (await rate(a2.id, { rating: "negative" }, o.token)).body;
    expect(ids(await Chat.feedbackOf(workspace.id))).toEqual([f2.id, f1.id]);
    expect(ids(await Chat.feedbackOf(workspace.id, { since: f2.created_at }))).toEqual([f2.id]);
    expect(await Chat.feedbackOf(workspace.id, { since: new Date(Date.now() + 60_000).toISOString() })).toEqual([]);
  });
});

describe("agent operations", () => {
  it("openConversation creates one titled from the prompt, or loads the user's own (else NOT_FOUND)", async () => {
    const prompt = "  Summarise   what our interview participants said about onboarding friction in the mobile app please ";
    const opened = await Chat.openConversation(owner.id, wsId, undefined, prompt);
    expect(opened.title).toBe("Summarise what our interview participants said about onboard");
    expect(opened.title).toHaveLength(60);
    expect(opened).toMatchObject({ user_id: owner.id, workspace_id: wsId, message_count: 0 });
    expect((await Chat.openConversation(owner.id, wsId, undefined, "   ")).title).toBe("New Conversation");

    expect(await Chat.openConversation(owner.id, wsId, opened.id, "ignored")).toEqual(opened);
    await rejectsWith(Chat.openConversation(member.id, wsId, opened.id, "x"), "NOT_FOUND");
    await rejectsWith(Chat.openConversation(owner.id, otherWsId, opened.id, "x"), "NOT_FOUND");
    await rejectsWith(Chat.openConversation(owner.id, wsId, randomUUID(), "x"), "NOT_FOUND");
    await rejectsWith(Chat.openConversation(outsider.id, wsId, undefined, "x"), "FORBIDDEN");
  });

  it("openConversation with deferCreate stores nothing; the first appendMessage stores the conversation with its message in one transaction", async () => {
    const patches = vi.spyOn(chatDb().entities.conversation, "patch");
    const unsaved = await Chat.openConversation(owner.id, wsId, undefined, "Where do users give up during sign-up?", { deferCreate: true });
    expect(unsaved).toMatchObject({ unsaved: true, user_id: owner.id, workspace_id: wsId, message_count: 0, title: "Where do users give up during sign-up?" });
    expect((await call("GET", `/api/chat/conversations/${unsaved.id}`, { token: owner.token })).status).toBe(404);
    await rejectsWith(Chat.openConversation(outsider.id, wsId, undefined, "x", { deferCreate: true }), "FORBIDDEN");

    const first = await Chat.appendMessage(unsaved, { role: "user", content: "Where do users give up during sign-up?" }, { historyDays: 30 });
    // Created with its first message: no update of a stored conversation.
    expect(patches).not.toHaveBeenCalled();
    const detail = (await call("GET", `/api/chat/conversations/${unsaved.id}`, { token: owner.token })).body;
    expect(detail).toMatchObject({ id: unsaved.id, title: unsaved.title, created_at: unsaved.created_at, message_count: 1, last_message_at: first.created_at });
    expect(detail.messages.map((m: { id: string }) => m.id)).toEqual([first.id]);
    const [stored] = (await partitionItems(`ws#${wsId}`)).filter((i) => i.sk === `conversation#${unsaved.id}`);
    expect(Math.abs((stored!.ttl as number) - (Date.parse(first.created_at) / 1000 + 30 * 86_400))).toBeLessThan(2);
    // The same unsaved view again (a caller that kept it): the create finds the conversation there and appends after.
    const second = await Chat.appendMessage(unsaved, { role: "assistant", content: "At the phone number step." }, { historyDays: 30 });
    const after = (await call("GET", `/api/chat/conversations/${unsaved.id}`, { token: owner.token })).body;
    expect(after.message_count).toBe(2);
    expect(after.messages.map((m: { id: string }) => m.id)).toEqual([first.id, second.id]);
    expect(patches).toHaveBeenCalledTimes(1);
    patches.mockRestore();
  });

  it("appendMessage updates last_message_at, message_count and updated_at together", async () => {
    const conv = await newConv(owner);
    const m = await say(conv, "first");
    const after = (await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token })).body;
    expect(after.message_count).toBe(1);
    expect(after.last_message_at).toBe(m.created_at);
    expect(after.updated_at >= m.created_at).toBe(true);
    await Promise.all([say(conv, "a"), say(conv, "b"), say(conv, "c")]);
    const detail = (await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token })).body;
    expect(detail.message_count).toBe(4);
    expect(detail.messages).toHaveLength(4);
    expect(detail.last_message_at).toBe(detail.messages[3].created_at);
    await rejectsWith(Chat.appendMessage({ id: randomUUID(), workspace_id: wsId, user_id: owner.id }, { role: "user", content: "x" }), "NOT_FOUND");
  });

  it("appendMessage with the caller's view of the conversation reads nothing first; a stale view still appends in order", async () => {
    const conv = await newConv(owner);
    const reads = vi.spyOn(chatDb().entities.conversation, "get");
    const first = await Chat.appendMessage(conv, { role: "user", content: "one" }, { expected: { message_count: 0, last_message_at: null }, historyDays: 30 });
    expect(reads).not.toHaveBeenCalled();
    // The message expires 30 days after it was written (the window the caller gave).
    const [stored] = (await partitionItems(`ws#${wsId}`)).filter((i) => i.id === first.id);
    expect(Math.abs((stored!.ttl as number) - (Date.parse(first.created_at) / 1000 + 30 * 86_400))).toBeLessThan(2);
    // Another append happens meanwhile: the caller's view is stale, so the append reads the conversation and comes last.
    const other = await say(conv, "two");
    reads.mockClear();
    const third = await Chat.appendMessage(conv, { role: "assistant", content: "three" }, { expected: { message_count: 1, last_message_at: first.created_at } });
    expect(reads).toHaveBeenCalledTimes(1);
    reads.mockRestore();
    const detail = (await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token })).body;
    expect(detail.message_count).toBe(3);
    expect(ids(detail.messages)).toEqual([first.id, other.id, third.id]);
    expect(detail.last_message_at).toBe(third.created_at);
    // A gone conversation is still 404, whatever the caller believed.
    await rejectsWith(Chat.appendMessage({ id: randomUUID(), workspace_id: wsId, user_id: owner.id }, { role: "user", content: "x" }, { expected: { message_count: 0, last_message_at: null } }), "NOT_FOUND");
  });

  it("keeps the order of messages written within one millisecond, and under a clock that goes back", async () => {
    const conv = await newConv(owner);
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2030-01-01T00:00:00.000Z"));
    const written = [];
    for (const [k, role] of (["user", "assistant", "user", "assistant"] as const).entries()) written.push(await say(conv, `turn ${k}`, role));
    vi.setSystemTime(new Date("2029-12-31T23:59:59.000Z"));
    written.push(await say(conv, "after the clock went back"));
    vi.useRealTimers();
    const times = written.map((m) => m.created_at);
    expect(times).toEqual([
      "2030-01-01T00:00:00.000Z",
      "2030-01-01T00:00:00.001Z",
      "2030-01-01T00:00:00.002Z",
      "2030-01-01T00:00:00.003Z",
      "2030-01-01T00:00:00.004Z",
    ]);
    expect(ids(await Chat.history(conv, 10))).toEqual(ids(written));
    expect(ids((await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token })).body.messages)).toEqual(ids(written));
    const beforeThird = await call("GET", `/api/chat/conversations/${conv.id}/messages`, { token: owner.token, query: { before: times[2] } });
    expect(ids(beforeThird.body)).toEqual(ids(written.slice(0, 2)));
  });

  it("history gives the last n messages, oldest first", async () => {
    const conv = await newConv(owner);
    const written = [];
    for (let k = 0; k < 5; k++) written.push(await say(conv, `h${k}`, k % 2 ? "assistant" : "user"));
    expect(ids(await Chat.history(conv, 2))).toEqual(ids(written.slice(3)));
    expect(ids(await Chat.history(conv, 50))).toEqual(ids(written));
    expect(await Chat.history(conv, 0)).toEqual([]);
  });

  it("appendMessage refuses over-long content, oversized items and assistant fields on user messages", async () => {
    const conv = await newConv(owner);
    const longest = await say(conv, "x".repeat(100_000), "assistant");
    expect(longest.content).toHaveLength(100_000);
    await rejectsWith(say(conv, "x".repeat(100_001)), "VALIDATION_ERROR");
    // 100,000 two-byte characters plus their lower-cased copy would pass DynamoDB's 400 KB item limit.
    await rejectsWith(say(conv, "É".repeat(100_000), "assistant"), "VALIDATION_ERROR");
    await rejectsWith(say(conv, "hi", "user", { inferred_intent: "greeting" }), "VALIDATION_ERROR");
    expect((await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token })).body.message_count).toBe(1);
  });

  it("fitMessage cuts a long reasoning run's thinking to fit the item, so its answer is stored", async () => {
    const conv = await newConv(owner);
    const answer = "Sign-in loops are the top complaint.";
    // Two blocks of about 300 KB of thinking each (extended thinking over many tool turns), one redacted block.
    const thinking = [
      { type: "thinking", content: "Weighing the interviews. ".repeat(12_000), signature: "sig-1" },
      { type: "thinking", content: "Checking the reviews é. ".repeat(12_000), signature: "sig-2" },
      { type: "redacted_thinking", data: "x".repeat(200_000) },
    ];
    const message: Chat.NewMessage = { role: "assistant", content: answer, thinking_blocks: thinking, decision_context: { model: "m" } };
    await rejectsWith(Chat.appendMessage(conv, message), "VALIDATION_ERROR"); // as it is: over DynamoDB's item limit
    const stored = await Chat.appendMessage(conv, Chat.fitMessage(message));
    expect(stored.content).toBe(answer);
    const blocks = stored.thinking_blocks as { type: string; content?: string; signature?: string; data?: string; cut?: boolean }[];
    expect(blocks.map((b) => [b.type, b.cut])).toEqual([["thinking", true], ["thinking", true], ["redacted_thinking", true]]);
    expect(blocks[0]!.content!.startsWith("Weighing the interviews. ")).toBe(true);
    expect(blocks[0]!.content).toMatch(/\[cut to fit the message: \d+ more characters\]$/);
    expect(blocks[1]!.content).not.toContain("\uFFFD"); // never cut inside a character
    expect(blocks[0]!.signature).toBeUndefined(); // a cut block no longer verifies
    const got = await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token });
    expect(got.body.messages.at(-1)).toMatchObject({ id: stored.id, content: answer });
    // A message that fits is left as it is.
    const small: Chat.NewMessage = { role: "assistant", content: answer, thinking_blocks: [{ type: "thinking", content: "short", signature: "s" }] };
    expect(Chat.fitMessage(small)).toBe(small);
  });

  it("fitMessage cuts an answer over 100,000 characters with a marker, and a long run's steps to the first and last, so it is stored", async () => {
    const conv = await newConv(owner);
    // Every turn's text of a long run (123,200 characters) and 400 tool steps of about 1.2 KB each (their compacted input).
    const answer = "Sign-in loops after every update are the top complaint. ".repeat(2_200);
    const steps = Array.from({ length: 400 }, (_, i) => ({ turn: i + 1, name: "search_insights", input: { truncated: true, preview: `step ${i} `.padEnd(1_000, "q") }, status: "success", duration_ms: 12, result_chars: 900, truncated: false }));
    const message: Chat.NewMessage = { role: "assistant", content: answer, decision_context: { model: "m" }, execution_metadata: { steps, num_turns: 400, stop_reason: "end_turn", duration_ms: 1, pending_action_ids: [] } };
    await rejectsWith(Chat.appendMessage(conv, message), "VALIDATION_ERROR"); // as it is: refused after the stream sent it
    const stored = await Chat.appendMessage(conv, Chat.fitMessage(message));
    expect(stored.content.length).toBeLessThanOrEqual(100_000);
    expect(answer.startsWith(stored.content.slice(0, 99_000))).toBe(true);
    const left = Number(/\[Answer cut to fit the message: (\d+) more characters\]$/.exec(stored.content)?.[1]);
    expect(stored.content.lastIndexOf("\n\n[Answer cut")).toBe(answer.length - left); // the count is what was cut
    const meta = stored.execution_metadata as { steps: { turn: number }[]; steps_left_out: number; num_turns: number };
    expect(meta.steps[0]!.turn).toBe(1);
    expect(meta.steps.at(-1)!.turn).toBe(400);
    expect(meta.steps.length + meta.steps_left_out).toBe(400);
    expect(meta.steps.length).toBeGreaterThan(2);
    expect(meta.num_turns).toBe(400);
    // Multi-byte text whose 100,000 characters and their lower-cased copy pass the item's bytes is cut to them too.
    const wide = await Chat.appendMessage(conv, Chat.fitMessage({ role: "assistant", content: "登录问题。".repeat(20_000) }));
    expect(wide.content).toMatch(/^登录问题。/);
    expect(wide.content).toMatch(/\[Answer cut to fit the message: \d+ more characters\]$/);
    const got = await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token });
    expect(got.body.messages.map((m: { id: string }) => m.id)).toEqual([stored.id, wide.id]);
  });

  it("appendMessage sets an inferred title in its own transaction, only over an automatic title: a user's title, or a rename racing the append, is kept", async () => {
    const got = async (id: string) => (await call("GET", `/api/chat/conversations/${id}`, { token: owner.token })).body;
    const patches = vi.spyOn(chatDb().entities.conversation, "patch");
    try {
      // An automatic title is replaced by the answer's append itself: one write, no update of its own.
      const auto = await Chat.openConversation(owner.id, wsId, undefined, "what about churn");
      const asked = await say(auto, "what about churn");
      patches.mockClear();
      await Chat.appendMessage(auto, { role: "assistant", content: "Churn is up." }, { expected: { message_count: 1, last_message_at: asked.created_at }, inferred: { purpose: "p", title: "  Churn \n drivers  " } });
      expect(patches).toHaveBeenCalledTimes(1);
      expect(await got(auto.id)).toMatchObject({ title: "Churn drivers", purpose: "p", message_count: 2 });
      // The agent's own title stays: a later inferred title finds it no longer automatic and the message still lands.
      await Chat.appendMessage(auto, { role: "user", content: "and more?" }, { inferred: { title: "Another" } });
      expect(await got(auto.id)).toMatchObject({ title: "Churn drivers", message_count: 3 });

      // Renamed between the caller's view and the append: the condition fails, the retry reads the conversation and
      // appends without the title.
      const renamed = await Chat.openConversation(owner.id, wsId, undefined, "prompt");
      const first = await say(renamed, "prompt");
      await call("PATCH", `/api/chat/conversations/${renamed.id}`, { token: owner.token, body: { title: "User's" } });
      await Chat.appendMessage(renamed, { role: "assistant", content: "answer" }, { expected: { message_count: 1, last_message_at: first.created_at }, inferred: { title: "Agent's" } });
      expect(await got(renamed.id)).toMatchObject({ title: "User's", message_count: 2 });

      // A new conversation stored by its first append takes the inferred title with it.
      const unsaved = await Chat.openConversation(owner.id, wsId, undefined, "first words", { deferCreate: true });
      await Chat.appendMessage(unsaved, { role: "user", content: "first words" }, { historyDays: 30, inferred: { title: "Inferred at once" } });
      expect(await got(unsaved.id)).toMatchObject({ title: "Inferred at once", message_count: 1 });
      await Chat.appendMessage(unsaved, { role: "assistant", content: "answer" }, { inferred: { title: "Too late", working_state: "drafting" } });
      expect(await got(unsaved.id)).toMatchObject({ title: "Inferred at once", working_state: "drafting", message_count: 2 });

      // A title the user gave at creation is not automatic: the inferred one is dropped, the other fields land.
      const named = await newConv(owner, { title: "Mine" });
      await Chat.appendMessage(named, { role: "user", content: "hello" }, { inferred: { title: "Agent's", purpose: "Understand churn", working_state: "researching" } });
      expect(await got(named.id)).toMatchObject({ title: "Mine", purpose: "Understand churn", working_state: "researching", message_count: 1 });
    } finally {
      patches.mockRestore();
    }
  });
});

describe("guards on every chat route", () => {
  const chat = routesOf("chat");
  it("the chat group has its ten routes", () => {
    expect(chat.map(([id]) => id).sort()).toEqual(
      ["chat.archive", "chat.create", "chat.delete", "chat.feedback", "chat.get", "chat.list", "chat.messages", "chat.restore", "chat.search", "chat.update"],
    );
  });

  it.each(chat)("%s answers 401 without a token or with a bad one", async (_id, spec) => {
    for (const headers of [{}, { authorization: "Bearer not-a-jwt" }] as Record<string, string>[]) {
      const res = await call(spec.method, fillPath(spec.path), { headers });
      expect(res.status, res.text).toBe(401);
      expect(res.body.code).toBe("UNAUTHORIZED");
      expect(typeof res.body.detail).toBe("string");
    }
  });

  it("a non-member gets 403 on the workspace-scoped routes and 404 on the conversation and message routes", async () => {
    const conv = await newConv(owner);
    const answer = await say(conv, "answer", "assistant");
    const requests: Record<string, { path: string; query?: Record<string, string>; body?: unknown; status: number }> = {
      "chat.create": { path: "/api/chat/conversations", body: { workspace_id: wsId }, status: 403 },
      "chat.list": { path: "/api/chat/conversations", query: { workspace_id: wsId }, status: 403 },
      "chat.search": { path: "/api/chat/conversations/search", query: { workspace_id: wsId, q: "a" }, status: 403 },
      "chat.get": { path: `/api/chat/conversations/${conv.id}`, status: 404 },
      "chat.update": { path: `/api/chat/conversations/${conv.id}`, body: { title: "x" }, status: 404 },
      "chat.archive": { path: `/api/chat/conversations/${conv.id}/archive`, status: 404 },
      "chat.restore": { path: `/api/chat/conversations/${conv.id}/restore`, status: 404 },
      "chat.delete": { path: `/api/chat/conversations/${conv.id}`, status: 404 },
      "chat.messages": { path: `/api/chat/conversations/${conv.id}/messages`, status: 404 },
      "chat.feedback": { path: `/api/chat/messages/${answer.id}/feedback`, body: { rating: "positive" }, status: 404 },
    };
    for (const [id, spec] of chat) {
      const r = requests[id]!;
      expect(spec.workspaceScope !== undefined, `${id}: workspace-scoped exactly when a non-member gets 403`).toBe(r.status === 403);
      expectEnvelope(await call(spec.method, r.path, { token: outsider.token, query: r.query, body: r.body }), r.status, r.status === 403 ? "FORBIDDEN" : "NOT_FOUND");
    }
    expect((await call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token })).body.message_count).toBe(1);
  });
});

describe("chat history per plan (spec 02 Limits: Plans; issue #19)", () => {
  it("a conversation older than the plan's window is neither listed, readable nor searchable; the window follows the plan; writes carry the TTL", async () => {
    const { owner, workspace } = await newWorkspace("History");
    const conv = await Chat.create(owner.id, { workspace_id: workspace.id });
    await Chat.appendMessage({ id: conv.id, workspace_id: workspace.id, user_id: owner.id }, { role: "user", content: "An old question about exports" });
    const stored = (await chatDb().entities.message.query.byConversation({ workspace_id: workspace.id, conversation_id: conv.id }).go({ consistent: true })).data;
    // The trial's 30 days: the TTL is 30 days after the write.
    expect(stored[0]!.ttl! - Math.floor(Date.now() / 1000)).toBeGreaterThan(30 * 86_400 - 60);
    expect(stored[0]!.ttl! - Math.floor(Date.now() / 1000)).toBeLessThanOrEqual(30 * 86_400);
    // Make it 40 days old (what a month and more of waiting would do).
    const old = new Date(Date.now() - 40 * 86_400_000).toISOString();
    await chatDb().entities.conversation.patch({ workspace_id: workspace.id, id: conv.id }).set({ last_message_at: old }).go();
    await chatDb().entities.message.delete({ workspace_id: workspace.id, conversation_id: conv.id, created_at: stored[0]!.created_at, id: stored[0]!.id }).go();
    await chatDb().entities.message.create({ ...stored[0]!, created_at: old }).go();

    const list = () => call("GET", "/api/chat/conversations", { token: owner.token, query: { workspace_id: workspace.id } });
    const read = () => call("GET", `/api/chat/conversations/${conv.id}`, { token: owner.token });
    const search = () => call("GET", "/api/chat/conversations/search", { token: owner.token, query: { workspace_id: workspace.id, q: "exports" } });
    expect((await list()).body.total).toBe(0);
    expectEnvelope(await read(), 404, "NOT_FOUND");
    expect((await search()).body.total).toBe(0);

    // Growth keeps 90 days: the same conversation is back in the list, readable, searchable.
    await setAccount(owner.id, { plan: "growth", status: "active", period_end: new Date(Date.now() + 20 * 86_400_000).toISOString() });
    expect((await list()).body.total).toBe(1);
    const detail = await read();
    expect(detail.status, detail.text).toBe(200);
    expect(detail.body.messages).toHaveLength(1);
    expect((await search()).body.total).toBe(1);
  });
});
