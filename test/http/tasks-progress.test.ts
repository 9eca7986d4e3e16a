/**
 * The task progress stream (issue #23 point 2; spec 02 "Task progress stream"), read over a real socket by a real SSE
 * client (eventsource-client, fetch-based so it sends the bearer token) through the local gateway and the real
 * streaming handler: membership first and on every reconnect (403 FORBIDDEN once lost, the 404 of an unknown id for an
 * outsider), the current state at once, every phase change woken by the item's own changes (the table's stream), the
 * state again after 10 s of silence (fake timers), polling every 3 s (at most 200 times) without the live channel, the
 * close on a terminal status, the four headers, and unnamed events only.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createEventSource } from "eventsource-client";
import { call, newUser, newWorkspace } from "../support/api";
import { waitFor } from "../support/multipart";
import { topUp } from "../support/billing";
import { liveGateway } from "../support/sse";
import { withEnv } from "./_helpers";
import { DynamoDBStreamsClient, GetRecordsCommand } from "@aws-sdk/client-dynamodb-streams";
import { claimAttempt, readTask, setTaskRunner, TaskProgress, writeProgress, type TaskExecutionInput } from "../../core/task";
import { taskChanges } from "../../core/task/changes";
import { openProgress } from "../../core/task/progress";
import { MAX_POLLS, POLL_INTERVAL_MS, SILENCE_MS } from "../../core/task/settings";
import { localTaskRunner } from "../../local/tasks";
import { idIndexLags } from "../support/index-lag";

type Ws = Awaited<ReturnType<typeof newWorkspace>>;

/** The clock's own setTimeout, kept before any test fakes it. */
const realSetTimeout = globalThis.setTimeout;

let gw: Awaited<ReturnType<typeof liveGateway>>;
let ws: Ws;
let conv: string;

beforeAll(async () => {
  gw = await liveGateway();
  ws = await newWorkspace("Progress");
  await topUp(ws.owner.id, 100);
  conv = (await call("POST", "/api/chat/conversations", { token: ws.owner.token, body: { workspace_id: ws.workspace.id } })).body.id;
});
afterAll(() => gw.close());
afterEach(() => {
  vi.useRealTimers();
  setTaskRunner(localTaskRunner());
});

/** Tasks whose Run step waits at a gate: they stay pending until it opens. */
function heldRunner() {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  setTaskRunner(localTaskRunner({ handlers: { Run: async (input) => (await opened, (await import("../../functions/steps/task-run")).handler(input as TaskExecutionInput)) } }));
  return { open };
}

