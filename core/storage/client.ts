import { S3Client } from "@aws-sdk/client-s3";
import { Config } from "../config";

let s3: S3Client | undefined;

/**
 * The S3 client; points at the local object store when S3_ENDPOINT is set.
 * Checksums only when required: otherwise streamed bodies are stored with aws-chunked framing (DESIGN.md section 2).
 */
export function s3Client(): S3Client {
  if (!s3) {
    const endpoint = Config.s3Endpoint();
    s3 = new S3Client({
      region: Config.region(),
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED",
      ...(endpoint
        ? { endpoint, forcePathStyle: true, credentials: { accessKeyId: "S3RVER", secretAccessKey: "S3RVER" } }
        : {}),
    });
  }
  return s3;
}
