import { Config } from "../config";
import { s3 } from "./client";

/** Whether an S3 error means the object (or key) does not exist. */
const isMissing = (err: unknown): boolean => ["NoSuchKey", "NotFound"].includes((err as { name?: string }).name ?? "");

/** Object-key prefix of everything stored for a workspace. */
export const workspacePrefix = (workspaceId: string) => `workspaces/${workspaceId}/`;

/**
 * Delete every object under `prefix` in the uploads bucket (1,000 keys per request).
 * @throws Error when S3 reports per-key errors, so the caller does not go on as if the files were gone.
 */
export async function deletePrefix(prefix: string): Promise<number> {
  const { client, sdk } = await s3();
  let deleted = 0;
  let token: string | undefined;
  do {
    const page = await client.send(new sdk.ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: prefix, ContinuationToken: token }));
    const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
    if (keys.length > 0) {
      const out = await client.send(new sdk.DeleteObjectsCommand({ Bucket: Config.bucketName(), Delete: { Objects: keys, Quiet: true } }));
      if (out.Errors && out.Errors.length > 0) {
        throw new Error(`S3 refused to delete ${out.Errors.length} objects under ${prefix}: ${out.Errors[0]?.Message}`);
      }
      deleted += keys.length;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return deleted;
}

/** Store an object in the uploads bucket. */
export async function putObject(key: string, body: Buffer | string, contentType: string, metadata: Record<string, string> = {}): Promise<void> {
  const { client, sdk } = await s3();
  await client.send(new sdk.PutObjectCommand({ Bucket: Config.bucketName(), Key: key, Body: body, ContentType: contentType, Metadata: metadata }));
}

/** Read a whole object. @returns null when the object does not exist. */
export async function getObject(key: string): Promise<Buffer | null> {
  const { client, sdk } = await s3();
  try {
    const out = await client.send(new sdk.GetObjectCommand({ Bucket: Config.bucketName(), Key: key }));
    return Buffer.from(await out.Body!.transformToByteArray());
  } catch (err) {
    if (isMissing(err)) return null;
    throw err;
  }
}

/**
 * The first `bytes` bytes of an object and its total size, in one ranged GET (the size comes from Content-Range).
 * @returns null when the object does not exist
 */
export async function getObjectHead(key: string, bytes: number): Promise<{ head: Buffer; size: number } | null> {
  const { client, sdk } = await s3();
  try {
    const out = await client.send(new sdk.GetObjectCommand({ Bucket: Config.bucketName(), Key: key, Range: `bytes=0-${bytes - 1}` }));
    const head = Buffer.from(await out.Body!.transformToByteArray());
    // "bytes 0-4099/123456"; a store that ignores Range sends the whole object instead.
    const total = /\/(\d+)$/.exec(out.ContentRange ?? "");
    return { head: head.subarray(0, bytes), size: total ? Number(total[1]) : head.length };
  } catch (err) {
    if (isMissing(err)) return null;
    // S3 answers a range on an empty object with 416 InvalidRange.
    if ((err as { name?: string }).name === "InvalidRange" || (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 416) {
      const size = await objectSize(key);
      return size === null ? null : { head: Buffer.alloc(0), size };
    }
    throw err;
  }
}

/** Size in bytes of an object, or null when it does not exist. */
export async function objectSize(key: string): Promise<number | null> {
  const { client, sdk } = await s3();
  try {
    const out = await client.send(new sdk.HeadObjectCommand({ Bucket: Config.bucketName(), Key: key }));
    return out.ContentLength ?? 0;
  } catch (err) {
    if (isMissing(err)) return null;
    throw err;
  }
}

export async function deleteObject(key: string): Promise<void> {
  const { client, sdk } = await s3();
  await client.send(new sdk.DeleteObjectCommand({ Bucket: Config.bucketName(), Key: key }));
}
