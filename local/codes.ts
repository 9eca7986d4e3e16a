import { parseArgs } from "node:util";
import { resolve } from "node:path";
import { existsSync, readFileSync } from "node:fs";
import { ensureTable, PrerequisiteError, startDynamoLocal } from "./dynamodb";

/**
 * `npm run codes -- [--count 5] [--trial-days 14]`: generate product access codes in the local database and
 * print them, one per line. Uses the running `npm start` database when there is one, else opens .data itself.
 */
async function main() {
  const { values } = parseArgs({ options: { count: { type: "string", default: "5" }, "trial-days": { type: "string" }, data: { type: "string" } } });
  const count = Number(values.count);
  if (!Number.isInteger(count) || count < 1 || count > 1000) {
    console.error("Usage: npm run codes -- --count N   (1 to 1000)");
    process.exit(2);
  }
  const dataDir = resolve(values.data ?? process.env.DATA_DIR ?? ".data");
  const runtimeFile = resolve(dataDir, "runtime.json");
  let stop: (() => Promise<void>) | undefined;
  let endpoint: string;
  let tableName = process.env.TABLE_NAME ?? "research-to-delivery";
  const runtime = existsSync(runtimeFile) ? (JSON.parse(readFileSync(runtimeFile, "utf8")) as { dynamoEndpoint: string; tableName: string }) : null;
  // A runtime.json left by a run that was killed names a DynamoDB Local that is gone: open the folder ourselves then.
  if (runtime && (await answers(runtime.dynamoEndpoint))) {
    endpoint = runtime.dynamoEndpoint;
    tableName = runtime.tableName;
  } else {
    const dynamo = await startDynamoLocal({ dbPath: resolve(dataDir, "dynamodb") });
    endpoint = dynamo.endpoint;
    stop = dynamo.stop;
    await ensureTable(endpoint, tableName);
  }
  Object.assign(process.env, { TABLE_NAME: tableName, DYNAMODB_ENDPOINT: endpoint, AWS_ACCESS_KEY_ID: "local", AWS_SECRET_ACCESS_KEY: "local" });
  try {
    const User = await import("../core/user");
    const metadata = values["trial-days"] ? { trial_days: Number(values["trial-days"]) } : {};
    for (const { code } of await User.generateAccessCodes(count, metadata)) console.log(code);
  } finally {
    await stop?.();
  }
}

/** Whether something answers HTTP at `url` (DynamoDB Local answers any request, if only with an error). */
async function answers(url: string): Promise<boolean> {
  try {
    await fetch(url, { signal: AbortSignal.timeout(2_000) });
    return true;
  } catch {
    return false;
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof PrerequisiteError ? err.message : err);
  process.exit(1);
});
