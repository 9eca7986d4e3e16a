import { DeleteObjectsCommand, ListObjectsV2Command } from "@aws-sdk/client-s3";
import { Config } from "../config";
import { s3Client } from "../db/client";

/** Object-key prefix of everything stored for a workspace. */
export const workspacePrefix = (workspaceId: string) => `workspaces/${workspaceId}/`;

/**
 * Delete every object under `prefix` in the uploads bucket (1,000 keys per request).
 * @throws Error when S3 reports per-key errors, so the caller does not go on as if the files were gone.
 */
export async function deletePrefix(prefix: string): Promise<number> {
  let deleted = 0;
  let token: string | undefined;
  do {
    const page = await s3Client().send(
      new ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: prefix, ContinuationToken: token }),
    );
    const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
    if (keys.length > 0) {
      const out = await s3Client().send(
        new DeleteObjectsCommand({ Bucket: Config.bucketName(), Delete: { Objects: keys, Quiet: true } }),
      );
      if (out.Errors && out.Errors.length > 0) {
        throw new Error(`S3 refused to delete ${out.Errors.length} objects under ${prefix}: ${out.Errors[0]?.Message}`);
      }
      deleted += keys.length;
    }
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return deleted;
}
