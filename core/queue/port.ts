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
}

export interface Queue {
  /** Enqueue one message. @throws whatever the transport throws (the caller answers 5xx and its sender retries). */
  send(message: QueueMessage): Promise<void>;
}
