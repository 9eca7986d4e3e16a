/**
 * Strongly consistent BatchGetItem of raw table keys, with DynamoDB's unprocessed keys asked again (DESIGN.md 6.1
 * "reads in one round trip": core/workspace's member-checked reads, insight search's result page).
 */
import { BatchGetCommand } from "@aws-sdk/lib-dynamodb";
import pRetry from "p-retry";
import { AppError } from "../error";
import { dynamoClient } from "./client";

/** BatchGetItem answers at most this many times with unprocessed keys (throttling) before the read gives up. */
const UNPROCESSED_TRIES = 5;

/** BatchGetItem left keys unprocessed (throttling): asked again after a backoff. */
class Unprocessed extends Error {}

/**
 * Read `keys` (at most 100, one table) strongly consistent in one BatchGetItem; keys DynamoDB leaves unprocessed are
 * asked again after a backoff (10, 20, 40, 80 ms, p-retry).
 * @param projection optional `ProjectionExpression` with its `ExpressionAttributeNames` (the key attributes must be
 *   in it for the caller to match items to keys).
 * @returns the items found, in no particular order (a key without an item is simply absent).
 * @throws AppError SERVICE_UNAVAILABLE (503, retryable) when keys stay unprocessed after 5 answers; whatever the
 *   DynamoDB client throws.
 */
export async function consistentBatchGet(
  table: string,
  keys: Record<string, unknown>[],
  projection?: { ProjectionExpression: string; ExpressionAttributeNames: Record<string, string> },
): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  let asking = keys;
  try {
    await pRetry(
      async () => {
        const out = await dynamoClient().send(new BatchGetCommand({ RequestItems: { [table]: { Keys: asking, ConsistentRead: true, ...projection } } }));
        found.push(...(out.Responses?.[table] ?? []));
        asking = (out.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined) ?? [];
        if (asking.length > 0) throw new Unprocessed();
      },
      { retries: UNPROCESSED_TRIES - 1, factor: 2, minTimeout: 10, maxTimeout: 80, shouldRetry: ({ error }) => error instanceof Unprocessed },
    );
  } catch (err) {
    if (err instanceof Unprocessed) throw new AppError("SERVICE_UNAVAILABLE", "The table is busy; try again", { retryable: true });
    throw err;
  }
  return found;
}
