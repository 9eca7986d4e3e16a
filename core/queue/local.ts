/**
 * The embedded runtime's queue (DESIGN.md section 2): an in-process stand-in for an SQS FIFO queue with a Lambda
 * event source mapping and a redrive policy. Sent messages are delivered to the consumer as SQS-shaped batches
 * (`SQSEvent`), in order within their message group and one batch per group at a time; groups run concurrently.
 * A record the consumer reports failed (partial batch response) or a batch it throws on is received again after a
 * delay, up to `maxReceiveCount` receives, then moved to the dead-letter list, and its group goes on. A
 * deduplication id seen in the last 5 minutes is dropped, as SQS FIFO does.
 *
 * Given a journal directory (`npm start`: under the data folder, beside the table's files), the queue is durable as
 * SQS is: `send()` resolves once the message is on disk (./journal.ts), each receive is recorded before the consumer
 * runs, a consumed message is removed and a dead letter moved to `dead/`. A queue constructed on the directory again
 * (the next start) delivers every journaled message again, in order per group, with its receive count and the rest of
 * its delay; a message being consumed when the process stopped is delivered again (at least once, as SQS; the
 * consumers are idempotent). Without a directory (tests, a table in memory) nothing survives a restart.
 */
import { randomUUID } from "node:crypto";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { Queue, QueueMessage } from "./index";
import { outsideRequestScope } from "../context";
import { nextSeqAfter, QueueJournal, type JournalRecord } from "./journal";

export type SqsConsumer = (event: SQSEvent) => Promise<SQSBatchResponse | void>;

export interface LocalQueueOptions {
  /** Queue name, for the SQS-shaped records' ARN. */
  name: string;
  consumer: SqsConsumer;
  /** Receives of a message before it is dead-lettered (SQS redrive maxReceiveCount; default 5). */
  maxReceiveCount?: number;
  /** Records per batch (default 10, the SQS FIFO maximum). */
  batchSize?: number;
  /** Delay before the n-th receive again, ms (default 1 s doubling to 30 s). */
  retryDelayMs?: (receiveCount: number) => number;
  /** Told of each message moved to the dead-letter list. */
  onDeadLetter?: (letter: DeadLetter) => void;
  /**
   * The queue's journal directory (created when missing): messages survive a restart, and a queue constructed on it
   * delivers what it holds. Without one the queue is in memory only. Only one queue may use a directory at a time
   * (an earlier one stopped first).
   */
  journalDir?: string;
  /** Told, one line each, of a journal file skipped at start-up and of a journal write that failed (default console.warn). */
  warn?: (line: string) => void;
}

/** A message the consumer failed `maxReceiveCount` times. */
export interface DeadLetter {
  messageId: string;
  message: QueueMessage;
  receiveCount: number;
  /** The last failure: the consumer's thrown error, or "reported failed" (partial batch response). */
  reason: string;
}

interface Entry {
  messageId: string;
  message: QueueMessage;
  /** Sending order, kept across restarts in the journal. */
  seq: number;
  sentAt: number;
  receiveCount: number;
  availableAt: number;
  /** On disk (always, without a journal): a message is not delivered before `send()` could resolve. */
  durable: boolean;
  /** The message's journal operations, one after another (a late write must not bring back a removed file). */
  io: Promise<void>;
}

/** SQS FIFO's deduplication interval. */
const DEDUP_WINDOW_MS = 5 * 60_000;

export class LocalFifoQueue implements Queue {
  /** Messages the consumer gave up on, oldest first (with a journal, those of earlier runs too). */
  readonly deadLetters: DeadLetter[] = [];
  private readonly groups = new Map<string, Entry[]>();
  private readonly busy = new Set<string>();
  /** Deduplication ids of the messages accepted in the last 5 minutes, with when (epoch ms). */
  private readonly seen = new Map<string, number>();
  /** Deduplication ids whose message `send()` is journaling: `true` once it is on disk, `false` if the write failed. */
  private readonly writing = new Map<string, Promise<boolean>>();
  private idleWaiters: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private nextSeq = 0;
  private readonly journal: QueueJournal | undefined;
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly maxReceiveCount: number;
  private readonly batchSize: number;
  private readonly retryDelayMs: (n: number) => number;
  private readonly warn: (line: string) => void;

