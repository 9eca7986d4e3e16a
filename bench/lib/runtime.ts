import { mkdtemp, rm } from "node:fs/promises";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureTable, startDynamoLocal } from "../../local/dynamodb";
import { startS3 } from "../../local/s3";
import { ephemeralIdp, type DevIdp } from "../../local/idp";
import { applyLocalEnv } from "../../local/env";

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
 * Start the embedded runtime in-process for a benchmark (DESIGN.md section 2): DynamoDB Local in memory, the object
 * store in a temp dir, an ephemeral identity provider, the local env, and the local gateway on a free loopback port.
 * Access gating is off and logging is silent, as in the http tests; response validation (a test-only check) is off.
 * Ctrl-C while it runs stops the emulators before the process exits.
 */
export async function startBenchRuntime(
  opts: { tableName?: string; bucketName?: string; /** Wire S3 events to extraction, as npm start does. */ events?: boolean } = {},
): Promise<BenchRuntime> {
  const tableName = opts.tableName ?? "r2d-bench";
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
      startDynamoLocal(),
      startS3({ directory: join(dir, "s3"), bucket: bucketName }),
      ephemeralIdp(),
    ]);
    // Register whatever did start before failing on what did not, so nothing is left running.
    if (dynamoStart.status === "fulfilled") stops.unshift(dynamoStart.value.stop);
    if (s3Start.status === "fulfilled") stops.unshift(s3Start.value.stop);
    for (const r of [dynamoStart, s3Start, idpStart]) if (r.status === "rejected") throw r.reason;
    const dynamo = (dynamoStart as PromiseFulfilledResult<Awaited<ReturnType<typeof startDynamoLocal>>>).value;
    const s3 = (s3Start as PromiseFulfilledResult<Awaited<ReturnType<typeof startS3>>>).value;
    const idp = (idpStart as PromiseFulfilledResult<DevIdp>).value;
    await ensureTable(dynamo.endpoint, tableName);
    applyLocalEnv({ dynamoEndpoint: dynamo.endpoint, s3Endpoint: s3.endpoint, idp, tableName, bucketName });
    if (opts.events) (await import("../../local/events")).wireLocalEvents(s3);
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
