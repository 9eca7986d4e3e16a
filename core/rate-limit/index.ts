import { isConditionalFailure } from "../db/errors";
import { db } from "../db/service";
import { AppError } from "../error";
import { Config, type RateLimitName } from "../config";

const nowSeconds = () => Math.floor(Date.now() / 1000);

/**
 * Fixed-window rate limit: at most `max` calls per `windowSeconds` for `key`. One conditional atomic increment of a
 * guard item per call (the same small TTL'd records as the locks of core/agent), so concurrent calls on any number of
 * Lambdas count exactly; DynamoDB's TTL removes past windows.
 * @param bucket names the counter within `key`, so one key can carry several limits (unnamed: synthesis's counter)
 * @throws AppError RATE_LIMITED (429) with `retry_after_seconds`, which the error envelope also sends as `Retry-After`.
 */
export async function rateLimit(key: string, max: number, windowSeconds: number, bucket?: string): Promise<void> {
  const now = nowSeconds();
  const window = Math.floor(now / windowSeconds);
  const retryAfter = (window + 1) * windowSeconds - now;
  try {
    await db()
      .entities.guard.update({ scope: key, name: bucket ? `rate#${bucket}#${window}` : `rate#${window}` })
      .add({ count: 1 })
      .set({ ttl: (window + 2) * windowSeconds })
      .where((attr, op) => `${op.notExists(attr.count)} OR ${op.lt(attr.count, max)}`)
      .go();
  } catch (err) {
    if (isConditionalFailure(err)) {
      throw new AppError("RATE_LIMITED", `At most ${max} requests per ${windowSeconds} s; retry in ${retryAfter} s`, { retry_after_seconds: retryAfter });
    }
    throw err;
  }
}

/**
 * Count one request of `userId` against the configured limit `name` (Config.rateLimit), for the endpoints whose
 * limits are ours rather than the spec's. Called by the route implementations, so the agent's own tool calls (bounded
 * by its turn and token budgets) do not use up the user's requests.
 * @throws AppError RATE_LIMITED (429) with `retry_after_seconds` once the user's window is used up.
 */
export async function limitUser(userId: string, name: RateLimitName): Promise<void> {
  const { max, windowSeconds } = Config.rateLimit(name);
  await rateLimit(`user#${userId}`, max, windowSeconds, name);
}
