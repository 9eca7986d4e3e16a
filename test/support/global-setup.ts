import { exportJWK, generateKeyPair } from "jose";
import type { TestProject } from "vitest/node";
import { ensureTable, PrerequisiteError, startDynamoLocal, type RunningDynamo } from "../../local/dynamodb";

export const TABLE = "r2d-test";
export const BUCKET = "r2d-test-uploads";

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    idpPrivateJwk: string;
    tableName: string;
    bucketName: string;
  }
}

/**
 * One in-memory DynamoDB Local for the whole run; tests isolate by fresh ids. Each test file starts its own object
 * store (test/support/setup.ts), because s3rver's events reach only the process that runs it.
 */
export default async function setup(project: TestProject) {
  const [dynamo, keys] = await Promise.all([
    startDynamoLocal().catch(exitOnPrerequisite),
    generateKeyPair("RS256", { extractable: true, modulusLength: 2048 }),
  ]);
  await ensureTable(dynamo.endpoint, TABLE);
  project.provide("dynamoEndpoint", dynamo.endpoint);
  project.provide("idpPrivateJwk", JSON.stringify(await exportJWK(keys.privateKey)));
  project.provide("tableName", TABLE);
  project.provide("bucketName", BUCKET);
  return async () => {
    await dynamo.stop();
  };
}

/**
 * A missing prerequisite (Java) ends the run with the sentence `npm start` prints and nothing else: thrown from here,
 * vitest would report "No test files found" and a stack trace. Anything else is a bug and keeps its stack.
 */
function exitOnPrerequisite(err: unknown): RunningDynamo {
  if (!(err instanceof PrerequisiteError)) throw err;
  console.error(err.message);
  process.exit(1);
}
