/**
 * The embedded queue's deduplication when its journal cannot be written (core/queue/local.ts; docs/decisions.md
 * "Review of the fourth session's changes"). A send resolves only once its message is on disk; a failed write rejects
 * the send and must not take the message's deduplication id, or the sender's resend (what an SQS client does after a
 * failed send) is dropped as a duplicate and the message is lost. The failure is injected at the fs layer: the next
 * `open` of a journal's temporary file throws EIO, as a failing disk would; the queue and its journal run unchanged.
 */
import { randomUUID } from "node:crypto";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SQSRecord } from "aws-lambda";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import type { LocalFifoQueue as Queue } from "../../../core/queue/local";

/** Journal writes to fail, counted down by each write that fails. */
const faults = vi.hoisted(() => ({ writes: 0 }));

vi.mock("node:fs/promises", async (importOriginal) => {
  const actual = await importOriginal<typeof import("node:fs/promises")>();
  const open = (async (path: Parameters<typeof actual.open>[0], ...rest: unknown[]) => {
    // The journal writes every record to a temporary file first (core/queue/journal.ts writeDurably).
    if (String(path).endsWith(".tmp") && faults.writes > 0) {
      faults.writes -= 1;
      throw Object.assign(new Error(`EIO: i/o error, open '${String(path)}'`), { code: "EIO" });
    }
    return (actual.open as (...args: unknown[]) => ReturnType<typeof actual.open>)(path, ...rest);
  }) as typeof actual.open;
  return { ...actual, open, default: { ...actual, open } };
});

let LocalFifoQueue: typeof Queue;
let dir: string;
const queues: Queue[] = [];

beforeAll(async () => {
  // The test setup's event wiring loaded the queue with the real fs already: load it again, on the mocked one.
  vi.resetModules();
  ({ LocalFifoQueue } = await import("../../../core/queue/local"));
});

beforeEach(async () => {
  faults.writes = 0;
  dir = await mkdtemp(join(tmpdir(), "r2d-queue-faults-"));
});
afterEach(async () => {
  vi.useRealTimers();
  for (const q of queues.splice(0)) await q.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A journaled queue whose consumer keeps what it receives. */
function journaledQueue() {
  const received: SQSRecord[] = [];
  const queue = new LocalFifoQueue({
    name: "faults-test",
    journalDir: dir,
    retryDelayMs: () => 1,
    warn: () => undefined,
    consumer: async (event) => {
      for (const r of event.Records) received.push(r);
    },
  });
  queues.push(queue);
  return { queue, bodies: () => received.map((r) => r.body) };
}

const message = (body: string, deduplicationId: string, groupId = "g") => ({ body, groupId, deduplicationId });
const journalFiles = async () => (await readdir(dir)).filter((f) => f.endsWith(".json"));

describe("a journaled queue whose journal write fails", () => {
  it("rejects the send and leaves its deduplication id free: the sender's resend is delivered, once", async () => {
    const { queue, bodies } = journaledQueue();
    faults.writes = 1;
    await expect(queue.send(message("stripe event", "evt-1"))).rejects.toThrow(/EIO/);
    expect(await journalFiles()).toEqual([]);

    await queue.send(message("stripe event", "evt-1"));
    // A true duplicate of the resend, within 5 minutes, is still dropped.
    await queue.send(message("stripe event", "evt-1"));
    await queue.idle();
    expect(bodies()).toEqual(["stripe event"]);
  });

  it("does not acknowledge a duplicate sent during the failing write: it takes the original's place and is delivered once", async () => {
    const { queue, bodies } = journaledQueue();
    faults.writes = 1;
    // The sender's retry arrives while the first attempt is still being written (it timed out on its side).
    const [original, retry] = await Promise.allSettled([queue.send(message("memory job", "answer-1")), queue.send(message("memory job", "answer-1"))]);
    expect(original.status).toBe("rejected");
    expect(retry.status).toBe("fulfilled");
    await queue.idle();
    expect(bodies()).toEqual(["memory job"]);
    expect(await journalFiles()).toEqual([]);
  });

  it("resolves a duplicate sent during a write that succeeds only once the original is on disk, and drops it", async () => {
    const { queue, bodies } = journaledQueue();
    const resolved: string[] = [];
    const original = queue.send(message("original", "job-1")).then(() => resolved.push("original"));
    const duplicate = queue.send(message("duplicate", "job-1")).then(() => resolved.push("duplicate"));
    await Promise.all([original, duplicate]);
    expect(resolved).toEqual(["original", "duplicate"]);
    await queue.idle();
    expect(bodies()).toEqual(["original"]);
  });

  it("keeps the group's order of the messages it accepted; the resent one comes after them", async () => {
    const { queue, bodies } = journaledQueue();
    faults.writes = 1;
    const sends = await Promise.allSettled(["m1", "m2", "m3"].map((body) => queue.send(message(body, body))));
    expect(sends.map((s) => s.status)).toEqual(["rejected", "fulfilled", "fulfilled"]);
    await queue.send(message("m1", "m1"));
    await queue.idle();
    expect(bodies()).toEqual(["m2", "m3", "m1"]);
  });
});

describe("a journaled queue's deduplication window", () => {
  it("is SQS's 5 minutes from the accepted send", async () => {
    vi.useFakeTimers({ toFake: ["Date"] });
    const { queue, bodies } = journaledQueue();
    const id = randomUUID();
    await queue.send(message("first", id));
    await queue.idle();
    vi.setSystemTime(Date.now() + 5 * 60_000 - 1_000);
    await queue.send(message("inside the window", id));
    vi.setSystemTime(Date.now() + 2_000);
    await queue.send(message("after the window", id));
    await queue.idle();
    expect(bodies()).toEqual(["first", "after the window"]);
  });
});
