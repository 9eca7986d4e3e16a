/**
 * The `Queue` port (DESIGN.md section 2, "queues"): messages for a consumer Lambda, FIFO per message group. In AWS an
 * SQS FIFO queue (./sqs.ts) whose event source mapping invokes the consumer; on the embedded runtime an in-process
 * queue (./local.ts) registered by the local wiring (local/events.ts), delivering SQS-shaped batches to the same
 * consumer with retries and a dead-letter list. Core code only sends.
 */
import type { SQSBatchResponse, SQSEvent } from "aws-lambda";
import { Config } from "../config";
import { AppError } from "../error";
import type { Queue } from "./port";

export type { Queue, QueueMessage } from "./port";

/**
 * Receives of a payment event before it goes to the dead-letter queue: the SQS redrive policy (stacks/Api.ts) and the
 * local queue (local/events.ts) use the same figure.
 */
export const PAYMENTS_MAX_RECEIVE_COUNT = 5;

/**
 * Receives of an integration job before it is dead-lettered: a job that is only rate-limited re-sends itself with the
 * provider's delay instead of failing, so failures here are real errors.
 */
export const INTEGRATIONS_MAX_RECEIVE_COUNT = 3;

/**
 * The service's queues. `payments`: verified Stripe events for the payments consumer (DESIGN.md 6.3).
 * `integrations`: push and sync work a provider rate-limited (DESIGN.md 6.4), a standard queue (per-message delay).
 */
export type QueueName = "payments" | "integrations" | "memory";

const registered = new Map<QueueName, Queue>();
const sqs = new Map<string, Queue>();

/** Put a queue in place of the SQS one (the embedded runtime's in-process queue); `undefined` removes it. */
export function setQueue(name: QueueName, queue: Queue | undefined): void {
  if (queue) registered.set(name, queue);
  else registered.delete(name);
}

/** The queue registered under `name` by `setQueue`, if any (tests wait on the local one). */
export const registeredQueue = (name: QueueName): Queue | undefined => registered.get(name);

const URL_SETTING: Record<QueueName, { setting: string; url: () => string | undefined }> = {
  payments: { setting: "PAYMENTS_QUEUE_URL", url: () => Config.paymentsQueueUrl() },
  integrations: { setting: "INTEGRATIONS_QUEUE_URL", url: () => Config.integrationsQueueUrl() },
  memory: { setting: "MEMORY_QUEUE_URL", url: () => Config.memoryQueueUrl() },
};

/**
 * The queue to send to: the registered one, else the SQS queue at its URL setting (SQS client loaded on first use).
 * @throws AppError SERVICE_UNAVAILABLE (503) naming the setting when neither exists.
 */
export async function queue(name: QueueName): Promise<Queue> {
  const local = registered.get(name);
  if (local) return local;
  const { setting, url } = URL_SETTING[name];
  const queueUrl = url();
  if (!queueUrl) throw new AppError("SERVICE_UNAVAILABLE", `The ${name} queue is not configured: set ${setting}`, { setting });
  let q = sqs.get(queueUrl);
  if (!q) {
    const { SqsQueue } = await import("./sqs");
    q = new SqsQueue(queueUrl);
    sqs.set(queueUrl, q);
  }
  return q;
}

/**
 * Consume an SQS FIFO batch in order (Lambda partial batch response): each record is handed to `apply` in turn; at
 * the first failure that record and every later one are reported failed, because a later message of the same group
 * must not be applied before an earlier one (AWS: for FIFO queues, stop at the first failure). Failed records are
 * retried by the queue and, after its receive limit, moved to the dead-letter queue.
 * @param onError told of the failure (logging), before the failures are returned
 */
export async function consumeInOrder(
  event: SQSEvent,
  apply: (body: string) => Promise<unknown>,
  onError: (err: unknown, messageId: string) => void = () => undefined,
): Promise<SQSBatchResponse> {
  const records = event.Records;
  for (let i = 0; i < records.length; i++) {
    try {
      await apply(records[i]!.body);
    } catch (err) {
      onError(err, records[i]!.messageId);
      return { batchItemFailures: records.slice(i).map((r) => ({ itemIdentifier: r.messageId })) };
    }
  }
  return { batchItemFailures: [] };
}
