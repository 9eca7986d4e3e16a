import type { RunningS3 } from "./s3";
import { setWorkflowRunner } from "../core/pipeline";
import { localWorkflowRunner } from "./pipeline";

/**
 * Wire the embedded runtime's event sources: the local object store's S3 events go to the same consumer Lambda
 * AWS invokes (functions/events/s3-upload.ts), and workflows run on the local Step Functions runner.
 */
export function wireLocalEvents(s3: RunningS3): void {
  setWorkflowRunner(localWorkflowRunner());
  s3.onEvent((event) => {
    import("../functions/events/s3-upload")
      .then((m) => m.handler(event))
      .catch((err: unknown) => console.error("S3 event consumer failed:", err));
  });
}