async function spawn(body: Record<string, unknown>, token = ws.owner.token): Promise<string> {
  const res = await call("POST", "/api/tasks/spawn", { token, body: { workspace_id: ws.workspace.id, conversation_id: conv, ...body } });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

/** A task left running at its first phase by a runner that never starts it: the test writes the worker's progress. */
async function runningTask(prompt: string): Promise<string> {
  setTaskRunner({ start: async () => undefined, stop: async () => undefined, isRunning: async () => false });
  const id = await spawn({ task_type: "research", prompt });
  expect(await claimAttempt(ws.workspace.id, id, 1)).not.toBeNull();
  return id;
}

/**
 * Holds back the live channel: while shut, its reads of the table's stream (GetRecords) wait at a gate, so nothing
 * written meanwhile reaches a progress stream until `open`. `restore` opens it and removes the spy.
 */
function holdFeed() {
  let gate: Promise<void> | null = null;
  let release: (() => void) | undefined;
  let waiting = 0;
  const send = DynamoDBStreamsClient.prototype.send;
  const spy = vi.spyOn(DynamoDBStreamsClient.prototype, "send").mockImplementation(async function (this: DynamoDBStreamsClient, ...args: unknown[]) {
    if (args[0] instanceof GetRecordsCommand && gate) {
      waiting++;
      await gate;
    }
    return (send as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof send);
  const open = () => {
    gate = null;
    release?.();
  };
  return {
    /** Resolves once the reader is parked at the gate (a read already under way may still deliver before it). */
    shut: async () => {
      gate = new Promise<void>((r) => (release = r));
      const before = waiting;
      await waitFor(async () => waiting > before, 10_000, 10);
    },
    open,
    restore: () => (open(), spy.mockRestore()),
  };
}

/**
 * A progress stream read by the SSE client until the server closes it (or `close()`). Every message is kept with its
 * event name as the client saw it (`undefined` for an unnamed event).
 */
function progressStream(id: string, token: string) {
  const events: { event: string | undefined; data: TaskProgress }[] = [];
  let ended!: () => void;
  const closed = new Promise<void>((r) => (ended = r));
  const es = createEventSource({
    url: `${gw.base}/api/tasks/${id}/progress`,
    headers: { authorization: `Bearer ${token}` },
    onMessage: (m) => events.push({ event: m.event, data: JSON.parse(m.data) }),
    // The first disconnect ends it: a reconnect is a new stream, opened by the test.
    onDisconnect: () => {
      es.close();
      ended();
    },
  });
  return {
    events,
    closed,
    close: () => {
      es.close();
      ended();
    },
    /** Resolves once `n` events have arrived. */
    received: (n: number, timeoutMs = 20_000) => waitFor(async () => events.length >= n, timeoutMs, 10),
  };
}

describe("over the wire", () => {
  it("sends the four headers and unnamed events only (a data line with the JSON)", async () => {
    const id = await spawn({ task_type: "research", prompt: "What do users struggle with?" });
    await waitFor(async () => (await readTask(ws.workspace.id, id))?.status === "completed", 60_000);
    const res = await fetch(`${gw.base}/api/tasks/${id}/progress`, { headers: { authorization: `Bearer ${ws.owner.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("cache-control")).toBe("no-cache");
    expect(res.headers.get("connection")).toBe("keep-alive");
    expect(res.headers.get("x-accel-buffering")).toBe("no");
    // Completed already: its state at once, then the stream closes (the body ends).
    const body = await res.text();
    expect(body).not.toMatch(/^event:/m);
    const frames = body.split("\n\n").filter(Boolean);
    expect(frames).toHaveLength(1);
    expect(frames[0]).toMatch(/^data: \{/);
    const event = TaskProgress.parse(JSON.parse(frames[0]!.slice("data: ".length)));
    expect(event).toMatchObject({ id, status: "completed", progress_pct: 100, phase: "complete" });
  });

  it("the current state at once, then every phase change of a validation kit in order, then it closes on completed", async () => {
    const held = heldRunner();
    const id = await spawn({ task_type: "validation_kit", prompt: "Validate offline mode" });
    const s = progressStream(id, ws.owner.token);
    await s.received(1);
    expect(s.events[0]).toMatchObject({ event: undefined, data: { id, status: "pending", phase: "pending", progress_pct: 0, started_at: null, completed_at: null } });
    held.open();
    await s.closed;
    expect(s.events.every((e) => e.event === undefined)).toBe(true);
    const phases = s.events.map((e) => e.data.phase).filter((p, i, all) => p !== all[i - 1]);
    expect(phases).toEqual(["pending", "assumption_map", "research_plan", "interview_guide", "complete"]);
    const pcts = s.events.map((e) => e.data.progress_pct);
    expect(pcts).toEqual([...pcts].sort((a, b) => a - b));
    expect(s.events.find((e) => e.data.phase === "research_plan")!.data.progress_pct).toBe(50);
    expect(s.events.find((e) => e.data.phase === "interview_guide")!.data.progress_pct).toBe(80);
    expect(s.events.at(-1)!.data).toMatchObject({ status: "completed", phase: "complete", progress_pct: 100, error: null });
    expect(s.events.at(-1)!.data.result_data).toHaveProperty("documents");
    // No event repeats the one before it (a heartbeat alone is no news).
    for (let i = 1; i < s.events.length; i++) expect(JSON.stringify(s.events[i]!.data)).not.toBe(JSON.stringify(s.events[i - 1]!.data));
  });

  it("a reconnecting client catches up at once", async () => {
    const held = heldRunner();
    const id = await spawn({ task_type: "research", prompt: "Which exports are slow?" });
    const first = progressStream(id, ws.owner.token);
    await first.received(1);
    expect(first.events[0]!.data.status).toBe("pending");
    first.close();
    held.open();
    await waitFor(async () => (await readTask(ws.workspace.id, id))?.status === "completed", 60_000);
    const again = progressStream(id, ws.owner.token);
    await again.closed;
    expect(again.events).toHaveLength(1);
    expect(again.events[0]!.data).toMatchObject({ id, status: "completed", progress_pct: 100 });
  });
});

describe("right after the spawn", () => {
  it("a stream opened while the id index does not know the task yet (it lags its table) is served at once, not answered 404", async () => {
    const { forgetLocations } = await import("../../core/workspace");
    const held = heldRunner();
    const id = await spawn({ task_type: "research", prompt: "Watched right after the spawn" });
    forgetLocations();
    // The id index answers its first question about this task with nothing, as gsi1 does while it lags.
    const lag = idIndexLags(id);
    const s = progressStream(id, ws.owner.token);
    try {
      await Promise.race([s.received(1), s.closed]);
    } finally {
      s.close();
      lag.restore();
      held.open();
    }
    expect(lag.hidden()).toBe(1);
    expect(s.events).toHaveLength(1);
    expect(s.events[0]).toMatchObject({ event: undefined, data: { id, status: "pending", phase: "pending" } });
    await waitFor(async () => (await readTask(ws.workspace.id, id))?.status === "completed", 60_000);
  });
});

describe("membership, first and on every reconnect", () => {
  it("a member removed from the workspace gets 403 FORBIDDEN when reconnecting; an outsider the 404 of an unknown id", async () => {
    heldRunner();
    const member = await newUser();
    await call("POST", `/api/workspaces/${ws.workspace.id}/members`, { token: ws.owner.token, body: { email: member.email, role: "member" } });
    const id = await spawn({ task_type: "research", prompt: "Watched by a member" });
    const s = progressStream(id, member.token);
    await s.received(1);
    s.close();
    expect((await call("DELETE", `/api/workspaces/${ws.workspace.id}/members/${member.id}`, { token: ws.owner.token })).status).toBe(204);
    const again = await fetch(`${gw.base}/api/tasks/${id}/progress`, { headers: { authorization: `Bearer ${member.token}` } });
    expect(again.status).toBe(403);
    expect(await again.json()).toMatchObject({ code: "FORBIDDEN", detail: expect.stringContaining("no longer a member") });
    const outsider = await newUser();
    const theirs = await fetch(`${gw.base}/api/tasks/${id}/progress`, { headers: { authorization: `Bearer ${outsider.token}` } });
    const none = await fetch(`${gw.base}/api/tasks/${crypto.randomUUID()}/progress`, { headers: { authorization: `Bearer ${outsider.token}` } });
    expect(theirs.status).toBe(404);
    expect(((await theirs.json()) as { detail: string }).detail).toBe(((await none.json()) as { detail: string }).detail);
    expect((await fetch(`${gw.base}/api/tasks/${id}/progress`)).status).toBe(401);
  });
});

describe("timing (fake timers)", () => {
  it("sends the current state again after 10 s of silence; a member removed meanwhile loses the stream at that check", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    heldRunner();
    const member = await newUser();
    await call("POST", `/api/workspaces/${ws.workspace.id}/members`, { token: ws.owner.token, body: { email: member.email, role: "member" } });
    const id = await spawn({ task_type: "research", prompt: "Silent" });
    const owners = progressStream(id, ws.owner.token);
    const members = progressStream(id, member.token);
    await owners.received(1);
    await members.received(1);
    await vi.advanceTimersByTimeAsync(SILENCE_MS - 1000);
    expect(owners.events).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(1500);
    await owners.received(2);
    expect(owners.events[1]!.data).toEqual(owners.events[0]!.data);
    await members.received(2);
    // Removed: at the next silence the member's stream ends without another event; the owner's goes on.
    await call("DELETE", `/api/workspaces/${ws.workspace.id}/members/${member.id}`, { token: ws.owner.token });
    await vi.advanceTimersByTimeAsync(SILENCE_MS + 500);
    await members.closed;
    expect(members.events).toHaveLength(2);
    await owners.received(3);
    owners.close();
  });

  it("a silence re-send while the live channel still holds two phases: both follow, in revision order", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    const id = await runningTask("Two phases in a burst");
    const feed = holdFeed();
    const s = progressStream(id, ws.owner.token);
    try {
      await s.received(1);
      expect(s.events[0]!.data).toMatchObject({ status: "running", phase: "running" });
      await feed.shut();
      expect(await writeProgress(ws.workspace.id, id, 1, { phase: "alpha", progress_pct: 20, message: "Alpha" })).toBe(true);
      expect(await writeProgress(ws.workspace.id, id, 1, { phase: "beta", progress_pct: 40, message: "Beta" })).toBe(true);
      // The silence re-send fires before the channel has delivered either phase.
      await vi.advanceTimersByTimeAsync(SILENCE_MS + 500);
      await s.received(2);
      const delivered = taskChanges.delivered;
      feed.open();
      await waitFor(async () => taskChanges.delivered >= delivered + 2, 10_000, 10);
      // Both images are processed (or, before the fix, dropped as older than the re-send's read).
      await s.received(4, 3000).catch(() => undefined);
    } finally {
      feed.restore();
      s.close();
    }
    const phases = s.events.map((e) => e.data.phase).filter((p, i, all) => p !== all[i - 1]);
    expect(phases).toEqual(["running", "alpha", "beta"]);
    // The re-send repeated what the client had; the held phases then came, each once.
    expect(s.events[1]!.data).toEqual(s.events[0]!.data);
    expect(s.events.map((e) => e.data.phase)).toEqual(["running", "running", "alpha", "beta"]);
    const pcts = s.events.map((e) => e.data.progress_pct);
    expect(pcts).toEqual([...pcts].sort((a, b) => a - b));
    expect(s.events.at(-1)!.data).toMatchObject({ status: "running", phase: "beta", progress_pct: 40 });
  });

  it("a live channel that delivers nothing through two silences: the second re-send trusts the stored state", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
    const id = await runningTask("A stuck channel");
    const feed = holdFeed();
    const s = progressStream(id, ws.owner.token);
    try {
      await s.received(1);
      await feed.shut();
      expect(await writeProgress(ws.workspace.id, id, 1, { phase: "alpha", progress_pct: 20, message: "Alpha" })).toBe(true);
      await vi.advanceTimersByTimeAsync(SILENCE_MS + 500);
      await s.received(2);
      expect(s.events[1]!.data.phase).toBe("running");
      await vi.advanceTimersByTimeAsync(SILENCE_MS + 500);
      await s.received(3);
      expect(s.events[2]!.data).toMatchObject({ phase: "alpha", progress_pct: 20 });
    } finally {
      feed.restore();
      s.close();
    }
  });

  it("without the live channel: polls every 3 s, sends what changed, closes on the terminal status", async () => {
    await withEnv({ TASK_PROGRESS_LIVE: "off" }, async () => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
      const held = heldRunner();
      const id = await spawn({ task_type: "research", prompt: "Polled" });
      const s = progressStream(id, ws.owner.token);
      await s.received(1);
      held.open();
      await waitFor(async () => (await readTask(ws.workspace.id, id))?.status === "completed", 60_000);
      // Nothing is pushed: the change shows at the next poll.
      expect(s.events).toHaveLength(1);
      await vi.advanceTimersByTimeAsync(POLL_INTERVAL_MS);
      await s.closed;
      expect(s.events.map((e) => e.data.status)).toEqual(["pending", "completed"]);
    });
  });

  it("polls at most 200 times, then closes (about 10 minutes)", async () => {
    await withEnv({ TASK_PROGRESS_LIVE: "off" }, async () => {
      vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"], shouldAdvanceTime: true });
      // A runner that never starts the execution: the task stays pending for all 600 s (a held Run step would time out at 300 s).
      setTaskRunner({ start: async () => undefined, stop: async () => undefined, isRunning: async () => false });
      const id = await spawn({ task_type: "research", prompt: "Never moves" });
      const prepared = await openProgress(ws.owner.id, id);
      const sent: TaskProgress[] = [];
      const client = new AbortController();
      let end: string | undefined;
      const running = prepared.run({ send: (d) => sent.push(d), signal: client.signal }).then((e) => (end = e));
      await waitFor(async () => sent.length === 1);
      for (let i = 0; i < 2 * MAX_POLLS && end === undefined; i++) {
        await vi.advanceTimersByTimeAsync(POLL_INTERVAL_MS);
        // Each poll reads the task (real I/O): let it land before the next one is due.
        await new Promise((r) => realSetTimeout(r, 25));
      }
      await running;
      expect(end).toBe("polls_exhausted");
      // The first state, then a re-send after each 10 s of silence over the ~600 s of polls (nothing changed); the
      // count is approximate because each poll's read takes real time while the fake clock waits.
      expect(sent.length).toBeGreaterThan(40);
      expect(sent.length).toBeLessThanOrEqual(1 + Math.ceil((2 * MAX_POLLS * POLL_INTERVAL_MS) / SILENCE_MS));
      expect(sent.every((p) => p.status === "pending")).toBe(true);
    });
  }, 120_000);
});
