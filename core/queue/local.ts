/**
 * The embedded runtime's queue (DESIGN.md section 2): an in-process stand-in for an SQS FIFO queue with a Lambda
 * event source mapping and a redrive policy. Sent messages are delivered to the consumer as SQS-shaped batches
 * (`SQSEvent`), in order within their message group and one batch per group at a time; groups run concurrently.
 * A record the consumer reports failed (partial batch response) or a batch it throws on is received again after a
 * delay, up to `maxReceiveCount` receives, then moved to the dead-letter list, and its group goes on. A
 * deduplication id seen in the last 5 minutes is dropped, as SQS FIFO does. Nothing survives a restart (the
 * events' receipts do, in the table).
 */
import { randomUUID } from "node:crypto";
import type { SQSBatchResponse, SQSEvent, SQSRecord } from "aws-lambda";
import type { Queue, QueueMessage } from "./index";
import { outsideRequestScope } from "../context";

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
  sentAt: number;
  receiveCount: number;
  availableAt: number;
}

/** SQS FIFO's deduplication interval. */
const DEDUP_WINDOW_MS = 5 * 60_000;

export class LocalFifoQueue implements Queue {
  /** Messages the consumer gave up on, oldest first. */
  readonly deadLetters: DeadLetter[] = [];
  private readonly groups = new Map<string, Entry[]>();
  private readonly busy = new Set<string>();
  private readonly seen = new Map<string, number>();
  private idleWaiters: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly maxReceiveCount: number;
  private readonly batchSize: number;
  private readonly retryDelayMs: (n: number) => number;

  constructor(private readonly opts: LocalQueueOptions) {
    this.maxReceiveCount = opts.maxReceiveCount ?? 5;
    this.batchSize = opts.batchSize ?? 10;
    this.retryDelayMs = opts.retryDelayMs ?? ((n) => Math.min(30_000, 1000 * 2 ** (n - 1)));
  }

  async send(message: QueueMessage): Promise<void> {
    if (this.stopped) throw new Error(`Queue ${this.opts.name} is stopped`);
    const now = Date.now();
    for (const [id, at] of this.seen) if (now - at > DEDUP_WINDOW_MS) this.seen.delete(id);
    if (this.seen.has(message.deduplicationId)) return;
    this.seen.set(message.deduplicationId, now);
    const group = this.groups.get(message.groupId) ?? [];
    // A delayed message (SQS DelaySeconds, standard queues) is not received before its delay has passed.
    group.push({ messageId: randomUUID(), message, sentAt: now, receiveCount: 0, availableAt: now + Math.max(0, message.delaySeconds ?? 0) * 1000 });
    this.groups.set(message.groupId, group);
    // Delivered on a later tick, as SQS would: the sender's own work (its HTTP answer) is not held up. Outside the
    // sender's request scope, as an SQS consumer is its own invocation.
    setImmediate(() => outsideRequestScope(() => this.pump()));
  }

  /** Resolves when no message is waiting or being consumed (everything delivered or dead-lettered). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Stop delivering; messages not yet delivered are dropped. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.groups.clear();
    this.settleIdle();
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
    if (this.stopped) return;
    const now = Date.now();
    let nextAt = Infinity;
    for (const [groupId, entries] of this.groups) {
      if (entries.length === 0) {
        this.groups.delete(groupId);
        continue;
      }
      if (this.busy.has(groupId)) continue;
      // FIFO: the group's head decides; nothing behind it is delivered before it.
      if (entries[0]!.availableAt > now) {
        nextAt = Math.min(nextAt, entries[0]!.availableAt);
        continue;
      }
      const batch = entries.slice(0, this.batchSize);
      this.busy.add(groupId);
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
    let failed: Set<string>;
    let reason = "reported failed";
    try {
      const res = await this.opts.consumer({ Records: batch.map((e) => this.record(e)) });
      failed = new Set((res?.batchItemFailures ?? []).map((f) => f.itemIdentifier));
    } catch (err) {
      failed = new Set(batch.map((e) => e.messageId));
      reason = err instanceof Error ? err.message : String(err);
    }
    const entries = this.groups.get(groupId) ?? [];
    const retryAt = Date.now() + this.retryDelayMs(Math.max(...batch.map((e) => e.receiveCount)));
    for (const e of batch) {
      const at = entries.indexOf(e);
      if (at < 0) continue;
      if (!failed.has(e.messageId)) {
        entries.splice(at, 1);
      } else if (e.receiveCount >= this.maxReceiveCount) {
        entries.splice(at, 1);
        const letter = { messageId: e.messageId, message: e.message, receiveCount: e.receiveCount, reason };
        this.deadLetters.push(letter);
        this.opts.onDeadLetter?.(letter);
      } else {
        e.availableAt = retryAt;
      }
    }
    this.busy.delete(groupId);
    this.pump();
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
