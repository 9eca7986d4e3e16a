import { inject } from "vitest";
import type { JWK } from "jose";
import { fromPrivateJwk } from "../../local/idp";
import { applyLocalEnv } from "../../local/env";

// Every test file talks to the run's emulators through the same settings the embedded runtime uses.
const idp = await fromPrivateJwk(JSON.parse(inject("idpPrivateJwk")) as JWK);
applyLocalEnv({
  dynamoEndpoint: inject("dynamoEndpoint"),
  s3Endpoint: inject("s3Endpoint"),
  idp,
  tableName: inject("tableName"),
  bucketName: inject("bucketName"),
});
process.env.ACCESS_GATING = "false";
process.env.VALIDATE_RESPONSES = "1";
process.env.LOG_LEVEL = "SILENT";
process.env.POWERTOOLS_LOG_LEVEL = "SILENT";
(globalThis as { __testIdp?: typeof idp }).__testIdp = idp;
