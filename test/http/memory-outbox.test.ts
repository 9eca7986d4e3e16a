/**
 * Memory's outbox (core/memory/owed.ts; DESIGN.md 6.6): a copilot answer is stored with the record that its exchange is
 * owed to memory, in the answer's own transaction; the consumer learns the exchange while the record is there and
 * deletes it; the sweeper sends again what is still owed 30 minutes later, and drops what no longer exists. Copilot
 * streams through the real stream endpoint on the local engine, read by a real SSE client; the memory consumer behind
 * the in-process memory queue (or called as its Lambda with the job the hook sent); the sweeper's clock passed in.
 * The crash between storing the answer and the send is test/flows/memory-crash.test.ts.
 */
import type { SQSEvent } from "aws-lambda";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { call, newUser, newWorkspace } from "../support/api";
import { liveGateway, readStream, type WireEvent } from "../support/sse";
import { registeredQueue, setQueue, type Queue, type QueueMessage } from "../../core/queue";
import type { LocalFifoQueue } from "../../core/queue/local";
import { db } from "../../core/db/service";
import { MAX_RESENDS, OWED_AFTER_MS, sweepOwedExchanges, type OwedSweepReport } from "../../core/memory/owed";
import { allFacts } from "../../core/memory/store";
import { handler as consumer } from "../../functions/events/memory-consumer";
import { landsBefore } from "../support/races";

let gw: Awaited<ReturnType<typeof liveGateway>>;
const STATED = "Hi! I'm the PM of Jupyter Notebook, and we use Mixpanel for product analytics.";
const FACTS = ["I'm the PM of Jupyter Notebook.", "We use Mixpanel for product analytics."];

/** The in-process memory queue the runtime's wiring registered (its consumer is the memory consumer). */
const local = registeredQueue("memory") as LocalFifoQueue;
/** Wait until the memory consumer has learned from every exchange sent so far. */
const learned = () => local.idle();

/**
 * The memory queue as the hook sees it, with every message sent recorded; `down` makes each send fail; `lost` accepts
 * each send and delivers nothing (as if every receive failed its consumer).
 */
const sent: QueueMessage[] = [];
let down = false;
let lost = false;
const recording: Queue = {
  async send(message) {
    if (down) throw new Error("the memory queue is unreachable");
    sent.push(message);
    if (!lost) await local.send(message);
  },
};

beforeAll(async () => {
  gw = await liveGateway();
  setQueue("memory", recording);
});
afterEach(() => {
  down = false;
  lost = false;
});
afterAll(async () => {
  setQueue("memory", local);
  await gw.close();
});

async function chat(token: string, workspaceId: string, prompt: string) {
  const events = await readStream(gw.base, "/api/stream/chat", token, { workspace_id: workspaceId, prompt });
  const done = events.at(-1)!;
  expect(done.event, JSON.stringify(events.map((e) => e.event))).toBe("done");
  expect(events.filter((e: WireEvent) => e.event === "error")).toEqual([]);
  const conversationId = done.data.conversation_id as string;
  const answerId = done.data.message_id as string;
  return { conversationId, answerId };
}

/** The owed record of an answer, straight from the table (undefined when there is none). */
async function owedOf(workspaceId: string, conversationId: string, answerId: string) {
  const { data } = await db().entities.memoryOwed.get({ workspace_id: workspaceId, conversation_id: conversationId, assistant_message_id: answerId }).go({ consistent: true });
  return data ?? undefined;
}

const contents = async (workspaceId: string, userId: string) => (await allFacts(workspaceId, userId)).map((f) => f.content).sort();