  /**
   * @throws the fs error when `journalDir` cannot be created or read (a file in it that is not a record is skipped
   *   with a warning, not thrown)
   */
  constructor(private readonly opts: LocalQueueOptions) {
    this.maxReceiveCount = opts.maxReceiveCount ?? 5;
    this.batchSize = opts.batchSize ?? 10;
    this.retryDelayMs = opts.retryDelayMs ?? ((n) => Math.min(30_000, 1000 * 2 ** (n - 1)));
    this.warn = opts.warn ?? ((line) => console.warn(line));
    if (opts.journalDir) {
      this.journal = new QueueJournal(opts.journalDir);
      this.restore(this.journal);
    }
  }

  /**
   * Enqueue a message. With a journal it resolves once the message is on disk. A message whose deduplication id was
   * accepted in the last 5 minutes is dropped (resolves, not queued); one sent while a message with its id is still
   * being written waits for that write: dropped if it lands, sent in its place if it fails.
   * @throws Error when the queue is stopped; the fs error when the journal cannot be written (the message is not
   *   queued and its deduplication id is not taken: the sender may send it again)
   */
  async send(message: QueueMessage): Promise<void> {
    const id = message.deduplicationId;
    for (;;) {
      if (this.stopped) throw new Error(`Queue ${this.opts.name} is stopped`);
      const earlier = this.duplicateOf(id);
      if (earlier === "accepted") return;
      if (earlier === "none") break;
      // Acknowledging a duplicate before its original is on disk would lose the message if that write failed.
      if (await earlier) return;
    }
    // From the check above to the mark below nothing awaits, so two sends of one id cannot both pass.
    const now = Date.now();
    const group = this.groups.get(message.groupId) ?? [];
    // A delayed message (SQS DelaySeconds, standard queues) is not received before its delay has passed.
    const availableAt = now + Math.max(0, message.delaySeconds ?? 0) * 1000;
    const entry: Entry = { messageId: randomUUID(), message, seq: this.nextSeq++, sentAt: now, receiveCount: 0, availableAt, durable: !this.journal, io: Promise.resolve() };
    // In the group at once, so concurrent sends keep their order; held back from delivery until it is on disk.
    group.push(entry);
    this.groups.set(message.groupId, group);
    if (this.journal) {
      let written!: (kept: boolean) => void;
      this.writing.set(id, new Promise<boolean>((resolve) => (written = resolve)));
      try {
        await this.journaled(entry, (j) => j.put(recordOf(entry)));
      } catch (err) {
        const at = this.groups.get(message.groupId)?.indexOf(entry) ?? -1;
        if (at >= 0) this.groups.get(message.groupId)!.splice(at, 1);
        this.writing.delete(id);
        written(false);
        this.settleIdle();
        // Messages of the group behind it that are on disk were held back while it was written: they go on.
        this.schedulePump();
        throw err;
      }
      entry.durable = true;
      this.writing.delete(id);
      written(true);
    }
    // Taken only now that the message is kept: the window counts from the send, as SQS's does.
    this.seen.set(id, now);
    // Delivered on a later tick, as SQS would: the sender's own work (its HTTP answer) is not held up. Outside the
    // sender's request scope, as an SQS consumer is its own invocation.
    this.schedulePump();
  }

  /**
   * Whether a message with this deduplication id was accepted in the last 5 minutes (`accepted`), is being journaled
   * (its write's outcome: `true` once on disk, `false` if the write failed), or neither (`none`). Synchronous, so the
   * caller can take the id before anything else runs. Forgets ids older than the window.
   */
  private duplicateOf(id: string): "accepted" | "none" | Promise<boolean> {
    const now = Date.now();
    for (const [seenId, at] of this.seen) if (now - at > DEDUP_WINDOW_MS) this.seen.delete(seenId);
    if (this.seen.has(id)) return "accepted";
    return this.writing.get(id) ?? "none";
  }

