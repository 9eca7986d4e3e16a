import type { S3Event } from "aws-lambda";
import * as Research from "../../core/research";
import { startExtraction } from "../../core/pipeline";
import { deleteObject } from "../../core/storage";

/**
 * S3 object-created consumer (DESIGN.md section 2): an original research file arrived, so its source's extraction
 * starts. Derived files (extraction.json, mentions.json) and repeated events are ignored; an object whose source
 * no longer exists (deleted while uploading) is removed so nothing is left behind.
 */
export async function handler(event: S3Event): Promise<void> {
  for (const record of event.Records) {
    if (!record.eventName.startsWith("ObjectCreated")) continue;
    const key = decodeURIComponent(record.s3.object.key.replace(/\+/g, " "));
    const ids = Research.parseOriginalKey(key);
    if (!ids) continue;
    const item = await Research.getItem(ids.workspace_id, ids.source_id);
    if (!item) {
      await deleteObject(key);
      continue;
    }
    if (item.processing_status !== "pending" || item.file_key !== key) continue;
    await startExtraction({ ...ids, bucket: record.s3.bucket.name, key, attempt: item.processing_attempt });
  }
}
