/**
 * The single DynamoDB table's physical shape, shared by the SST stack (stacks/Storage.ts) and the
 * embedded runtime's create-table (local/dynamodb.ts), so the two cannot drift.
 *
 * Generic key fields (DESIGN.md section 4.4); entities map their access patterns onto them.
 * - primary (pk, sk): workspace-scoped items live in their workspace's partition.
 * - gsi1 (gsi1pk, gsi1sk): look-up by an item's own id (resources fetched by id alone).
 * - gsi2 (gsi2pk, gsi2sk): look-up by the owning user or another secondary key (e-mail, user's memberships).
 * - gsi3 (gsi3pk, gsi3sk): spare ordering index for lists that need a second sort.
 * - gsi4 (gsi4pk, gsi4sk): slim lists. Its entries carry only `SLIM_LIST_ATTRIBUTES` (an INCLUDE projection), so a
 *   list that must count and order every item of a kind (a workspace's tasks, its assistant messages) reads a few
 *   hundred bytes per item instead of the whole item, and fetches the page's items by key (docs/decisions.md "Slim
 *   list index"; older items are backfilled once per workspace, core/db/slim-index.ts).
 */

/**
 * What a gsi4 entry carries besides the keys (the table's and its own): ElectroDB's identifiers (entity name and
 * model version, so ElectroDB recognises the entry as its entity's) and what a list fetches, filters and orders by.
 * DynamoDB cannot change an index's projection in place: adding a name here means a new index.
 */
export const SLIM_LIST_ATTRIBUTES = ["__edb_e__", "__edb_v__", "id", "status", "created_at"] as const;

/** The gsi4 keys of one item, as its entity's gsi4 index writes them (core/db/slim-index.ts). */
export interface SlimKeys {
  gsi4pk: string;
  gsi4sk: string;
}

/**
 * The gsi4 keys out of the keys ElectroDB's conversions build for a slim-list index (`createConversions(entity)
 * .byAccessPattern.<index>.fromComposite.toKeys`), which also gives the table's own keys.
 * @throws Error when either is missing (a composite attribute the index needs was not given)
 */
export function slimKeysOf(keys: Record<string, unknown>): SlimKeys {
  const { gsi4pk, gsi4sk } = keys;
  if (typeof gsi4pk !== "string" || typeof gsi4sk !== "string") throw new Error(`slim-list keys incomplete: ${JSON.stringify(keys)}`);
  return { gsi4pk, gsi4sk };
}

/** One global secondary index: its key fields and, when not ALL, the non-key attributes it projects (INCLUDE). */
export interface GlobalIndexKeys {
  readonly partitionKey: string;
  readonly sortKey: string;
  /** The INCLUDE projection's non-key attributes; absent: every attribute (ALL). */
  readonly include?: readonly string[];
}

export const TABLE_KEYS = {
  partitionKey: "pk",
  sortKey: "sk",
  ttlAttribute: "ttl",
  globalIndexes: {
    gsi1: { partitionKey: "gsi1pk", sortKey: "gsi1sk" },
    gsi2: { partitionKey: "gsi2pk", sortKey: "gsi2sk" },
    gsi3: { partitionKey: "gsi3pk", sortKey: "gsi3sk" },
    gsi4: { partitionKey: "gsi4pk", sortKey: "gsi4sk", include: SLIM_LIST_ATTRIBUTES },
  } satisfies Record<string, GlobalIndexKeys>,
} as const;

/** The global indexes by name, each widened to `GlobalIndexKeys` (the `include` of those that have one). */
export const globalIndexes = (): [string, GlobalIndexKeys][] => Object.entries(TABLE_KEYS.globalIndexes);

/** An index's DynamoDB `Projection`: INCLUDE of its `include`, or ALL. */
export function projectionOf(index: GlobalIndexKeys) {
  return index.include
    ? { ProjectionType: "INCLUDE" as const, NonKeyAttributes: [...index.include] }
    : { ProjectionType: "ALL" as const };
}

/** A global index's CreateTable / UpdateTable (`Create`) definition. */
export function globalIndexInput(name: string, index: GlobalIndexKeys) {
  return {
    IndexName: name,
    KeySchema: [
      { AttributeName: index.partitionKey, KeyType: "HASH" as const },
      { AttributeName: index.sortKey, KeyType: "RANGE" as const },
    ],
    Projection: projectionOf(index),
  };
}

/** Every key attribute of the table and its indexes, with its type (all strings). */
export function keyAttributeDefinitions() {
  const attrs = new Set<string>([TABLE_KEYS.partitionKey, TABLE_KEYS.sortKey]);
  for (const [, k] of globalIndexes()) {
    attrs.add(k.partitionKey);
    attrs.add(k.sortKey);
  }
  return [...attrs].map((name) => ({ AttributeName: name, AttributeType: "S" as const }));
}

/** CreateTable input for DynamoDB Local; on-demand billing, each index projected as `TABLE_KEYS` says. */
export function createTableInput(tableName: string) {
  return {
    TableName: tableName,
    BillingMode: "PAY_PER_REQUEST" as const,
    AttributeDefinitions: keyAttributeDefinitions(),
    KeySchema: [
      { AttributeName: TABLE_KEYS.partitionKey, KeyType: "HASH" as const },
      { AttributeName: TABLE_KEYS.sortKey, KeyType: "RANGE" as const },
    ],
    GlobalSecondaryIndexes: globalIndexes().map(([name, k]) => globalIndexInput(name, k)),
    StreamSpecification: { StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES" as const },
  };
}
