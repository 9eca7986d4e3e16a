import type { RunningS3 } from "./s3";

/**
 * Forward the local object store's S3 events to the same consumer Lambda AWS would invoke
 * (functions/events/s3-upload.ts). Until extraction exists, object events have no consumer.
 */
export function wireLocalEvents(s3: RunningS3): void {
  s3.onEvent(() => undefined);
}
