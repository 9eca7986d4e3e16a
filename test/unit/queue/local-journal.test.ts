/**
 * The embedded queue's journal (core/queue/local.ts, core/queue/journal.ts): given a journal directory, a message
 * `send()` accepted survives the queue's end (a crash, Ctrl-C, a restart of `npm start`) as an SQS message does, and
 * the next queue on the directory delivers it: after its delay, in order per group, with its receive count; a
 * consumed message is not delivered again; dead letters and deduplication ids survive; a corrupt file is skipped.
 * "Stopped" here is a crash as far as the journal goes: `stop()` drops the in-memory state and nothing else.
 */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { SQSRecord } from "aws-lambda";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { nextSeqAfter } from "../../../core/queue/journal";
import { LocalFifoQueue, type LocalQueueOptions } from "../../../core/queue/local";

let dir: string;
const queues: LocalFifoQueue[] = [];

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "r2d-queue-journal-"));
});
afterEach(async () => {
  for (const q of queues.splice(0)) await q.stop();
  await rm(dir, { recursive: true, force: true });
});

/** A queue on the test's journal directory that keeps what it receives; `hang` makes its consumer never answer. */
function queueOn(opts: Partial<LocalQueueOptions> & { hang?: boolean } = {}) {
  const received: SQSRecord[] = [];
  const { hang, ...rest } = opts;
  const queue = new LocalFifoQueue({
    name: "journal-test",
    journalDir: dir,
    retryDelayMs: () => 1,
    consumer: async (event) => {
      received.push(...event.Records);
      if (hang) await new Promise(() => undefined);
    },
    ...rest,
  });
  queues.push(queue);
  return { queue, received, bodies: () => received.map((r) => r.body) };
}

const message = (body: string, groupId = "g", extra: { delaySeconds?: number; deduplicationId?: string } = {}) => ({
  body,
  groupId,
  deduplicationId: extra.deduplicationId ?? randomUUID(),
  ...(extra.delaySeconds !== undefined ? { delaySeconds: extra.delaySeconds } : {}),
});

