import { afterAll, inject } from "vitest";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { JWK } from "jose";
import { fromPrivateJwk } from "../../local/idp";
import { applyLocalEnv } from "../../local/env";
import { startS3 } from "../../local/s3";
import { wireLocalEvents } from "../../local/events";

// Every test file talks to the run's DynamoDB Local and its own object store through the same settings and event
// wiring the embedded runtime uses.
process.env.ACCESS_GATING = "false";
process.env.VALIDATE_RESPONSES = "1";
process.env.LOG_LEVEL = "SILENT";
process.env.POWERTOOLS_LOG_LEVEL = "SILENT";
process.env.LOCAL_RETRY_INTERVAL_MS = "5";
// Embedding mentions at ingestion costs CPU the other tests need; synthesis tests turn it back on.
process.env.MENTION_INDEXING = process.env.MENTION_INDEXING ?? "off";

const idp = await fromPrivateJwk(JSON.parse(inject("idpPrivateJwk")) as JWK);
const dir = await mkdtemp(join(tmpdir(), "r2d-s3-"));
// Files the service keeps under its data folder (the mail outbox, the waitlist CSV, the local token key) go to this
// file's temp dir, never into the repository's .data/.
process.env.DATA_DIR = dir;
const s3 = await startS3({ directory: dir, bucket: inject("bucketName") });
applyLocalEnv({
  dynamoEndpoint: inject("dynamoEndpoint"),
  s3Endpoint: s3.endpoint,
  idp,
  tableName: inject("tableName"),
  bucketName: inject("bucketName"),
});
wireLocalEvents(s3);
(globalThis as { __testIdp?: typeof idp }).__testIdp = idp;

afterAll(async () => {
  await s3.stop();
  await rm(dir, { recursive: true, force: true });
});
