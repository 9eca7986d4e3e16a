import { DescribeTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
  type _Record as StreamRecord,
  type Shard,
  type ShardIteratorType,
} from "@aws-sdk/client-dynamodb-streams";
import type { DynamoDBRecord, DynamoDBStreamEvent } from "aws-lambda";
import { APPROVED_FILTER_PATTERN, handler as onApproved } from "../functions/events/pending-actions";
import { handler as sweeperHandler } from "../functions/events/pending-action-sweeper";
import { Config } from "../core/config";
import { startSchedule } from "./schedule";
import { sweep } from "../core/pending-action/executor";

/** Options of the embedded runtime's stream reader. */
export interface LocalStreamsOptions {
  /** DynamoDB Local's endpoint (its Streams API answers there too). */
  endpoint: string;
  tableName: string;
  region?: string;
  /** GetRecords poll interval per shard, ms (default 250). */
  pollMs?: number;
  /** Sweeper interval, ms (default env PENDING_ACTION_SWEEP_INTERVAL_SECONDS, else 30 s). */
  sweepIntervalMs?: number;
  /** Where errors of the reader and the sweeper go (default console.error). */
  onError?: (err: unknown) => void;
}

/** A running reader: stop it to end polling and the sweeper (waits for deliveries in flight). */
export interface LocalStreams {
  stop(): Promise<void>;
}

/**
 * Does `value` match a Lambda event filter pattern? The subset our patterns use: nested objects, and arrays of
 * exact values at the leaves (see APPROVED_FILTER_PATTERN), so the embedded runtime filters as the mapping does.
 */
export function matchesFilter(pattern: unknown, value: unknown): boolean {
  if (Array.isArray(pattern)) return pattern.some((p) => p === value);
  if (!pattern || typeof pattern !== "object") return pattern === value;
  if (!value || typeof value !== "object") return false;
  return Object.entries(pattern).every(([k, sub]) => matchesFilter(sub, (value as Record<string, unknown>)[k]));
}

/** A GetRecords record in the shape Lambda hands a DynamoDB Streams consumer (creation time in epoch seconds). */
function toLambdaRecord(r: StreamRecord, streamArn: string, region: string): DynamoDBRecord {
  const created = r.dynamodb?.ApproximateCreationDateTime;
  return {
    eventID: r.eventID,
    eventName: r.eventName,
    eventVersion: r.eventVersion ?? "1.1",
    eventSource: "aws:dynamodb",
    awsRegion: r.awsRegion ?? region,
    eventSourceARN: streamArn,
    dynamodb: {
      ...(r.dynamodb as NonNullable<DynamoDBRecord["dynamodb"]>),
      ...(created ? { ApproximateCreationDateTime: Math.floor(new Date(created).getTime() / 1000) } : {}),
    },
  } as DynamoDBRecord;
}

interface ShardState {
  iterator?: string;
  lastSequence?: string;
}

/**
 * The embedded runtime's DynamoDB Streams event source (DESIGN.md 2 and 6.2): reads the table's stream from DynamoDB
 * Local and hands the records that pass APPROVED_FILTER_PATTERN, in the Lambda DynamoDBStreamEvent shape, to the same
 * consumer AWS invokes (functions/events/pending-actions.ts). Also runs the same sweeper: once at start-up, with no
 * grace (no record written before the reader started will come through the stream), and then every 30 s.
 *
 * Reading: DescribeTable → LatestStreamArn; DescribeStream → shards; the shards open at start are read from LATEST,
 * shards that appear later (a rollover's children) from TRIM_HORIZON; GetRecords every `pollMs`; a shard whose
 * iterator ends is closed and its children are found by describing the stream again; an expired iterator resumes
 * AFTER_SEQUENCE_NUMBER of the last record seen.
 *
 * Resolves once every open shard has its iterator, so a write made after it resolves is delivered.
 * @throws Error when the table has no stream.
 */
