import { SendMessageCommand, SQSClient } from "@aws-sdk/client-sqs";
import { Config } from "../config";
import type { Queue, QueueMessage } from "./port";

let client: SQSClient | undefined;

/** An SQS FIFO queue (AWS): group and deduplication ids go to MessageGroupId and MessageDeduplicationId. */
export class SqsQueue implements Queue {
  constructor(private readonly queueUrl: string) {}

  async send(message: QueueMessage): Promise<void> {
    client ??= new SQSClient({ region: Config.region() });
    await client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: message.body,
        // Group and deduplication ids exist on FIFO queues only; a per-message delay on standard queues only.
        ...(this.queueUrl.endsWith(".fifo")
          ? { MessageGroupId: message.groupId, MessageDeduplicationId: message.deduplicationId }
          : message.delaySeconds ? { DelaySeconds: Math.min(900, Math.max(0, Math.ceil(message.delaySeconds))) } : {}),
      }),
    );
  }
}
