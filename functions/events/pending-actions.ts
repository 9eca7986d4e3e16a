import { Logger } from "@aws-lambda-powertools/logger";
import type { DynamoDBBatchResponse, DynamoDBStreamEvent } from "aws-lambda";
import { Config } from "../../core/config";
import { executeAction } from "../../core/pending-action/executor";
import { APPROVED_STREAM_FILTER } from "../../core/pending-action/pending-action.entity";

const logger = new Logger({ serviceName: "research-to-delivery", logLevel: Config.logLevel() as "INFO" });

/** The stream filter of this consumer's event source mapping (the embedded reader applies the same one). */
export const APPROVED_FILTER_PATTERN = APPROVED_STREAM_FILTER;

/** The (workspace id, pending action id) of a record's new image, or null when it is not an approved pending action. */
function approvedRow(record: DynamoDBStreamEvent["Records"][number]): { workspaceId: string; id: string } | null {
  const image = record.dynamodb?.NewImage;
  if (image?.__edb_e__?.S !== "pending_action" || image.status?.S !== "approved") return null;
  const workspaceId = image.workspace_id?.S;
  const id = image.id?.S;
  return workspaceId && id ? { workspaceId, id } : null;
}

/**
 * DynamoDB Streams consumer (DESIGN.md 6.2): every record of an approved pending action runs `executeAction`, which
 * is exactly-once by itself (a replayed or duplicate record finds the row claimed or finished and does nothing; the
 * record of a deferral finds the row not yet due and leaves it to the sweeper).
 * Records are filtered again here, so an unfiltered feed is safe. A record whose execution hit an infrastructure
 * error is reported as a batch item failure (the mapping has ReportBatchItemFailures) and retried; the sweeper
 * re-drives anything the retries did not finish.
 */
export async function handler(event: DynamoDBStreamEvent): Promise<DynamoDBBatchResponse> {
  const failures: { itemIdentifier: string }[] = [];
  await Promise.all(
    event.Records.map(async (record) => {
      const row = approvedRow(record);
      if (!row) return;
      try {
        const done = await executeAction(row.workspaceId, row.id);
        if (done.cause !== undefined) logger.error("pending action failed with an internal error", { pendingActionId: row.id, error: done.cause as Error });
      } catch (err) {
        logger.error("pending action execution did not complete", { pendingActionId: row.id, error: err as Error });
        const sequence = record.dynamodb?.SequenceNumber;
        if (sequence) failures.push({ itemIdentifier: sequence });
      }
    }),
  );
  return { batchItemFailures: failures };
}
