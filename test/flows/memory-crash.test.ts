/**
 * A crash between a copilot answer and its memory send (core/memory/owed.ts; "after a crash at any point, work
 * resumes from the durable record without a person"). The embedded runtime (`local/start.ts`) runs as a child process
 * group on a data directory of its own. One user's stream answers normally, and the runtime's memory consumer learns
 * from it. Then the crash hook (core/crash-point.ts `memory-before-send`) is armed and another user says the same in
 * their workspace: the runtime stores the answer and kills itself before sending the exchange. After a restart nothing
 * has been learned, but the exchange is on record; the sweeper, run later by this process (a clock 31 minutes on)
 * against the child's DynamoDB, sends it to this process's memory queue, whose consumer learns exactly what the
 * uncrashed exchange taught, from the same kind of message, at the same time.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { CrashPoint } from "../../core/crash-point";
import { db } from "../../core/db/service";
import { OWED_AFTER_MS, sweepOwedExchanges } from "../../core/memory/owed";
import { allFacts } from "../../core/memory/store";
import { registeredQueue } from "../../core/queue";
import type { LocalFifoQueue } from "../../core/queue/local";
import { waitFor } from "../support/multipart";
import { startCrashableRuntime, START_TIMEOUT, type CrashableRuntime, type RuntimeProcess } from "../support/runtime-process";
import { readStream } from "../support/sse";

const STATED = "Hi! I'm the PM of Jupyter Notebook, and we use Mixpanel for product analytics.";

let crashable: CrashableRuntime;
let runtime: RuntimeProcess;
interface Person { token: string; id: string; workspaceId: string }
let calm: Person;
let crashed: Person;

async function api(who: Person, method: string, path: string, body?: unknown) {
  const res = await fetch(`${runtime.base}${path}`, {
    method,
    headers: { authorization: `Bearer ${who.token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : null) as any };
}

async function person(name: string): Promise<Person> {
  const token = await runtime.token({ email: `memory-crash-${randomUUID().slice(0, 8)}@example.com`, name });
  const who = { token, id: "", workspaceId: "" };
  who.id = (await api(who, "GET", "/api/auth/me")).body.id;
  const ws = await api(who, "POST", "/api/workspaces", { name: `${name}'s workspace` });
  expect(ws.status).toBe(201);
  who.workspaceId = ws.body.id;
  return who;
}

/** Arm the runtime's crash hook (it reads its file at each point), or disarm it. */
const arm = (spec: { at: CrashPoint; arrivals?: number } | null) => crashable.arm(spec);
const profile = async (who: Person) => (await api(who, "GET", `/api/memory/profile?workspace_id=${who.workspaceId}`)).body;
/** A user's facts as the consumer stored them, without what differs between two users by nature (ids, times of writing). */
const learned = async (who: Person) =>
  (await allFacts(who.workspaceId, who.id)).map((f) => ({ content: f.content, kind: f.kind, subject: f.subject, value: f.value, multi: f.multi, extractor: f.extractor, embedder_id: f.embedder_id, vector: f.vector, invalid_at: f.invalid_at }));
/** The conversation's messages (oldest first). */
const messagesOf = async (who: Person, conversationId: string) => (await api(who, "GET", `/api/chat/conversations/${conversationId}`)).body.messages as { id: string; role: string; created_at: string }[];

beforeAll(async () => {
  crashable = await startCrashableRuntime("r2d-memory-crash");
  runtime = crashable.runtime;
  calm = await person("Calm");
  crashed = await person("Crashed");
}, START_TIMEOUT + 60_000);

afterAll(async () => {
  await crashable?.dispose();
}, 60_000);

describe("a crash between storing a copilot answer and sending its exchange to memory", () => {
  it("loses nothing: the sweeper sends the exchange later and the consumer learns what an uncrashed run learns", async () => {
    // Uncrashed: answered, sent, learned by the runtime's own consumer, and nothing left owed.
    const normal = await readStream(runtime.base, "/api/stream/chat", calm.token, { workspace_id: calm.workspaceId, prompt: STATED });
    expect(normal.at(-1)?.event).toBe("done");
    const expected = await waitFor(async () => {
      const p = await profile(calm);
      return p.static_facts.length === 2 ? p : null;
    }, 60_000, 200);

    // Crashed: the runtime kills itself once the answer is stored, before the send; the stream is cut before `done`.
    await arm({ at: "memory-before-send" });
    // The SSE client takes a connection that drops mid-stream for an error and would reconnect (POST again): it is
    // closed once the runtime is gone.
    let close: (() => void) | undefined;
    const reading = readStream(runtime.base, "/api/stream/chat", crashed.token, { workspace_id: crashed.workspaceId, prompt: STATED }, { onEvent: (_, c) => (close = c) });
    await runtime.exited(60_000);
    close?.();
    const cut = await reading;
    expect(cut.map((e) => e.event)).toContain("token");
    expect(cut.map((e) => e.event)).not.toContain("done");
    await runtime.crash();
    await arm(null);
    await runtime.start();

    // The answer is stored, nothing was learned, and the exchange is on record as owed.
    const { body: list } = await api(crashed, "GET", `/api/chat/conversations?workspace_id=${crashed.workspaceId}`);
    const conversationId = list.conversations[0].id as string;
    const [asked, answer] = await messagesOf(crashed, conversationId);
    expect([asked?.role, answer?.role]).toEqual(["user", "assistant"]);
    expect(await profile(crashed)).toEqual({ static_facts: [], dynamic_facts: [], is_available: true });
    const key = { workspace_id: crashed.workspaceId, conversation_id: conversationId, assistant_message_id: answer!.id };
    expect((await db().entities.memoryOwed.get(key).go({ consistent: true })).data).toMatchObject({ answered_at: answer!.created_at, sends: 0 });

    // The sweeper, 31 minutes after the answer: sent again, learned, and no longer owed.
    const swept = await sweepOwedExchanges({ now: new Date(Date.parse(answer!.created_at) + OWED_AFTER_MS + 60_000), workspaceId: crashed.workspaceId });
    expect(swept).toMatchObject({ due: 1, resent: 1, dropped: 0, errors: [] });
    await (registeredQueue("memory") as LocalFifoQueue).idle();
    expect(await profile(crashed)).toEqual(expected);
    expect(await learned(crashed)).toEqual(await learned(calm));
    const facts = await allFacts(crashed.workspaceId, crashed.id);
    expect(facts.map((f) => [f.source_conversation_id, f.source_message_id, f.valid_at])).toEqual(facts.map(() => [conversationId, asked!.id, asked!.created_at]));
    expect((await db().entities.memoryOwed.get(key).go({ consistent: true })).data).toBeNull();
    // The uncrashed exchange left nothing owed either.
    expect((await sweepOwedExchanges({ now: new Date(Date.now() + 10 * OWED_AFTER_MS) })).due).toBe(0);
  }, 300_000);
});
