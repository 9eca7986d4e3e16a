import { createHash } from "node:crypto";
import { Config } from "../config";
import { s3 } from "./client";

/** Whether an S3 error means the object (or key) does not exist. */
const isMissing = (err: unknown): boolean => ["NoSuchKey", "NotFound"].includes((err as { name?: string }).name ?? "");

/** Object-key prefix of everything stored for a workspace. */
export const workspacePrefix = (workspaceId: string) => `workspaces/${workspaceId}/`;

/**
 * Delete every object under `prefix` in the uploads bucket (1,000 keys per request), each listed page before the
 * next is read, so a run stopped part-way keeps what it deleted.
 * @param opts.deadline ms since the epoch after which no new page is read (a budgeted caller: a workspace deletion)
 * @returns how many objects were deleted, or -1 when the deadline came before the prefix was empty
 * @throws Error when S3 reports per-key errors, so the caller does not go on as if the files were gone.
 */
export async function deletePrefix(prefix: string, opts: { deadline?: number } = {}): Promise<number> {
  const { client, sdk } = await s3();
  let deleted = 0;
  let token: string | undefined;
  do {
    if (opts.deadline !== undefined && Date.now() >= opts.deadline) return -1;
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
 * The first `bytes` bytes of an object, its total size and its ETag, in one ranged GET (the size comes from
 * Content-Range; the ETag S3 sends with a range is the whole object's, so the three describe the same version).
 * `etag` is absent for an empty object (its size comes from a HEAD after S3's 416), which no upload check accepts.
 * @returns null when the object does not exist
 */
export async function getObjectHead(key: string, bytes: number): Promise<{ head: Buffer; size: number; etag?: string } | null> {
  const { client, sdk } = await s3();
  try {
    const out = await client.send(new sdk.GetObjectCommand({ Bucket: Config.bucketName(), Key: key, Range: `bytes=0-${bytes - 1}` }));
    const head = Buffer.from(await out.Body!.transformToByteArray());
    // "bytes 0-4099/123456"; a store that ignores Range sends the whole object instead.
    const total = /\/(\d+)$/.exec(out.ContentRange ?? "");
    return { head: head.subarray(0, bytes), size: total ? Number(total[1]) : head.length, ...(out.ETag ? { etag: out.ETag } : {}) };
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

/** An ETag without its quotes, for comparing ETags from different responses. */
const bareEtag = (etag: string): string => etag.replace(/^W\//, "").replace(/"/g, "");

/**
 * Copy `from` to `to` in the uploads bucket, server side, only if `from` is still the version whose ETag is `etag`:
 * the way to pin the bytes a check read (functions/steps/validate.ts) under a key no presigned POST can write, since
 * a presigned POST may be used again and again until it expires and would otherwise replace checked bytes with
 * unchecked ones.
 *
 * Three guards, so the copy is exactly the checked version on every store:
 * - S3 evaluates `CopySourceIfMatch` atomically with the copy (412 PreconditionFailed when the source changed);
 * - the copy's ETag is read back with a HEAD and must equal `etag`: the local object store (s3rver 3.7) ignores
 *   `x-amz-copy-source-if-match`. For an object stored by one PUT, POST or copy, plain or SSE-S3 encrypted (the
 *   uploads bucket, stacks/Storage.ts), the ETag is the MD5 of the bytes, so equal ETags mean equal bytes; a
 *   multipart ETag ("<md5>-<parts>") is not, and a copy's would differ, so for those the atomic precondition alone
 *   is relied on;
 * - on a custom endpoint (the local store, Config.s3Endpoint) the copy's bytes are hashed too: s3rver copies the
 *   file and its recorded MD5 separately, without a lock, so a write landing during the copy could leave the
 *   recorded ETag and the bytes disagreeing.
 *
 * @param from key of the object that was checked
 * @param to key of the copy (overwritten when it exists)
 * @param etag the ETag the check read with the bytes (quoted or not)
 * @returns the copy's ETag (quotes removed), or null when `from` is gone or no longer that version; then no copy
 *   is left at `to` (a copy made before the mismatch was seen is deleted).
 * @throws the S3 error for anything else (throttling, access denied), with `to` possibly holding a copy of the
 *   checked version or nothing
 */
export async function copyObjectIfMatch(from: string, to: string, etag: string): Promise<string | null> {
  const { client, sdk } = await s3();
  const bucket = Config.bucketName();
  const expected = bareEtag(etag);
  try {
    await client.send(
      new sdk.CopyObjectCommand({
        Bucket: bucket,
        Key: to,
        // URL-encoded per segment: s3rver decodes the header with decodeURI, which leaves an encoded "/" as it is.
        CopySource: `${bucket}/${from.split("/").map(encodeURIComponent).join("/")}`,
        CopySourceIfMatch: `"${expected}"`,
        MetadataDirective: "COPY",
      }),
    );
  } catch (err) {
    const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
    if (isMissing(err) || (err as { name?: string }).name === "PreconditionFailed" || status === 412) return null;
    throw err;
  }
  const multipart = expected.includes("-");
  let same = true;
  if (!multipart) {
    const head = await client.send(new sdk.HeadObjectCommand({ Bucket: bucket, Key: to }));
    same = bareEtag(head.ETag ?? "") === expected;
    if (same && Config.s3Endpoint()) {
      const copy = await getObject(to);
      same = copy !== null && createHash("md5").update(copy).digest("hex") === expected;
    }
  }
  if (!same) {
    await deleteObject(to);
    return null;
  }
  return expected;
}
