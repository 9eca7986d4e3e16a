/**
 * The progress stream's live channel (spec 02 Task progress stream: "updates follow on every phase change"; DESIGN.md
 * 6.5: woken by the item's changes). One reader per process of the table's stream (DynamoDB Streams in AWS, DynamoDB
 * Local's own stream on the embedded runtime: the same API, so the same code) hands every change of a task item to
 * the progress streams open on that task in this process, through an in-process emitter.
 *
 * It runs only while a progress stream listens: the first subscriber starts it (the open shards' iterators at LATEST,
 * so a change written after `subscribe` resolves is delivered), the last one's leaving stops it. When the stream
 * cannot be read (no stream, no permission, DynamoDB Streams throttling this reader past its retries) the channel is
 * unavailable: its subscribers are told, and fall back to polling (core/task/progress.ts).
 */
import { DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DescribeStreamCommand, DynamoDBStreamsClient, GetRecordsCommand, GetShardIteratorCommand, type _Record as StreamRecord, type ShardIteratorType } from "@aws-sdk/client-dynamodb-streams";
import { Config } from "../config";
import { outsideRequestScope } from "../context";
import { TaskSettings } from "./settings";

/**
 * A subscriber: told each new image of its task's item, in the order they were written (a stream record per write:
 * no phase is skipped, however fast they come), and once if the channel goes down.
 */
export interface ChangeListener {
  onChange(item: Record<string, unknown>): void;
  onUnavailable(reason: string): void;
}

/** Consecutive throttled reads after which the channel counts as unavailable (its subscribers poll instead). */
const MAX_THROTTLED = 5;
/** How long a failed start keeps the channel down before a new subscriber tries again, ms. */
const RETRY_START_MS = 30_000;

interface Shard {
  iterator?: string;
  lastSequence?: string;
}

/** A DynamoDB attribute value as a stream record carries it. */
type StreamValue = { S?: string; N?: string; BOOL?: boolean; NULL?: boolean; M?: Record<string, StreamValue>; L?: StreamValue[]; SS?: string[]; NS?: string[] };

/** One attribute value as JSON (the types ElectroDB writes: strings, numbers, booleans, null, maps, lists, sets). */
function fromValue(v: StreamValue): unknown {
  if (v.S !== undefined) return v.S;
  if (v.N !== undefined) return Number(v.N);
  if (v.BOOL !== undefined) return v.BOOL;
  if (v.NULL) return null;
  if (v.M) return fromImage(v.M);
  if (v.L) return v.L.map(fromValue);
  if (v.SS) return [...v.SS];
  if (v.NS) return v.NS.map(Number);
  return undefined;
}

/** A stream record's image as a plain item. */
export const fromImage = (image: Record<string, StreamValue>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(image).map(([k, v]) => [k, fromValue(v)]));

class TaskChangeFeed {
  private readonly listeners = new Map<string, Set<ChangeListener>>();
  private starting: Promise<boolean> | null = null;
  private running = false;
  private downUntil = 0;
  private generation = 0;
  private shards = new Map<string, Shard>();
  private closed = new Set<string>();
  private streamArn: string | undefined;
  private client: DynamoDBStreamsClient | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** Records delivered since the process started (the benchmark reads it). */
  delivered = 0;

  /**
   * Listen to a task's changes. @returns whether the channel is live (false: poll instead), and how to stop listening.
   * Resolves once the reader holds its iterators, so every change written afterwards reaches the listener.
   */
  async subscribe(taskId: string, listener: ChangeListener): Promise<{ live: boolean; unsubscribe: () => void }> {
    let set = this.listeners.get(taskId);
    if (!set) this.listeners.set(taskId, (set = new Set()));
    set.add(listener);
    const unsubscribe = () => {
      const s = this.listeners.get(taskId);
      s?.delete(listener);
      if (s && s.size === 0) this.listeners.delete(taskId);
      if (this.listeners.size === 0) this.stop();
    };
    const live = TaskSettings.liveChannel() && (await this.ensureStarted());
    if (!live) set.delete(listener);
    return { live, unsubscribe };
  }

  private ensureStarted(): Promise<boolean> {
    if (this.running) return Promise.resolve(true);
    if (Date.now() < this.downUntil) return Promise.resolve(false);
    // Started by whichever progress stream subscribes first, but serving every later one: its polling must not run in
    // that first request's scope (its verified memberships, kept reads, abort signal), as Node would carry it.
    this.starting ??= outsideRequestScope(() => this.start()).finally(() => (this.starting = null));
    return this.starting;
  }

  private streams(): DynamoDBStreamsClient {
    const endpoint = Config.dynamoEndpoint();
    return (this.client ??= new DynamoDBStreamsClient({ region: Config.region(), ...(endpoint ? { endpoint, credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}) }));
  }