describe("an answer's exchange owed to memory", () => {
  it("leaves no record once learned: the record is written with the answer and the consumer deletes it", async () => {
    const { owner, workspace } = await newWorkspace("Outbox normal");
    sent.length = 0;
    const { conversationId, answerId } = await chat(owner.token, workspace.id, STATED);
    // The hook's job says the answer was stored with its record.
    expect(sent.map((m) => JSON.parse(m.body))).toEqual([expect.objectContaining({ assistant_message_id: answerId, conversation_id: conversationId, owed: true })]);
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual(FACTS);
    expect(await owedOf(workspace.id, conversationId, answerId)).toBeUndefined();
    // Nothing is owed in the workspace: a sweep long after sends nothing.
    const swept = await sweepOwedExchanges({ now: new Date(Date.now() + 10 * OWED_AFTER_MS), workspaceId: workspace.id });
    expect(swept).toMatchObject({ due: 0, resent: 0, dropped: 0 });
  });

  it("whose send failed is sent again by the sweeper once due, and learned as a sent one is", async () => {
    const { owner, workspace } = await newWorkspace("Outbox lost send");
    down = true;
    const { conversationId, answerId } = await chat(owner.token, workspace.id, STATED);
    down = false;
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual([]);
    const owed = (await owedOf(workspace.id, conversationId, answerId))!;
    const answer = (await call("GET", `/api/chat/conversations/${conversationId}`, { token: owner.token })).body.messages.find((m: { id: string }) => m.id === answerId);
    expect(owed).toMatchObject({ user_id: owner.id, answered_at: answer.created_at, sends: 0, due_at: new Date(Date.parse(answer.created_at) + OWED_AFTER_MS).toISOString() });

    // Not before it is due: the queue may still be working on a send.
    const early = await sweepOwedExchanges({ now: new Date(Date.parse(answer.created_at) + OWED_AFTER_MS - 60_000), workspaceId: workspace.id });
    expect(early).toMatchObject({ due: 0, resent: 0 });
    const later = new Date(Date.parse(answer.created_at) + OWED_AFTER_MS + 60_000);
    const swept = await sweepOwedExchanges({ now: later, workspaceId: workspace.id });
    expect(swept).toMatchObject({ due: 1, resent: 1, dropped: 0, errors: [] });
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual(FACTS);
    expect(await owedOf(workspace.id, conversationId, answerId)).toBeUndefined();
    // Learned and cleared: the next sweep has nothing to send.
    expect(await sweepOwedExchanges({ now: new Date(later.getTime() + 10 * OWED_AFTER_MS), workspaceId: workspace.id })).toMatchObject({ due: 0, resent: 0 });
  });

  it("delivered again after it was learned is not learned again (memory deleted meanwhile stays deleted)", async () => {
    const { owner, workspace } = await newWorkspace("Outbox redelivery");
    sent.length = 0;
    await chat(owner.token, workspace.id, STATED);
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual(FACTS);
    const [job] = sent;
    const record = (n: number) => ({ messageId: `redelivery-${n}`, body: job!.body }) as SQSEvent["Records"][number];

    // SQS delivers at least once: the same job comes again, twice in one batch.
    const cleared = await call("DELETE", "/api/memory", { token: owner.token, query: { workspace_id: workspace.id } });
    expect(cleared.status, cleared.text).toBe(200);
    expect(await consumer({ Records: [record(1), record(2)] })).toEqual({ batchItemFailures: [] });
    expect(await contents(workspace.id, owner.id)).toEqual([]);
  });

  it("of a deleted conversation goes with it, and a record whose exchange is gone is dropped by the sweeper", async () => {
    const { owner, workspace } = await newWorkspace("Outbox deletions");
    const later = () => new Date(Date.now() + 2 * OWED_AFTER_MS);

    // The conversation is deleted before the exchange was sent: its record goes with its messages.
    down = true;
    const deleted = await chat(owner.token, workspace.id, STATED);
    expect(await owedOf(workspace.id, deleted.conversationId, deleted.answerId)).toBeDefined();
    const del = await call("DELETE", `/api/chat/conversations/${deleted.conversationId}`, { token: owner.token });
    expect(del.status, del.text).toBe(204);
    expect(await owedOf(workspace.id, deleted.conversationId, deleted.answerId)).toBeUndefined();

    // The messages expired (DynamoDB's TTL removes items on its own schedule, the record perhaps later): dropped.
    const expired = await chat(owner.token, workspace.id, STATED);
    const answered = (await owedOf(workspace.id, expired.conversationId, expired.answerId))!;
    await db().entities.message.delete({ workspace_id: workspace.id, conversation_id: expired.conversationId, created_at: answered.answered_at, id: expired.answerId }).go();

    // A member who left the workspace: their conversation stays, but nothing is learned for a non-member.
    const member = await newUser();
    expect((await call("POST", `/api/workspaces/${workspace.id}/members`, { token: owner.token, body: { email: member.email, role: "member" } })).status).toBe(201);
    const left = await chat(member.token, workspace.id, STATED);
    expect((await call("DELETE", `/api/workspaces/${workspace.id}/members/${member.id}`, { token: owner.token })).status).toBe(204);
    down = false;

    const swept = await sweepOwedExchanges({ now: later(), workspaceId: workspace.id });
    expect(swept).toMatchObject({ due: 2, resent: 0, dropped: 2, errors: [] });
    expect(await owedOf(workspace.id, expired.conversationId, expired.answerId)).toBeUndefined();
    expect(await owedOf(workspace.id, left.conversationId, left.answerId)).toBeUndefined();
    expect(await sweepOwedExchanges({ now: later(), workspaceId: workspace.id })).toMatchObject({ due: 0, resent: 0 });
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual([]);
    expect(await contents(workspace.id, member.id)).toEqual([]);
  });

  it("through a queue outage longer than its re-sends is still owed, and sent and learned once the queue is back", async () => {
    const { owner, workspace } = await newWorkspace("Outbox queue outage");
    down = true;
    const { conversationId, answerId } = await chat(owner.token, workspace.id, STATED);
    const answeredAt = Date.parse((await owedOf(workspace.id, conversationId, answerId))!.answered_at);

    // The queue refuses every send for 17 hours (counted sends would all have been used up by about 16), while the
    // sweeper runs at each of the record's due times, more times than the exchange has re-sends, and a minute before.
    const reports: OwedSweepReport[] = [];
    const early: OwedSweepReport[] = [];
    for (;;) {
      const owed = await owedOf(workspace.id, conversationId, answerId);
      if (!owed) break;
      const dueAt = Date.parse(owed.due_at);
      if (reports.length > MAX_RESENDS + 1 && dueAt > answeredAt + 17 * 3_600_000) break;
      early.push(await sweepOwedExchanges({ now: new Date(dueAt - 60_000), workspaceId: workspace.id }));
      reports.push(await sweepOwedExchanges({ now: new Date(dueAt), workspaceId: workspace.id }));
    }
    const owed = await owedOf(workspace.id, conversationId, answerId);
    expect(owed).toMatchObject({ sends: 0 });
    expect(reports.length).toBeGreaterThan(MAX_RESENDS);
    expect(reports.map(({ errors, ...counts }) => [counts, errors.length])).toEqual(reports.map(() => [{ due: 1, resent: 0, failed: 1, dropped: 0, abandoned: 0 }, 1]));
    // Not hammered: each refused send moved the record on by the wait of its next re-send (1 hour).
    expect(early.map((r) => r.due)).toEqual(reports.map(() => 0));
    expect(Date.parse(owed!.due_at) - answeredAt).toBe(OWED_AFTER_MS + reports.length * 2 * OWED_AFTER_MS);

    down = false;
    const swept = await sweepOwedExchanges({ now: new Date(owed!.due_at), workspaceId: workspace.id });
    expect(swept).toMatchObject({ due: 1, resent: 1, failed: 0, dropped: 0, abandoned: 0, errors: [] });
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual(FACTS);
    expect(await owedOf(workspace.id, conversationId, answerId)).toBeUndefined();
  });

  it("whose re-sends the queue accepted but never got learned is given up after its re-sends", async () => {
    const { owner, workspace } = await newWorkspace("Outbox given up");
    lost = true;
    const { conversationId, answerId } = await chat(owner.token, workspace.id, STATED);
    for (let n = 1; n <= MAX_RESENDS; n++) {
      const owed = (await owedOf(workspace.id, conversationId, answerId))!;
      expect(await sweepOwedExchanges({ now: new Date(owed.due_at), workspaceId: workspace.id })).toMatchObject({ due: 1, resent: 1, errors: [] });
      // Counted once the queue took it, and the next one waits twice as long.
      const after = (await owedOf(workspace.id, conversationId, answerId))!;
      expect(after.sends).toBe(n);
      expect(Date.parse(after.due_at) - Date.parse(owed.due_at)).toBe(OWED_AFTER_MS * 2 ** n);
    }
    const last = (await owedOf(workspace.id, conversationId, answerId))!;
    expect(await sweepOwedExchanges({ now: new Date(last.due_at), workspaceId: workspace.id })).toMatchObject({ due: 1, resent: 0, abandoned: 1, errors: [] });
    expect(await owedOf(workspace.id, conversationId, answerId)).toBeUndefined();
  });
});

