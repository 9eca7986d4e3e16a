import { Config } from "../config";
import { s3Client } from "./client";

/** How long a presigned upload may be used, seconds (the default of `presignedPost`). */
export const PRESIGN_VALID_SECONDS = 900;

/**
 * A presigned S3 POST for one object (DESIGN.md section 5: uploads above the gateway's payload limit).
 * The policy pins the key, the content type and a content-length range, so S3 itself refuses anything else.
 */
export async function presignedPost(key: string, contentType: string, maxBytes: number, expiresSeconds = PRESIGN_VALID_SECONDS) {
  // Imported on first use, like the S3 client (./client.ts): a cold start of a group that never presigns skips it.
  const { createPresignedPost } = await import("@aws-sdk/s3-presigned-post");
  const post = await createPresignedPost(await s3Client(), {
    Bucket: Config.bucketName(),
    Key: key,
    Conditions: [["content-length-range", 1, maxBytes], ["eq", "$Content-Type", contentType]],
    Fields: { "Content-Type": contentType },
    Expires: expiresSeconds,
  });
  return { url: post.url, fields: post.fields, expires_at: new Date(Date.now() + expiresSeconds * 1000).toISOString() };
}
