import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DeleteTableCommand, DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { ensureTable, startDynamoLocal } from "../../local/dynamodb";
import { startS3 } from "../../local/s3";
import { ephemeralIdp, type DevIdp } from "../../local/idp";
import { applyLocalEnv } from "../../local/env";

/** DynamoDB Local for a benchmark, with the service table created. */
export interface BenchDynamo {
  endpoint: string;
  /** The table to use: the name asked for, or on a shared DynamoDB Local that name with a suffix of this run's. */
  tableName: string;
  /** True when the DynamoDB Local is BENCH_DYNAMODB_ENDPOINT's, not started for this benchmark. */
  shared: boolean;
  /** Stop the DynamoDB Local started for the benchmark, or drop its table from the shared one. */
  stop(): Promise<void>;
}

/**
 * DynamoDB Local for a benchmark: started for it, in memory, unless `BENCH_DYNAMODB_ENDPOINT` names one already
 * running on loopback. Then the benchmark gets a table of its own there (its name plus a suffix unique to this run)
 * and drops it when it stops. The smoke test (test/bench/smoke.test.ts) passes the test run's DynamoDB Local this
 * way, so a dozen benchmarks do not start a dozen JVMs; `npm run bench` leaves it unset. Figures measured on a shared
 * DynamoDB Local are not comparable with the others: other work runs on it.
 */
export async function startBenchDynamo(tableName: string): Promise<BenchDynamo> {
  const shared = process.env.BENCH_DYNAMODB_ENDPOINT;
  if (shared) {
    if (new URL(shared).hostname !== "127.0.0.1") throw new Error(`BENCH_DYNAMODB_ENDPOINT must be on 127.0.0.1, not ${shared}`);
    const own = `${tableName}-${process.pid}-${Date.now().toString(36)}`;
    await ensureTable(shared, own);
    console.log(`bench: on the DynamoDB Local of BENCH_DYNAMODB_ENDPOINT (${shared}), table ${own}; other work shares it`);
    return {
      endpoint: shared,
      tableName: own,
      shared: true,
      stop: async () => {
        const client = new DynamoDBClient({ endpoint: shared, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
        await client.send(new DeleteTableCommand({ TableName: own })).finally(() => client.destroy());
      },
    };
  }
  const dynamo = await startDynamoLocal();
  try {
    await ensureTable(dynamo.endpoint, tableName);
  } catch (err) {
    await dynamo.stop();
    throw err;
  }
  return { endpoint: dynamo.endpoint, tableName, shared: false, stop: dynamo.stop };
}

/** The embedded runtime started in this process for a benchmark. */
export interface BenchRuntime {
  /** Base URL of the local gateway, always on 127.0.0.1. */
  base: string;
  dynamoEndpoint: string;
  s3Endpoint: string;
  tableName: string;
  bucketName: string;
  idp: DevIdp;
  /** Stop the gateway, the object store and DynamoDB Local, and remove the temp dir. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Start the embedded runtime in-process for a benchmark (DESIGN.md section 2): DynamoDB Local in memory
 * (`startBenchDynamo`: or a table of its own on BENCH_DYNAMODB_ENDPOINT's), the object store in a temp dir, an
 * ephemeral identity provider, the local env, the event sources as `npm start` wires them (S3 events to extraction,
 * the local workflow runner, the payments queue that applies a simulated purchase: bench/lib/billing.ts), and the
 * local gateway on a free loopback port.
 * Access gating is off and logging is silent, as in the http tests; response validation (a test-only check) is off.
 * Ctrl-C while it runs stops the emulators before the process exits.
 */
export async function startBenchRuntime(opts: { tableName?: string; bucketName?: string } = {}): Promise<BenchRuntime> {
  const bucketName = opts.bucketName ?? "r2d-bench-uploads";
  // Before any handler module loads: the logger reads its level at import.
  process.env.ACCESS_GATING = "false";
  process.env.LOG_LEVEL = "SILENT";
  process.env.POWERTOOLS_LOG_LEVEL = "SILENT";
  delete process.env.VALIDATE_RESPONSES;

  const stops: (() => Promise<unknown>)[] = [];
  // One stop for everyone: a second caller (a signal during the benchmark's own clean-up) waits for the first.
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      for (const s of stops) await s().catch((err: unknown) => console.error("bench: stop failed:", err));
    })();
    return stopping;
  };
  const onSignal = (signal: NodeJS.Signals) => {
    void stop().finally(() => process.exit(signal === "SIGINT" ? 130 : 143));
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  try {
    const dir = await mkdtemp(join(tmpdir(), "r2d-bench-"));
    stops.push(() => rm(dir, { recursive: true, force: true }));
    const [dynamoStart, s3Start, idpStart] = await Promise.allSettled([
      startBenchDynamo(opts.tableName ?? "r2d-bench"),
      startS3({ directory: join(dir, "s3"), bucket: bucketName }),
      ephemeralIdp(),
    ]);
    // Register whatever did start before failing on what did not, so nothing is left running.
    if (dynamoStart.status === "fulfilled") stops.unshift(dynamoStart.value.stop);
    if (s3Start.status === "fulfilled") stops.unshift(s3Start.value.stop);
    for (const r of [dynamoStart, s3Start, idpStart]) if (r.status === "rejected") throw r.reason;
    const dynamo = (dynamoStart as PromiseFulfilledResult<BenchDynamo>).value;
    const tableName = dynamo.tableName;
    const s3 = (s3Start as PromiseFulfilledResult<Awaited<ReturnType<typeof startS3>>>).value;
    const idp = (idpStart as PromiseFulfilledResult<DevIdp>).value;
    applyLocalEnv({ dynamoEndpoint: dynamo.endpoint, s3Endpoint: s3.endpoint, idp, tableName, bucketName });
    const events = await import("../../local/events");
    events.wireLocalEvents(s3);
    stops.unshift(async () => events.localPaymentsQueue().stop());
    const { startGateway } = await import("../../local/gateway");
    const server: Server = await startGateway(0, "127.0.0.1");
    stops.unshift(
      () =>
        new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeAllConnections();
        }),
    );
    const { port } = server.address() as AddressInfo;
    return {
      base: `http://127.0.0.1:${port}`,
      dynamoEndpoint: dynamo.endpoint,
      s3Endpoint: s3.endpoint,
      tableName,
      bucketName,
      idp,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
