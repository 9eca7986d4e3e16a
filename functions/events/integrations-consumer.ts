import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { Logger } from "@aws-lambda-powertools/logger";
import type { IntegrationJob } from "../../core/integration/jobs";
import * as Codehost from "../../core/integration/codehost";
import * as Planner from "../../core/integration/planner";
import * as Tickets from "../../core/ticket";

const logger = new Logger({ serviceName: "integrations-consumer" });

/** Run one deferred job; a job rate-limited again re-defers its remainder itself (core), so it does not fail here. */
async function run(job: IntegrationJob): Promise<void> {
  switch (job.type) {
    case "codehost.sync":
      await Codehost.sync(job.user_id, job.workspace_id, job.started_at);
      return;
    case "planner.sync":
      await Planner.sync(job.user_id, job.workspace_id, job.started_at);
      return;
    case "tickets.push":
      await Tickets.push(job.user_id, { workspace_id: job.workspace_id, document_id: job.document_id, platform: job.platform, ticket_ids: job.ticket_ids }, job.destination);
      return;
    case "tickets.sync":
      await Tickets.sync(job.user_id, { workspace_id: job.workspace_id, document_id: job.document_id }, job.started_at);
      return;
    default:
      throw new Error(`Unknown integration job ${(job as { type: string }).type}`);
  }
}

/**
 * The integrations consumer (DESIGN.md 6.4): runs push and sync work that a provider's rate limit deferred, from the
 * integrations queue (SQS standard in AWS, delivered after the provider's retry-after; the in-process queue locally).
 * Each record stands alone (partial batch response): a failed one is received again, then dead-lettered.
 */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  const failures: { itemIdentifier: string }[] = [];
  for (const record of event.Records) {
    try {
      await run(JSON.parse(record.body) as IntegrationJob);
    } catch (err) {
      logger.error("Integration job failed; the queue retries it", { messageId: record.messageId, error: err as Error });
      failures.push({ itemIdentifier: record.messageId });
    }
  }
  return { batchItemFailures: failures };
}
