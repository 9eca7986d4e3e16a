import { resolve } from "node:path";
import { parseArgs } from "node:util";
import { devIdp } from "./idp";
import { applyLocalEnv } from "./env";
import { ensureTable, PrerequisiteError, startDynamoLocal } from "./dynamodb";
import { startS3 } from "./s3";
import { startGateway } from "./gateway";
import { mkdir, rm, writeFile } from "node:fs/promises";
import { existsSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { DataDirInUseError, takeDataLock } from "./data-lock";

/**
 * `npm start`: the embedded runtime. DynamoDB Local (data under .data/dynamodb), the local object store
 * (.data/s3), the queues' journals (.data/queues), and the local gateway on http://127.0.0.1:3000 (PORT to change).
 * Ctrl-C stops everything.
 * One `npm start` per data folder: a second one on the same folder refuses in one sentence naming the first
 * (the lock file `<data>/start.lock` holds its pid; local/data-lock.ts).
 */
async function main() {
  const { values } = parseArgs({ options: { port: { type: "string" }, data: { type: "string" } } });
  const dataDir = resolve(values.data ?? process.env.DATA_DIR ?? ".data");
  const port = portOf(values.port ?? process.env.PORT ?? "3000");
  if (existsSync(dataDir) && !statSync(dataDir).isDirectory()) {
    throw new PrerequisiteError(`The data folder ${dataDir} is a file: set DATA_DIR (or --data) to a folder.`);
  }
  // Before DynamoDB Local's 20 s of start-up, not after.
  await portFree(port);
  // Before anything starts: two DynamoDB Locals on one set of files would both write them. Freed on exit once
  // DynamoDB Local has stopped (Ctrl-C and SIGTERM stop everything, then exit); after a crash the lock of dead
  // processes is taken over.
  const lock = takeDataLock(dataDir);
  process.on("exit", lock.release);
  // A missing model-server setting stops here with one sentence, not at the first AI request.
  (await import("../core/ai/select")).checkAiSettings();
  await mkdir(resolve(dataDir, "dynamodb"), { recursive: true });

  const dynamo = await startDynamoLocal({ dbPath: resolve(dataDir, "dynamodb"), port: Number(process.env.DYNAMODB_PORT ?? 0) || undefined });
  // The JVM outlives a kill -9 of this process: while it runs, the lock names it and no other start takes the folder.
  if (dynamo.process.pid) lock.addPid(dynamo.process.pid);
  const stops: (() => Promise<unknown>)[] = [dynamo.stop];
  try {
    const tableName = process.env.TABLE_NAME ?? "research-to-delivery";
    const bucketName = process.env.BUCKET_NAME ?? "research-uploads";
    await ensureTable(dynamo.endpoint, tableName);
    const s3 = await startS3({ directory: resolve(dataDir, "s3"), bucket: bucketName });
    stops.unshift(s3.stop);
    const idp = await devIdp(dataDir);
    applyLocalEnv({ dynamoEndpoint: dynamo.endpoint, s3Endpoint: s3.endpoint, idp, tableName, bucketName });
    const { wireLocalEvents, stopLocalEvents } = await import("./events");
    // Queued messages (deferred integration work, memory jobs, payment events) are kept beside the table's data, so
    // they are delivered after a restart as SQS would (core/queue/journal.ts).
    wireLocalEvents(s3, { queueDir: resolve(dataDir, "queues") });
    // Stopped before the table (stops run first to last; this one is put first): queued work waits on disk.
    stops.unshift(stopLocalEvents);
    // Approved pending actions execute from the table's stream and the sweeper, as in AWS (DESIGN.md 6.2).
    const { startLocalStreams } = await import("./streams");
    const pendingActions = await startLocalStreams({ endpoint: dynamo.endpoint, tableName });
    stops.unshift(pendingActions.stop);
    // Sources a crash left pending or unindexed are driven on from their durable record (core/pipeline/recovery.ts).
    const { startSourceRecovery } = await import("./recovery");
    stops.unshift(startSourceRecovery().stop);
    // Credit reservations of runs a crash killed are released once stale (core/billing/sweeper.ts), as in AWS.
    const { startCreditSweep } = await import("./recovery");
    stops.unshift(startCreditSweep().stop);
    // Copilot exchanges a crash left owed to memory are sent again once due (core/memory/owed.ts), as in AWS.
    const { startMemorySweep } = await import("./recovery");
    stops.unshift(startMemorySweep().stop);
    // Tasks a crash left pending or running are resumed from their record; research cycles run at 02:00 UTC and the entropy scan at 04:00 (core/task, core/cycle, core/entropy).
    stops.unshift((await (await import("./tasks-schedules")).startTaskSchedules()).stop);
    const server = await startGateway(port);
    // The OCR worker thread holds the process open; stop it with the rest.
    stops.push(async () => (await import("../core/extract")).shutdownEngines());
    stops.unshift(() => new Promise((r) => server.close(r)));
    const base = `http://127.0.0.1:${port}`;
    // Other local CLIs (npm run codes) find the running emulators here.
    await writeFile(resolve(dataDir, "runtime.json"), JSON.stringify({ dynamoEndpoint: dynamo.endpoint, s3Endpoint: s3.endpoint, tableName, bucketName, base, pid: process.pid }));
    stops.push(() => rm(resolve(dataDir, "runtime.json"), { force: true }));
    console.log(`Research-to-delivery is running at ${base}`);
    console.log(`  API docs:   ${base}/api/docs`);
    // -s: without it npm prints its own "> research-to-delivery@... token" lines into $(...) and TOKEN is not a token.
    // --data: the token must be signed with this runtime's key, which lives in its data directory.
    const dataFlag = dataDir === resolve(".data") ? "" : ` --data '${dataDir}'`;
    console.log(`  Get a token: TOKEN=$(npm run -s token -- --email you@example.com${dataFlag})`);
    console.log(`  Then:        curl -H "Authorization: Bearer $TOKEN" ${base}/api/auth/me`);
    console.log(`  Data kept in ${dataDir}. Ctrl-C to stop.`);
  } catch (err) {
    for (const stop of stops) await stop().catch(() => undefined);
    throw err;
  }
  let stopping = false;
  const shutdown = async () => {
    if (stopping) return;
    stopping = true;
    console.log("\nStopping...");
    // One line per part that could not stop cleanly: the data is journaled, so the next start picks up from it. (Ctrl-C
    // signals the whole process group, so tsx's esbuild service may be gone before a part's lazy import at stop.)
    for (const stop of stops) await stop().catch((e: unknown) => console.error(`A part did not stop cleanly: ${e instanceof Error ? e.message : String(e)}`));
    process.exit(0);
  };
  process.on("SIGINT", shutdown);
  process.on("SIGTERM", shutdown);
}

/** The gateway's port from PORT or --port. @throws PrerequisiteError unless a whole number from 1 to 65535. */
function portOf(text: string): number {
  const port = Number(text);
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new PrerequisiteError(`PORT must be a whole number from 1 to 65535, not '${text}'.`);
  return port;
}

/** @throws PrerequisiteError when something already listens on the gateway's port. */
async function portFree(port: number): Promise<void> {
  await new Promise<void>((ok, fail) => {
    const probe = createServer();
    probe.once("error", (err: NodeJS.ErrnoException) =>
      fail(err.code === "EADDRINUSE" ? new PrerequisiteError(`Port ${port} is already in use: set PORT to another one (PORT=${port + 1} npm start).`) : err),
    );
    probe.listen(port, "127.0.0.1", () => probe.close(() => ok()));
  });
}

main().catch((err: unknown) => {
  if (err instanceof PrerequisiteError || err instanceof DataDirInUseError || (err as Error).name === "SettingError") console.error((err as Error).message);
  // node:util parseArgs: an unknown or malformed option is the user's typo, not a crash.
  else if (String((err as { code?: string }).code).startsWith("ERR_PARSE_ARGS")) console.error(`${(err as Error).message}. Options: --port N, --data DIR.`);
  else if ((err as { code?: string }).code === "EADDRINUSE") console.error("The port was taken while the service started: set PORT to another one and try again.");
  else console.error(err);
  process.exit(1);
});
