import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { Logger } from "@aws-lambda-powertools/logger";
import type { ExchangeJob } from "../../core/memory/learn";
import { learnOwedExchange } from "../../core/memory/owed";
import { consumeInOrder } from "../../core/queue";

const logger = new Logger({ serviceName: "memory-consumer" });

/**
 * The memory consumer (DESIGN.md 6.6): learns from each copilot exchange off the response path, from the memory queue
 * (SQS FIFO grouped by user and workspace in AWS, the in-process queue locally), in order within a group, with a
 * partial batch response: a failed exchange and those after it in its group are retried, then dead-lettered. An
 * exchange is learned once: while its owed record is there, which learning deletes (core/memory/owed.ts), so a
 * redelivery or the sweeper's second send does nothing.
 */
export async function handler(event: SQSEvent): Promise<SQSBatchResponse> {
  return consumeInOrder(event, (body) => learnOwedExchange(JSON.parse(body) as ExchangeJob), (err, messageId) =>
    logger.error("Memory extraction failed; the queue retries it", { messageId, error: err as Error }),
  );
}
