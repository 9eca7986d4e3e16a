/**
 * Strongly consistent reads of several items by key in ONE DynamoDB round trip (BatchGetItem), for the member-checked
 * reads of core/workspace (`readAsMember`, `requireResourceById`): the caller's membership and the item asked for
 * travel together (docs/decisions.md "Reads in one round trip"; issue #24 point 2).
 */
import { BatchGetCommand, GetCommand } from "@aws-sdk/lib-dynamodb";
import pRetry from "p-retry";
import { AppError } from "../error";
import { dynamoClient } from "../db/client";

/** What `consistentGet` needs of an ElectroDB entity: the parameters of its get, and the parsing of a raw item. */
export interface ReadableEntity {
  get(key: Record<string, unknown>): { params(options?: { consistent?: boolean }): unknown };
  parse(item: { Item: Record<string, unknown> }): { data: unknown };
}

/** One item to read: its entity and its table-index key (what the entity's `get` takes). */
export interface ItemRef {
  entity: ReadableEntity;
  key: Record<string, unknown>;
}

/** BatchGetItem answers at most this many times with unprocessed keys (throttling) before the read gives up. */
const UNPROCESSED_TRIES = 5;

/** BatchGetItem left keys unprocessed (throttling): asked again after a backoff. */
class Unprocessed extends Error {}

type GetParams = { TableName: string; Key: Record<string, unknown> };

/**
 * Read `refs` strongly consistent, each parsed by its entity, in one round trip: a GetItem for one ref, a BatchGetItem
 * (ConsistentRead) for more (all must live in one table, at most 100). Keys BatchGetItem leaves unprocessed are asked
 * again after a short backoff (10, 20, 40, 80 ms).
 * @returns the items in the order of `refs`, null where there is none.
 * @throws AppError SERVICE_UNAVAILABLE (503, retryable) when keys stay unprocessed after 5 answers; whatever the
 *   DynamoDB client throws.
 */
export async function consistentGet(refs: readonly ItemRef[]): Promise<(unknown | null)[]> {
  const params = refs.map((r) => r.entity.get(r.key).params({ consistent: true }) as GetParams);
  if (params.length === 1) {
    const { Item } = await dynamoClient().send(new GetCommand({ TableName: params[0]!.TableName, Key: params[0]!.Key, ConsistentRead: true }));
    return [Item ? refs[0]!.entity.parse({ Item }).data : null];
  }
  const table = params[0]!.TableName;
  if (params.some((p) => p.TableName !== table)) throw new AppError("INTERNAL", "consistentGet reads one table");
  const found = new Map<string, Record<string, unknown>>();
  const keyString = (key: Record<string, unknown>) => `${String(key.pk)}\u0000${String(key.sk)}`;
  let keys: Record<string, unknown>[] = params.map((p) => p.Key);
  try {
    await pRetry(
      async () => {
        const out = await dynamoClient().send(new BatchGetCommand({ RequestItems: { [table]: { Keys: keys, ConsistentRead: true } } }));
        for (const item of out.Responses?.[table] ?? []) found.set(keyString(item), item);
        keys = (out.UnprocessedKeys?.[table]?.Keys as Record<string, unknown>[] | undefined) ?? [];
        if (keys.length > 0) throw new Unprocessed();
      },
      { retries: UNPROCESSED_TRIES - 1, factor: 2, minTimeout: 10, maxTimeout: 80, shouldRetry: ({ error }) => error instanceof Unprocessed },
    );
  } catch (err) {
    if (err instanceof Unprocessed) throw new AppError("SERVICE_UNAVAILABLE", "The table is busy; try again", { retryable: true });
    throw err;
  }
  return refs.map((ref, i) => {
    const Item = found.get(keyString(params[i]!.Key));
    return Item ? ref.entity.parse({ Item }).data : null;
  });
}