/** Poll until `check` holds (no fixed sleeps). */
async function until(check: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const journalFiles = async () => (await readdir(dir)).filter((f) => f.endsWith(".json"));

describe("a journaled local queue across a restart", () => {
  it("delivers a message whose delay was still running when the queue stopped, once the delay is over", async () => {
    const first = queueOn();
    const sentAt = Date.now();
    await first.queue.send(message("deferred push", "g", { delaySeconds: 0.3 }));
    // send() resolved: the message is on disk before anything is delivered.
    expect(await journalFiles()).toHaveLength(1);
    await first.queue.stop();
    expect(first.received).toEqual([]);

    const second = queueOn();
    await second.queue.idle();
    expect(second.bodies()).toEqual(["deferred push"]);
    expect(Number(second.received[0]!.attributes.SentTimestamp)).toBeGreaterThanOrEqual(sentAt);
    // The rest of its delay was honoured (not restarted, not dropped).
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(300);
    expect(await journalFiles()).toEqual([]);
  });

  it("delivers again a message that was being consumed when the queue stopped, its earlier receive counted", async () => {
    const first = queueOn({ hang: true });
    await first.queue.send(message("memory job"));
    await until(() => first.received.length === 1);
    await first.queue.stop();

    const second = queueOn();
    await second.queue.idle();
    expect(second.bodies()).toEqual(["memory job"]);
    expect(second.received[0]!.attributes.ApproximateReceiveCount).toBe("2");
  });

  it("keeps the order of each message group across the restart", async () => {
    const first = queueOn({ hang: true, batchSize: 1 });
    const sent = { a: [] as string[], b: [] as string[] };
    for (let i = 0; i < 12; i++) {
      for (const group of ["a", "b"] as const) {
        sent[group].push(`${group}${i}`);
        await first.queue.send(message(`${group}${i}`, group));
      }
    }
    // Each group's head is being consumed (and never finishes); everything behind it waits.
    await until(() => first.received.length === 2);
    await first.queue.stop();

    const second = queueOn({ batchSize: 1 });
    await second.queue.idle();
    const inGroup = (g: string) => second.received.filter((r) => r.attributes.MessageGroupId === g).map((r) => r.body);
    expect(inGroup("a")).toEqual(sent.a);
    expect(inGroup("b")).toEqual(sent.b);
  });

  it("does not deliver a consumed message again; only the one still waiting", async () => {
    const first = queueOn();
    await first.queue.send(message("consumed", "g1"));
    await first.queue.idle();
    expect(first.bodies()).toEqual(["consumed"]);
    await first.queue.send(message("waiting", "g2", { delaySeconds: 0.2 }));
    await first.queue.stop();

    const second = queueOn();
    await second.queue.idle();
    expect(second.bodies()).toEqual(["waiting"]);
    expect(await journalFiles()).toEqual([]);
  });

  it("keeps a dead letter across the restart, and does not deliver it", async () => {
    const first = queueOn({ maxReceiveCount: 2, consumer: async () => Promise.reject(new Error("provider said no")) });
    await first.queue.send(message("poison"));
    await first.queue.idle();
    expect(first.queue.deadLetters).toHaveLength(1);
    await first.queue.stop();

    const second = queueOn({ maxReceiveCount: 2 });
    await second.queue.idle();
    expect(second.received).toEqual([]);
    expect(second.queue.deadLetters).toEqual([
      { messageId: first.queue.deadLetters[0]!.messageId, message: expect.objectContaining({ body: "poison" }), receiveCount: 2, reason: "provider said no" },
    ]);
    expect(await readdir(join(dir, "dead"))).toEqual([`${first.queue.deadLetters[0]!.messageId}.json`]);
    expect(await journalFiles()).toEqual([]);
  });

  it("dead-letters a message whose every receive ended with the process, instead of delivering it at every start", async () => {
    const onDeadLetter = vi.fn();
    for (let run = 1; run <= 2; run++) {
      const crashing = queueOn({ hang: true, maxReceiveCount: 2 });
      if (run === 1) await crashing.queue.send(message("kills the runtime"));
      await until(() => crashing.received.length === 1);
      expect(crashing.received[0]!.attributes.ApproximateReceiveCount).toBe(String(run));
      await crashing.queue.stop();
    }
    const last = queueOn({ maxReceiveCount: 2, onDeadLetter });
    await last.queue.idle();
    expect(last.received).toEqual([]);
    expect(last.queue.deadLetters).toEqual([expect.objectContaining({ receiveCount: 2, reason: expect.stringContaining("stopped") })]);
    expect(onDeadLetter).toHaveBeenCalledTimes(1);
  });

  it("still drops a duplicate sent within 5 minutes of the original, after the restart", async () => {
    const first = queueOn();
    await first.queue.send(message("original", "g", { delaySeconds: 0.1, deduplicationId: "stripe-evt-1" }));
    await first.queue.stop();

    const second = queueOn();
    await second.queue.send(message("retried by the sender", "g", { deduplicationId: "stripe-evt-1" }));
    await second.queue.idle();
    expect(second.bodies()).toEqual(["original"]);
  });

  it("skips a corrupt journal file with one line, sets it aside, and delivers the others", async () => {
    const first = queueOn();
    await first.queue.send(message("one", "g", { delaySeconds: 0.1 }));
    await first.queue.send(message("two", "g", { delaySeconds: 0.1 }));
    await first.queue.stop();
    // A record cut short, and a temporary file a dead process left mid-write.
    const corrupt = join(dir, `${randomUUID()}.json`);
    await writeFile(corrupt, '{"messageId":"cut');
    const temp = join(dir, `.${randomUUID()}.999999999.${randomUUID()}.tmp`);
    await writeFile(temp, "{");

    const warn = vi.fn();
    const second = queueOn({ warn });
    await second.queue.idle();
    expect(second.bodies()).toEqual(["one", "two"]);
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toContain(corrupt);
    expect(existsSync(`${corrupt}.corrupt`)).toBe(true);
    expect(existsSync(temp)).toBe(false);
  });
});

describe("a journal too large for a spread", () => {
  it("gives the sequence after 200,000 waiting and 200,000 dead records without overflowing the call stack", () => {
    // A spread of this many arguments into Math.max throws RangeError (about 120,000 is V8's limit).
    const live = Array.from({ length: 200_000 }, (_, i) => ({ seq: 2 * i }));
    const dead = Array.from({ length: 200_000 }, (_, i) => ({ seq: 2 * i + 1 }));
    expect(nextSeqAfter(live, dead)).toBe(400_000);
    expect(nextSeqAfter(dead.slice(0, 1), [])).toBe(2);
    expect(nextSeqAfter([], [])).toBe(0);
  });

  it("goes on after the highest sequence of a restarted journal, dead letters included", async () => {
    const first = queueOn({ maxReceiveCount: 1, consumer: async () => Promise.reject(new Error("no")) });
    await first.queue.send(message("dead one", "g1"));
    await first.queue.idle();
    await first.queue.send(message("waiting", "g2", { delaySeconds: 5 }));
    await first.queue.stop();

    const second = queueOn({ hang: true });
    await second.queue.send(message("after the restart", "g3", { delaySeconds: 5 }));
    await second.queue.stop();
    const seqs = await Promise.all((await journalFiles()).map(async (f) => JSON.parse(await readFile(join(dir, f), "utf8")) as { seq: number; message: { body: string } }));
    expect(seqs.map((r) => [r.message.body, r.seq]).sort()).toEqual([["after the restart", 2], ["waiting", 1]]);
  });
});
