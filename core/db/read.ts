/**
 * Strongly consistent reads of several items by key in ONE DynamoDB round trip (BatchGetItem), each parsed by its
 * ElectroDB entity: the member-checked reads of core/workspace (`readAsMember`, `requireResourceById`: the caller's
 * membership and the item asked for travel together; docs/decisions.md "Reads in one round trip", issue #24 point 2),
 * and the trial milestones' account and ledger reads (core/billing/charge.ts `grantMilestones`).
 */
import { GetCommand } from "@aws-sdk/lib-dynamodb";
import { consistentBatchGet } from "./batch-get";
import { AppError } from "../error";
import { dynamoClient } from "./client";

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

/**
 * An item a request reads ahead, beside its membership check and in the same round trip, for a later step of the
 * same request (core/workspace `requireMemberWithWorkspace`; the copilot's stream reads its search and memory heads
 * this way). `keep` receives the item (null when there is none) only once the membership check passed, so nothing
 * of the workspace reaches a non-member; what it keeps, and for how long, is the owner's rule.
 */
export interface Prefetch {
  ref: ItemRef;
  keep(item: unknown): void;
}

type GetParams = { TableName: string; Key: Record<string, unknown> };

/**
 * Read `refs` strongly consistent, each parsed by its entity, in one round trip: a GetItem for one ref, a BatchGetItem
 * (ConsistentRead, core/db/batch-get.ts) for more (all must live in one table, at most 100 distinct keys; a key named
 * by several refs is read once). No ref, no read.
 * @returns the items in the order of `refs`, null where there is none.
 * @throws AppError SERVICE_UNAVAILABLE (503, retryable) when keys stay unprocessed after 5 answers; whatever the
 *   DynamoDB client throws.
 */
export async function consistentGet(refs: readonly ItemRef[]): Promise<(unknown | null)[]> {
  if (refs.length === 0) return [];
  const params = refs.map((r) => r.entity.get(r.key).params({ consistent: true }) as GetParams);
  if (params.length === 1) {
    const { Item } = await dynamoClient().send(new GetCommand({ TableName: params[0]!.TableName, Key: params[0]!.Key, ConsistentRead: true }));
    return [Item ? refs[0]!.entity.parse({ Item }).data : null];
  }
  const table = params[0]!.TableName;
  if (params.some((p) => p.TableName !== table)) throw new AppError("INTERNAL", "consistentGet reads one table");
  const keyString = (key: Record<string, unknown>) => `${String(key.pk)}\u0000${String(key.sk)}`;
  // BatchGetItem refuses a request that names a key twice: each key is asked once, and its item goes to every ref.
  const keys = [...new Map(params.map((p) => [keyString(p.Key), p.Key])).values()];
  const found = new Map((await consistentBatchGet(table, keys)).map((item) => [keyString(item), item]));
  return refs.map((ref, i) => {
    const Item = found.get(keyString(params[i]!.Key));
    return Item ? ref.entity.parse({ Item }).data : null;
  });
}