  /** Resolves when no message is waiting or being consumed (everything delivered or dead-lettered, and journaled so). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /**
   * Stop delivering. Messages not yet delivered are dropped from memory; with a journal they stay on disk for the next
   * queue on the directory, as after a crash (a consumer still running finishes; if it succeeds its message is
   * removed). Resolves when the journal writes under way have ended.
   */
  stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.groups.clear();
    this.settleIdle();
    return Promise.allSettled([...this.inflight]).then(() => undefined);
  }

  /** Take up what an earlier run journaled: its dead letters, its deduplication ids, its messages in sending order. */
  private restore(journal: QueueJournal): void {
    const { live, dead } = journal.load((line) => this.warn(`Queue ${this.opts.name}: ${line}`));
    const now = Date.now();
    for (const d of dead) {
      this.deadLetters.push({ messageId: d.messageId, message: d.message, receiveCount: d.receiveCount, reason: d.reason });
      if (now - d.sentAt <= DEDUP_WINDOW_MS) this.seen.set(d.message.deduplicationId, d.sentAt);
    }
    for (const r of live) {
      const group = this.groups.get(r.message.groupId) ?? [];
      group.push({ ...r, durable: true, io: Promise.resolve() });
      this.groups.set(r.message.groupId, group);
      if (now - r.sentAt <= DEDUP_WINDOW_MS) this.seen.set(r.message.deduplicationId, r.sentAt);
    }
    this.nextSeq = Math.max(this.nextSeq, nextSeqAfter(live, dead));
    if (live.length > 0) this.schedulePump();
  }

  private schedulePump(): void {
    setImmediate(() => outsideRequestScope(() => this.pump()));
  }

  /** Run a journal operation after the message's earlier ones; a no-op without a journal. */
  private journaled(entry: Entry, op: (journal: QueueJournal) => Promise<void>): Promise<void> {
    const journal = this.journal;
    if (!journal) return Promise.resolve();
    const done = entry.io.then(() => op(journal));
    const settled = done.catch(() => undefined);
    entry.io = settled;
    this.inflight.add(settled);
    void settled.then(() => this.inflight.delete(settled));
    return done;
  }

  private isIdle(): boolean {
    return this.busy.size === 0 && [...this.groups.values()].every((g) => g.length === 0);
  }

  private settleIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private pump(): void {
    if (this.stopped) return this.settleIdle();
    const now = Date.now();
    let nextAt = Infinity;
    for (const [groupId, entries] of this.groups) {
      if (entries.length === 0) {
        this.groups.delete(groupId);
        continue;
      }
      if (this.busy.has(groupId)) continue;
      const head = entries[0]!;
      // Its send() is still writing it; the write's end pumps again.
      if (!head.durable) continue;
      // FIFO: the group's head decides; nothing behind it is delivered before it.
      if (head.availableAt > now) {
        nextAt = Math.min(nextAt, head.availableAt);
        continue;
      }
      this.busy.add(groupId);
      // Received its last time by a run that stopped before the consumer answered (a message that kills the process
      // would otherwise be delivered at every start): dead, as SQS moves it at the receive past the limit.
      if (head.receiveCount >= this.maxReceiveCount) {
        void this.settle(groupId, [head], new Set([head.messageId]), "the runtime stopped while its last receive was being consumed");
        continue;
      }
      const batch: Entry[] = [];
      for (const e of entries.slice(0, this.batchSize)) {
        if (!e.durable || e.receiveCount >= this.maxReceiveCount) break;
        batch.push(e);
      }
      void this.deliver(groupId, batch);
    }
    clearTimeout(this.timer);
    if (nextAt !== Infinity) {
      this.timer = setTimeout(() => this.pump(), Math.max(0, nextAt - now));
      this.timer.unref();
    }
    this.settleIdle();
  }

  private async deliver(groupId: string, batch: Entry[]): Promise<void> {
    for (const e of batch) e.receiveCount += 1;
    if (this.journal) {
      // The receive is on disk before the consumer runs, so a message that is being consumed at every crash still
      // reaches its dead-letter limit. A failed write costs only that count.
      await this.reportFailures(batch.map((e) => this.journaled(e, (j) => j.put(recordOf(e)))));
      if (this.stopped) {
        this.busy.delete(groupId);
        this.settleIdle();
        return;
      }
    }
    let failed: Set<string>;
    let reason = "reported failed";
    try {
      const res = await this.opts.consumer({ Records: batch.map((e) => this.record(e)) });
      failed = new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      failed = new Set(batch.map((e) => e.messageId));
      reason = err instanceof Error ? err.message : String(err);
    }
    await this.settle(groupId, batch, failed, reason);
  }

  /** After a receive: remove the consumed, dead-letter the exhausted, schedule the rest again; journal it; go on. */
  private async settle(groupId: string, batch: Entry[], failed: Set<string>, reason: string): Promise<void> {
    // Stopped meanwhile: the journal keeps the failed for the next queue on it; the consumed are done with.
    if (this.stopped) {
      await this.reportFailures(batch.filter((e) => !failed.has(e.messageId)).map((e) => this.journaled(e, (j) => j.remove(e.messageId))));
      this.busy.delete(groupId);
      this.settleIdle();
      return;
    }
    const entries = this.groups.get(groupId) ?? [];
    const retryAt = Date.now() + this.retryDelayMs(batch.reduce((most, e) => Math.max(most, e.receiveCount), 0));
    const writes: Promise<void>[] = [];
    for (const e of batch) {
      const at = entries.indexOf(e);
      if (at < 0) continue;
      if (!failed.has(e.messageId)) {
        entries.splice(at, 1);
        writes.push(this.journaled(e, (j) => j.remove(e.messageId)));
      } else if (e.receiveCount >= this.maxReceiveCount) {
        entries.splice(at, 1);
        const letter = { messageId: e.messageId, message: e.message, receiveCount: e.receiveCount, reason };
        this.deadLetters.push(letter);
        this.opts.onDeadLetter?.(letter);
        writes.push(this.journaled(e, (j) => j.bury({ ...recordOf(e), reason, deadAt: Date.now() })));
      } else {
        e.availableAt = retryAt;
        writes.push(this.journaled(e, (j) => j.put(recordOf(e))));
      }
    }
    // Before the group goes on, so that idle() means the journal says what memory says.
    await this.reportFailures(writes);
    this.busy.delete(groupId);
    this.pump();
  }

  /** Wait for journal operations; a failure is reported, not thrown (the queue goes on from memory). */
  private async reportFailures(writes: Promise<void>[]): Promise<void> {
    if (!this.journal) return;
    const results = await Promise.allSettled(writes);
    for (const r of results) {
      if (r.status === "rejected") this.warn(`Queue ${this.opts.name}: journal write failed (${r.reason instanceof Error ? r.reason.message : String(r.reason)}); the message's record on disk may be stale.`);
    }
  }

  private record(e: Entry): SQSRecord {
    return {
      messageId: e.messageId,
      receiptHandle: `${e.messageId}#${e.receiveCount}`,
      body: e.message.body,
      attributes: {
        ApproximateReceiveCount: String(e.receiveCount),
        SentTimestamp: String(e.sentAt),
        SenderId: "local",
        ApproximateFirstReceiveTimestamp: String(e.sentAt),
        MessageGroupId: e.message.groupId,
        MessageDeduplicationId: e.message.deduplicationId,
        SequenceNumber: String(e.sentAt),
      },
      messageAttributes: {},
      md5OfBody: "",
      eventSource: "aws:sqs",
      eventSourceARN: `arn:aws:sqs:local:000000000000:${this.opts.name}.fifo`,
      awsRegion: "local",
    };
  }
}

/** The journal's record of an entry. */
const recordOf = (e: Entry): JournalRecord => ({
  messageId: e.messageId,
  seq: e.seq,
  message: e.message,
  sentAt: e.sentAt,
  receiveCount: e.receiveCount,
  availableAt: e.availableAt,
});
