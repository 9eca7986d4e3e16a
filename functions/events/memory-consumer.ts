import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { Logger } from "@aws-lambda-powertools/logger";
import { learnFromExchange, type ExchangeJob } from "../../core/memory/learn";
import { consumeInOrder } from "../../core/queue";

const logger = new Logger({ serviceName: "memory-consumer" });

/**
 * The memory consumer (DESIGN.md 6.6): learns from each copilot exchange off the response path, from the memory queue
 * (SQS FIFO grouped by user and workspace in AWS, the in-process queue locally), in order within a group, with a
 * partial batch response: a failed exchange and those after it in its group are retried, then dead-lettered.
 */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  return consumeInOrder(event, (body) => learnFromExchange(JSON.parse(body) as ExchangeJob), (err, messageId) =>
    logger.error("Memory extraction failed; the queue retries it", { messageId, error: err as Error }),
  );
}
