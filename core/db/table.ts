/**
 * The single DynamoDB table's physical shape, shared by the SST stack (stacks/Storage.ts) and the
 * embedded runtime's create-table (local/dynamodb.ts), so the two cannot drift.
 *
 * Generic key fields (DESIGN.md section 4.4); entities map their access patterns onto them.
 * - primary (pk, sk): workspace-scoped items live in their workspace's partition.
 * - gsi1 (gsi1pk, gsi1sk): look-up by an item's own id (resources fetched by id alone).
 * - gsi2 (gsi2pk, gsi2sk): look-up by the owning user or another secondary key (e-mail, user's memberships).
 * - gsi3 (gsi3pk, gsi3sk): spare ordering index for lists that need a second sort.
 * - gsi5 (gsi5pk, gsi5sk): the slim list of a workspace's agent runs, with what the admin list filters on and its
 *   stats count (`RUN_LIST_ATTRIBUTES`): a run keeps up to 40,000 characters of input and output, and every AI call
 *   writes one (docs/decisions.md "Agent runs on a slim index").
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

/**
 * What a gsi5 entry (an agent run) carries besides the keys: ElectroDB's identifiers, and what `GET
 * /api/admin/agent-runs` filters and fetches by and its stats count (core/observability). As for gsi4, adding a name
 * here means a new index.
 */
export const RUN_LIST_ATTRIBUTES = ["__edb_e__", "__edb_v__", "id", "status", "agent_type", "tool_name", "cost_usd", "executed_at"] as const;

/** A global secondary index of the table, by name (`TABLE_KEYS.globalIndexes`). */
export type GlobalIndexName = keyof typeof TABLE_KEYS.globalIndexes;

/**
 * One item's keys in a global index, named by that index's key fields (gsi3: `gsi3pk`, `gsi3sk`; gsi4: `gsi4pk`,
 * `gsi4sk`), as its entity's index writes them (core/db/slim-index.ts). Distributes over a union of names: a
 * `IndexKeys<"gsi3" | "gsi4">` is the keys of one index or the other, never a mix.
 */
export type IndexKeys<I extends GlobalIndexName> = I extends GlobalIndexName
  ? { [F in (typeof TABLE_KEYS.globalIndexes)[I]["partitionKey"] | (typeof TABLE_KEYS.globalIndexes)[I]["sortKey"]]: string }
  : never;

/** The gsi4 keys of one item, as its entity's gsi4 index writes them (core/db/slim-index.ts). */
export type SlimKeys = IndexKeys<"gsi4">;

/**
 * The keys of global index `index` out of the keys ElectroDB's conversions build for an access pattern on it
 * (`createConversions(entity).byAccessPattern.<pattern>.fromComposite.toKeys`), which also gives the table's own keys
 * (dropped here: a backfill updates the item it read, by that item's own pk and sk).
 * @throws Error when either is missing (a composite attribute the index needs was not given)
 */
export function indexKeysOf<I extends GlobalIndexName>(index: I, keys: Record<string, unknown>): IndexKeys<I> {
  const { partitionKey, sortKey } = TABLE_KEYS.globalIndexes[index];
  const pk = keys[partitionKey];
  const sk = keys[sortKey];
  if (typeof pk !== "string" || typeof sk !== "string") throw new Error(`${index} keys incomplete: ${JSON.stringify(keys)}`);
  return { [partitionKey]: pk, [sortKey]: sk } as IndexKeys<I>;
}

/**
 * The gsi4 keys out of the keys ElectroDB's conversions build for a slim-list index (`indexKeysOf` on gsi4).
 * @throws Error when either is missing (a composite attribute the index needs was not given)
 */
export const slimKeysOf = (keys: Record<string, unknown>): SlimKeys => indexKeysOf("gsi4", keys);

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
    gsi5: { partitionKey: "gsi5pk", sortKey: "gsi5sk", include: RUN_LIST_ATTRIBUTES },
  } as const satisfies Record<string, GlobalIndexKeys>,
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
