import type { S3Client } from "@aws-sdk/client-s3";
import { Config } from "../config";

/** The S3 SDK module (commands, errors, the client class). */
export type S3Sdk = typeof import("@aws-sdk/client-s3");

let loaded: Promise<{ client: S3Client; sdk: S3Sdk }> | undefined;

/**
 * The S3 SDK and this process's client, imported and built on first use: most requests of most groups never touch
 * the bucket, and the SDK is about 300 KB of code a cold start would otherwise load (issue #24 point 3). The client
 * points at the local object store when S3_ENDPOINT is set. Checksums only when required: otherwise streamed bodies
 * are stored with aws-chunked framing (DESIGN.md section 2).
 * @throws (the promise) when the SDK cannot be loaded; a failed load is tried again by the next caller
 */
export function s3(): Promise<{ client: S3Client; sdk: S3Sdk }> {
  loaded ??= import("@aws-sdk/client-s3").then((sdk) => {
    const endpoint = Config.s3Endpoint();
    const client = new sdk.S3Client({
      region: Config.region(),
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      ...(endpoint
        ? { endpoint, forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } }
        : {}),
    });
    return { client, sdk };
  });
  loaded.catch(() => (loaded = undefined));
  return loaded;
}

/** The S3 client alone (`s3()`). */
export const s3Client = async (): Promise<S3Client> => (await s3()).client;
