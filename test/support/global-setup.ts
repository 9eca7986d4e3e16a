import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { exportJWK, generateKeyPair } from "jose";
import type { TestProject } from "vitest/node";
import { ensureTable, startDynamoLocal } from "../../local/dynamodb";
import { startS3 } from "../../local/s3";

export const TABLE = "r2d-test";
export const BUCKET = "r2d-test-uploads";

declare module "vitest" {
  export interface ProvidedContext {
    dynamoEndpoint: string;
    s3Endpoint: string;
    idpPrivateJwk: string;
    tableName: string;
    bucketName: string;
  }
}

/** One in-memory DynamoDB Local and one object store for the whole run; tests isolate by fresh ids. */
export default async function setup(project: TestProject) {
  const dir = await mkdtemp(join(tmpdir(), "r2d-s3-"));
  const [dynamo, s3, keys] = await Promise.all([
    startDynamoLocal(),
    startS3({ directory: dir, bucket: BUCKET }),
    generateKeyPair("RS256", { extractable: true, modulusLength: 2048 }),
  ]);
  await ensureTable(dynamo.endpoint, TABLE);
  project.provide("dynamoEndpoint", dynamo.endpoint);
  project.provide("s3Endpoint", s3.endpoint);
  project.provide("idpPrivateJwk", JSON.stringify(await exportJWK(keys.privateKey)));
  project.provide("tableName", TABLE);
  project.provide("bucketName", BUCKET);
  return async () => {
    await Promise.all([dynamo.stop(), s3.stop()]);
    await rm(dir, { recursive: true, force: true });
  };
}
