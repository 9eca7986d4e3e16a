/**
 * ElectroDB's batch operations (`entity.get([...])`, `entity.put([...])`, `entity.delete([...])`) hand back what
 * DynamoDB left unprocessed (throttling on a hot partition) instead of asking again. These run one to the end: the
 * unprocessed part is sent again after a backoff (p-retry), a few times, before the call gives up with a 503.
 */
import pRetry from "p-retry";
import { AppError } from "../error";

/** Answers with unprocessed items before a batch operation gives up. */
const UNPROCESSED_TRIES = 5;

/** DynamoDB left part of a batch unprocessed: sent again after a backoff. */
class Unprocessed extends Error {}

async function untilProcessed(send: () => Promise<boolean>): Promise<void> {
  try {
    await pRetry(
      async () => {
        if (!(await send())) throw new Unprocessed();
      },
      { retries: UNPROCESSED_TRIES - 1, factor: 2, minTimeout: 20, maxTimeout: 320, randomize: true, shouldRetry: ({ error }) => error instanceof Unprocessed },
    );
  } catch (err) {
    if (err instanceof Unprocessed) throw new AppError("SERVICE_UNAVAILABLE", "The table is busy; try again", { retryable: true });
    throw err;
  }
}

/**
 * Read every key of a batch get: `read` is the entity's `get(keys).go(...)`, called again with the keys DynamoDB left
 * unprocessed (ElectroDB returns them in the keys' own shape).
 * @returns every item found, in no particular order (a key without an item is absent)
 * @throws AppError SERVICE_UNAVAILABLE (503, retryable) when keys stay unprocessed through the tries
 */
export async function getAll<K, T>(keys: K[], read: (keys: K[]) => Promise<{ data: T[]; unprocessed: unknown[] }>): Promise<T[]> {
  const found: T[] = [];
  let asking = keys;
  if (asking.length === 0) return found;
  await untilProcessed(async () => {
    const { data, unprocessed } = await read(asking);
    found.push(...data);
    asking = unprocessed as K[];
    return asking.length === 0;
  });
  return found;
}

/**
 * Write every item of a batch put or delete: `write` is the entity's `put(items).go()` or `delete(keys).go()`, called
 * again with the items whose keys DynamoDB left unprocessed.
 * @param keyOf an item's (or an unprocessed key's) identity, to match the keys ElectroDB returns to the items sent
 * @throws AppError SERVICE_UNAVAILABLE (503, retryable) when items stay unprocessed through the tries
 */
export async function writeAll<T>(items: T[], write: (items: T[]) => Promise<{ unprocessed: unknown[] }>, keyOf: (itemOrKey: never) => string): Promise<void> {
  let left = items;
  if (left.length === 0) return;
  const key = keyOf as (x: unknown) => string;
  await untilProcessed(async () => {
    const { unprocessed } = await write(left);
    const keys = new Set(unprocessed.map(key));
    left = left.filter((i) => keys.has(key(i)));
    return left.length === 0;
  });
}