  /** The table's stream: TABLE_STREAM_ARN when the stack sets it, else DescribeTable's LatestStreamArn. */
  private async arn(): Promise<string> {
    const configured = process.env.TABLE_STREAM_ARN;
    if (configured) return configured;
    const endpoint = Config.dynamoEndpoint();
    const dynamo = new DynamoDBClient({ region: Config.region(), ...(endpoint ? { endpoint, credentials: { accessKeyId: "local", secretAccessKey: "local" } } : {}) });
    try {
      const out = await dynamo.send(new DescribeTableCommand({ TableName: Config.tableName() }));
      const arn = out.Table?.LatestStreamArn;
      if (!arn) throw new Error(`Table ${Config.tableName()} has no stream`);
      return arn;
    } finally {
      dynamo.destroy();
    }
  }

  private iteratorFor(shardId: string, type: ShardIteratorType, sequence?: string) {
    return this.streams()
      .send(new GetShardIteratorCommand({ StreamArn: this.streamArn, ShardId: shardId, ShardIteratorType: type, SequenceNumber: sequence }))
      .then((o) => o.ShardIterator);
  }

  /** Track the stream's shards: the open ones from LATEST at start, any found later (a rollover's children) from their start. */
  private async discover(initial: boolean): Promise<void> {
    let start: string | undefined;
    do {
      const page = await this.streams().send(new DescribeStreamCommand({ StreamArn: this.streamArn, ExclusiveStartShardId: start }));
      for (const shard of page.StreamDescription?.Shards ?? []) {
        const id = shard.ShardId!;
        if (this.shards.has(id) || this.closed.has(id)) continue;
        const open = !shard.SequenceNumberRange?.EndingSequenceNumber;
        if (initial && !open) {
          this.closed.add(id);
          continue;
        }
        this.shards.set(id, { iterator: await this.iteratorFor(id, initial ? "LATEST" : "TRIM_HORIZON") });
      }
      start = page.StreamDescription?.LastEvaluatedShardId;
    } while (start);
  }

  private async start(): Promise<boolean> {
    try {
      this.streamArn ??= await this.arn();
      this.shards = new Map();
      this.closed = new Set();
      await this.discover(true);
      this.running = true;
      const generation = ++this.generation;
      this.schedule(generation, TaskSettings.feedPollMs(), 0);
      return true;
    } catch (err) {
      this.downUntil = Date.now() + RETRY_START_MS;
      this.fail(`the table's stream cannot be read: ${(err as Error).message}`);
      return false;
    }
  }

  private schedule(generation: number, delayMs: number, throttled: number): void {
    this.timer = setTimeout(() => void this.round(generation, throttled), delayMs);
    this.timer.unref?.();
  }

  /** One polling round over every shard; throttled reads back off, and too many of them take the channel down. */
  private async round(generation: number, throttled: number): Promise<void> {
    if (!this.running || generation !== this.generation) return;
    let throttledNow = false;
    try {
      for (const [id, shard] of [...this.shards]) {
        if (!shard.iterator) continue;
        try {
          const out = await this.streams().send(new GetRecordsCommand({ ShardIterator: shard.iterator, Limit: 1000 }));
          const records = out.Records ?? [];
          if (records.length) shard.lastSequence = records.at(-1)!.dynamodb?.SequenceNumber ?? shard.lastSequence;
          this.deliver(records);
          shard.iterator = out.NextShardIterator;
          if (!shard.iterator) {
            this.shards.delete(id);
            this.closed.add(id);
            await this.discover(false);
          }
        } catch (err) {
          const name = (err as { name?: string }).name;
          if (name === "ExpiredIteratorException") shard.iterator = shard.lastSequence ? await this.iteratorFor(id, "AFTER_SEQUENCE_NUMBER", shard.lastSequence) : await this.iteratorFor(id, "LATEST");
          else if (name === "TrimmedDataAccessException") shard.iterator = await this.iteratorFor(id, "TRIM_HORIZON");
          else if (name === "LimitExceededException" || name === "ThrottlingException") throttledNow = true;
          else throw err;
        }
      }
    } catch (err) {
      this.fail(`reading the table's stream failed: ${(err as Error).message}`);
      return;
    }
    if (generation !== this.generation) return;
    const streak = throttledNow ? throttled + 1 : 0;
    if (streak >= MAX_THROTTLED) {
      this.fail("DynamoDB Streams keeps throttling this reader");
      return;
    }
    this.schedule(generation, throttledNow ? Math.min(2000, TaskSettings.feedPollMs() * 2 ** streak) : TaskSettings.feedPollMs(), streak);
  }

  private deliver(records: StreamRecord[]): void {
    for (const r of records) {
      const image = r.dynamodb?.NewImage;
      const id = image?.__edb_e__?.S === "task" ? image.id?.S : undefined;
      const set = id ? this.listeners.get(id) : undefined;
      if (!set || !image) continue;
      this.delivered++;
      const item = fromImage(image as Record<string, StreamValue>);
      for (const l of [...set]) l.onChange(item);
    }
  }

  /** The channel is down: every subscriber is told once (each falls back to polling) and the reader stops. */
  private fail(reason: string): void {
    const all = [...this.listeners.values()].flatMap((s) => [...s]);
    this.listeners.clear();
    this.stop();
    for (const l of all) l.onUnavailable(reason);
  }

  private stop(): void {
    this.running = false;
    this.generation++;
    clearTimeout(this.timer);
  }
}

/** This process's live channel (one reader for every progress stream it serves). */
export const taskChanges = new TaskChangeFeed();
