/**
 * The single DynamoDB table's physical shape, shared by the SST stack (stacks/Storage.ts) and the
 * embedded runtime's create-table (local/dynamodb.ts), so the two cannot drift.
 *
 * Generic key fields (DESIGN.md section 4.4); entities map their access patterns onto them.
 * - primary (pk, sk): workspace-scoped items live in their workspace's partition.
 * - gsi1 (gsi1pk, gsi1sk): look-up by an item's own id (resources fetched by id alone).
 * - gsi2 (gsi2pk, gsi2sk): look-up by the owning user or another secondary key (e-mail, user's memberships).
 * - gsi3 (gsi3pk, gsi3sk): spare ordering index for lists that need a second sort.
 */
export const TABLE_KEYS = {
  partitionKey: "pk",
  sortKey: "sk",
  ttlAttribute: "ttl",
  globalIndexes: {
    gsi1: { partitionKey: "gsi1pk", sortKey: "gsi1sk" },
    gsi2: { partitionKey: "gsi2pk", sortKey: "gsi2sk" },
    gsi3: { partitionKey: "gsi3pk", sortKey: "gsi3sk" },
  },
} as const;

/** CreateTable input for DynamoDB Local; on-demand billing, all attributes projected. */
export function createTableInput(tableName: string) {
  const indexes = Object.entries(TABLE_KEYS.globalIndexes);
  const attrs = new Set<string>([TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey]);
  for (const [, k] of indexes) {
    attrs.add(k.partitionKey);
    attrs.add(k.sortKey);
  }
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST" as const,
    AttributeDefinitions: [...attrs].map((name) => ({ AttributeName: name, AttributeType: "S" as const })),
    KeySchema: [
      { AttributeName: TABLE_KEYS.partitionKey, KeyType: "HASH" as const },
      { AttributeName: TABLE_KEYS.sortKey, KeyType: "RANGE" as const },
    ],
    GlobalSecondaryIndexes: indexes.map(([name, k]) => ({
      IndexName: name,
      KeySchema: [
        { AttributeName: k.partitionKey, KeyType: "HASH" as const },
        { AttributeName: k.sortKey, KeyType: "RANGE" as const },
      ],
      Projection: { ProjectionType: "ALL" as const },
    })),
    StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" as const },
  };
}