describe("an exchange still owed when the user deletes all their memory", () => {
  const SWITCHED = "We switched from Jira to Linear last month.";
  const LINEAR = ["We switched from Jira to Linear last month."];
  const forgetAll = (token: string, workspaceId: string) => call("DELETE", "/api/memory", { token, query: { workspace_id: workspaceId } });
  const record = (body: string, n = 1) => ({ messageId: `forgotten-${n}`, body }) as SQSEvent["Records"][number];

  /** A user with the facts of STATED learned, and the exchange of SWITCHED answered and owed but not yet learned. */
  async function pending(name: string) {
    const { owner, workspace } = await newWorkspace(name);
    await chat(owner.token, workspace.id, STATED);
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual(FACTS);
    sent.length = 0;
    lost = true;
    const { conversationId, answerId } = await chat(owner.token, workspace.id, SWITCHED);
    lost = false;
    const [job] = sent;
    expect(JSON.parse(job!.body)).toMatchObject({ assistant_message_id: answerId, owed: true });
    return { owner, workspace, conversationId, answerId, job: job! };
  }

  it("is not learned when its job arrives after the deletion, nor when it comes again; a new exchange is", async () => {
    const { owner, workspace, conversationId, answerId, job } = await pending("Forget before learning");
    const cleared = await forgetAll(owner.token, workspace.id);
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body).toEqual({ workspace_id: workspace.id, deleted: 2 });

    // The job the hook sent arrives now (and again: SQS delivers at least once): it teaches nothing and clears its record.
    expect(await consumer({ Records: [record(job.body, 1)] })).toEqual({ batchItemFailures: [] });
    expect(await contents(workspace.id, owner.id)).toEqual([]);
    expect(await owedOf(workspace.id, conversationId, answerId)).toBeUndefined();
    expect(await consumer({ Records: [record(job.body, 2)] })).toEqual({ batchItemFailures: [] });
    expect(await contents(workspace.id, owner.id)).toEqual([]);
    expect(await sweepOwedExchanges({ now: new Date(Date.now() + 10 * OWED_AFTER_MS), workspaceId: workspace.id })).toMatchObject({ due: 0, resent: 0 });

    // Saying it again after the deletion is a new exchange: learned.
    await chat(owner.token, workspace.id, SWITCHED);
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual(LINEAR);
  });

  it("is not learned when the sweeper sends it again after the deletion", async () => {
    const { owner, workspace, conversationId, answerId } = await pending("Forget before the re-send");
    expect((await forgetAll(owner.token, workspace.id)).status).toBe(200);
    const owed = (await owedOf(workspace.id, conversationId, answerId))!;
    expect(await sweepOwedExchanges({ now: new Date(owed.due_at), workspaceId: workspace.id })).toMatchObject({ due: 1, resent: 1, errors: [] });
    await learned();
    expect(await contents(workspace.id, owner.id)).toEqual([]);
    expect(await owedOf(workspace.id, conversationId, answerId)).toBeUndefined();
  });

  it("is not learned by a retry when the deletion lands while it is being written", async () => {
    const { owner, workspace, job } = await pending("Forget while learning");
    // The deletion runs to its end just before the learner's first write (its transaction names the user's facts).
    const [first, cleared] = await landsBefore(/^TransactWrite/, `memory#${owner.id}#`, () => forgetAll(owner.token, workspace.id), () =>
      consumer({ Records: [record(job.body, 1)] }),
    );
    expect(cleared.status, cleared.text).toBe(200);
    expect(cleared.body).toMatchObject({ deleted: 2 });
    // Refused by the deletion's version bump: the queue retries it.
    expect(first.batchItemFailures).toEqual([{ itemIdentifier: "forgotten-1" }]);
    expect(await contents(workspace.id, owner.id)).toEqual([]);
    // The queue's retry reads afresh and learns nothing.
    expect(await consumer({ Records: [record(job.body, 2)] })).toEqual({ batchItemFailures: [] });
    expect(await contents(workspace.id, owner.id)).toEqual([]);
  });
});
