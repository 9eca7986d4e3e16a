import { BatchWriteCommand, QueryCommand, type QueryCommandInput } from "@aws-sdk/lib-dynamodb";
import { Config } from "../config";
import { dynamoClient } from "./client";

type Key = { pk: string; sk: string };

/**
 * Every item a Query answers, followed page by page (1 MB each), as the document client returns them (raw attributes).
 * @param input the Query (its `ExclusiveStartKey` is set here)
 */
export async function queryAll(input: Omit<QueryCommandInput, "ExclusiveStartKey">): Promise<Record<string, unknown>[]> {
  const items: Record<string, unknown>[] = [];
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamoClient().send(new QueryCommand({ ...input, ExclusiveStartKey: start }));
    items.push(...(page.Items ?? []));
    start = page.LastEvaluatedKey;
  } while (start);
  return items;
}

/**
 * Every item of a partition, optionally only those whose sort key starts with `skPrefix`: one strongly consistent
 * Query, followed page by page (`queryAll`).
 * @param projection a `ProjectionExpression` of plain attribute names (none: whole items)
 */
export async function queryPrefix(pk: string, skPrefix?: string, projection?: string): Promise<Record<string, unknown>[]> {
  return queryAll({
    TableName: Config.tableName(),
    KeyConditionExpression: skPrefix ? "pk = :pk AND begins_with(sk, :sk)" : "pk = :pk",
    ExpressionAttributeValues: skPrefix ? { ":pk": pk, ":sk": skPrefix } : { ":pk": pk },
    ...(projection ? { ProjectionExpression: projection } : {}),
    ConsistentRead: true,
  });
}

/** All keys of a partition, optionally only those whose sort key starts with `skPrefix` (strongly consistent Query). */
export async function partitionKeys(pk: string, skPrefix?: string): Promise<Key[]> {
  return (await queryPrefix(pk, skPrefix, "pk, sk")).map((item) => ({ pk: item.pk as string, sk: item.sk as string }));
}

/**
 * Number of items in a partition whose sort key starts with `skPrefix` (Select COUNT, no item data read back).
 * `entity` keeps only items of that ElectroDB entity (children can share their parent's prefix).
 */
export async function countByPrefix(pk: string, skPrefix: string, entity?: string): Promise<number> {
  let count = 0;
  let start: Record<string, unknown> | undefined;
  do {
    const page = await dynamoClient().send(
      new QueryCommand({
        TableName: Config.tableName(),
        KeyConditionExpression: "pk = :pk AND begins_with(sk, :sk)",
        ...(entity
          ? { FilterExpression: "#e = :e", ExpressionAttributeNames: { "#e": "__edb_e__" }, ExpressionAttributeValues: { ":pk": pk, ":sk": skPrefix, ":e": entity } }
          : { ExpressionAttributeValues: { ":pk": pk, ":sk": skPrefix } }),
        Select: "COUNT",
        ExclusiveStartKey: start,
      }),
    );
    count += page.Count ?? 0;
    start = page.LastEvaluatedKey;
  } while (start);
  return count;
}

/**
 * Delete the given keys in BatchWrite chunks of 25, re-sending unprocessed items with backoff.
 * @throws Error when DynamoDB keeps refusing items after 8 attempts (nothing is silently left behind).
 */
export async function deleteKeys(keys: Key[]): Promise<void> {
  for (let i = 0; i < keys.length; i += 25) {
    let requests = keys.slice(i, i + 25).map((Key) => ({ DeleteRequest: { Key } }));
    for (let attempt = 0; requests.length > 0; attempt++) {
      if (attempt >= 8) throw new Error(`DynamoDB left ${requests.length} deletes unprocessed`);
      if (attempt > 0) await new Promise((r) => setTimeout(r, 50 * 2 ** attempt));
      const out = await dynamoClient().send(new BatchWriteCommand({ RequestItems: { [Config.tableName()]: requests } }));
      requests = (out.UnprocessedItems?.[Config.tableName()] ?? []) as typeof requests;
    }
  }
}

