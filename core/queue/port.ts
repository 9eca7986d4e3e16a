/**
 * The `Queue` port's types, apart from its operations (./index.ts, which re-exports them): ./index.ts loads the SQS
 * transport (./sqs.ts), so the transport takes the types from here rather than importing ./index.ts back, and no
 * circle forms between the files (DESIGN.md 4, convention 11).
 */

/** One message. */
export interface QueueMessage {
  /** The payload (SQS: at most 256 KB). */
  body: string;
  /** Messages of one group are delivered in order, one batch at a time (SQS FIFO MessageGroupId). */
  groupId: string;
  /** A second message with the same id within 5 minutes is dropped (SQS FIFO MessageDeduplicationId). */
  deduplicationId: string;
  /**
   * Seconds before the message may be received (0 to 900; SQS DelaySeconds). Only standard queues take a per-message
   * delay: the FIFO queues never set it. Work a provider rate-limits waits out the provider's retry-after this way.
   */
  delaySeconds?: number;
}

export interface Queue {
  /** Enqueue one message. @throws whatever the transport throws (the caller answers 5xx and its sender retries). */
  send(message: QueueMessage): Promise<void>;
}
