import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import type Stripe from "stripe";
import { Logger } from "@aws-lambda-powertools/logger";
import { applyPaymentEvent } from "../../core/billing/sync";
import { consumeInOrder } from "../../core/queue";

const logger = new Logger({ serviceName: "payments-consumer" });

/**
 * The payments consumer (DESIGN.md 6.3): applies verified Stripe events from the payments queue (SQS FIFO grouped by
 * customer in AWS, the in-process queue locally) in order, with a partial batch response; a failed event and those
 * after it are retried, then dead-lettered.
 */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  return consumeInOrder(event, (body) => applyPaymentEvent(JSON.parse(body) as Stripe.Event), (err, messageId) =>
    logger.error("Payment event failed; the queue retries it", { messageId, error: err as Error }),
  );
}
