import { exportJWK, generateKeyPair } from "jose";
import type { TestProject } from "vitest/node";
import { ensureTable, startDynamoLocal } from "../../local/dynamodb";

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
    startDynamoLocal(),
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