export async function startLocalStreams(opts: LocalStreamsOptions): Promise<LocalStreams> {
  const region = opts.region ?? "us-east-1";
  const pollMs = opts.pollMs ?? 250;
  const sweepMs = opts.sweepIntervalMs ?? Config.pendingActionSweepIntervalSeconds() * 1000;
  const onError = opts.onError ?? ((err: unknown) => console.error("pending-action stream reader:", err));
  const credentials = { accessKeyId: "local", secretAccessKey: "local" };
  const dynamo = new DynamoDBClient({ endpoint: opts.endpoint, region, credentials });
  const streams = new DynamoDBStreamsClient({ endpoint: opts.endpoint, region, credentials });

  const table = await dynamo.send(new DescribeTableCommand({ TableName: opts.tableName }));
  dynamo.destroy();
  const streamArn = table.Table?.LatestStreamArn;
  if (!streamArn) {
    streams.destroy();
    throw new Error(`Table ${opts.tableName} has no stream: it must be created with StreamSpecification enabled`);
  }

  const shards = new Map<string, ShardState>();
  const closed = new Set<string>();
  const inFlight = new Set<Promise<unknown>>();
  let stopped = false;

  const iteratorFor = async (shardId: string, type: ShardIteratorType, sequence?: string) =>
    (await streams.send(new GetShardIteratorCommand({ StreamArn: streamArn, ShardId: shardId, ShardIteratorType: type, SequenceNumber: sequence }))).ShardIterator;

  async function describeShards(): Promise<Shard[]> {
    const out: Shard[] = [];
    let start: string | undefined;
    do {
      const page = await streams.send(new DescribeStreamCommand({ StreamArn: streamArn, ExclusiveStartShardId: start }));
      out.push(...(page.StreamDescription?.Shards ?? []));
      start = page.StreamDescription?.LastEvaluatedShardId;
    } while (start);
    return out;
  }

  /** Track shards: at start only the open ones (from LATEST); afterwards every new one from its beginning. */
  async function discover(initial: boolean): Promise<void> {
    for (const shard of await describeShards()) {
      const id = shard.ShardId!;
      if (shards.has(id) || closed.has(id)) continue;
      const open = !shard.SequenceNumberRange?.EndingSequenceNumber;
      if (initial && !open) {
        closed.add(id);
        continue;
      }
      shards.set(id, { iterator: await iteratorFor(id, initial ? "LATEST" : "TRIM_HORIZON") });
    }
  }

  function deliver(records: StreamRecord[]): void {
    const matching = records.map((r) => toLambdaRecord(r, streamArn!, region)).filter((r) => matchesFilter(APPROVED_FILTER_PATTERN, r));
    if (matching.length === 0) return;
    const event: DynamoDBStreamEvent = { Records: matching };
    // Not awaited: a long execution must not hold back the stream (the executor is exactly-once on its own).
    const p = onApproved(event)
      .catch(onError)
      .finally(() => inFlight.delete(p));
    inFlight.add(p);
  }

  async function pollShard(id: string, state: ShardState): Promise<void> {
    if (!state.iterator) return;
    try {
      const out = await streams.send(new GetRecordsCommand({ ShardIterator: state.iterator, Limit: 100 }));
      const records = out.Records ?? [];
      if (records.length) state.lastSequence = records[records.length - 1]!.dynamodb?.SequenceNumber ?? state.lastSequence;
      deliver(records);
      state.iterator = out.NextShardIterator;
      if (!state.iterator) {
        // The shard closed (rollover): its children appear in the stream's description.
        shards.delete(id);
        closed.add(id);
        await discover(false);
      }
    } catch (err) {
      const name = (err as { name?: string }).name;
      if (name === "ExpiredIteratorException") {
        state.iterator = state.lastSequence ? await iteratorFor(id, "AFTER_SEQUENCE_NUMBER", state.lastSequence) : await iteratorFor(id, "LATEST");
      } else if (name === "TrimmedDataAccessException") {
        state.iterator = await iteratorFor(id, "TRIM_HORIZON");
      } else if (name === "ResourceNotFoundException") {
        shards.delete(id);
        closed.add(id);
      } else {
        throw err;
      }
    }
  }

  await discover(true);

  let polling: Promise<void> = Promise.resolve();
  let pollTimer: NodeJS.Timeout | undefined;
  let rounds = 0;
  const pollRound = async () => {
    try {
      for (const [id, state] of [...shards]) await pollShard(id, state);
      // Now and then look for shards we were not told about (a stream re-enabled, a missed rollover).
      if (++rounds % 40 === 0) await discover(false);
    } catch (err) {
      if (!stopped) onError(err);
    }
    if (!stopped) pollTimer = setTimeout(() => (polling = pollRound()), pollMs);
  };
  polling = pollRound();

  const sweeper = startSchedule({
    first: async () => (await sweep({ graceMs: 0 })).errors.forEach(onError),
    every: async () => void (await sweeperHandler()),
    intervalMs: sweepMs,
    onError,
  });

  return {
    async stop() {
      if (stopped) return;
      stopped = true;
      clearTimeout(pollTimer);
      const sweeperStopped = sweeper.stop();
      await polling;
      clearTimeout(pollTimer);
      await sweeperStopped;
      await Promise.allSettled([...inFlight]);
      streams.destroy();
    },
  };
}
