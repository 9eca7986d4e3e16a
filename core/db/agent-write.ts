import { createWriteTransaction } from "electrodb";
import { v5 as uuidv5 } from "uuid";
import { AppError } from "../error";
import { crashPointReached } from "../crash-point";
import { isConditionalFailure } from "./errors";
import { db, type EntityName } from "./service";

/**
 * One write of a DynamoDB transaction, as an ElectroDB `.commit()` returns it (`{Put|Update|Delete|ConditionCheck}`
 * params). Items of different entities of the one table mix freely in a transaction.
 */
export type WriteItem = { [op: string]: unknown };

/**
 * The transaction write of an ElectroDB write chain (`create`, `patch`, `update`, `put`, `delete`, with its `where`):
 * its `.commit()`. Every write chain has it at run time; ElectroDB's types offer it only inside a
 * `createWriteTransaction` callback, and an operation builds its writes before it knows the transaction.
 */
export const asWrite = (chain: unknown): WriteItem => (chain as { commit(): WriteItem }).commit();

/**
 * Turns what an operation is about to write into the pending action's flip to executed (DESIGN.md 6.2), as a write
 * for the operation's own transaction. Built by the executor (core/pending-action/executor.ts) and conditioned on its
 * lease, so the operation's writes and the flip commit together or not at all: a replay after a crash finds either
 * nothing written (and does it all) or the row executed (and does nothing).
 */
export type Settle<W> = (written: W) => WriteItem;

/**
 * How a write made on behalf of an approved pending action is kept exactly-once (DESIGN.md 6.2). Core operations
 * accept these options:
 * - `id`: the id to create the item under, derived from the action (`idFor`) so a replay targets the same item;
 * - `pendingActionId`: written on every item the operation writes, in the same write as the change, so agent writes
 *   can be traced and undone;
 * - `settle`: the action's flip to executed, committed in the same transaction as the operation's writes. `W` is what
 *   the operation hands it (each operation documents its shape).
 */
export interface AgentWrite<W = unknown> {
  /** The id to create the item under; random when absent. */
  id?: string;
  /** The pending action whose execution writes this item. */
  pendingActionId?: string;
  /** The action's flip to executed, for the operation's transaction (see `Settle`). */
  settle?: Settle<W>;
}

/** The attribute that tags an item with the pending action that wrote it (empty for other writes). */
export const tagOf = (opts: { pendingActionId?: string }): { pending_action_id?: string } =>
  opts.pendingActionId ? { pending_action_id: opts.pendingActionId } : {};

/** Namespace of ids derived from pending actions (a fixed random UUID). */
const NAMESPACE = "8f2d7c1e-5b3a-4f0e-9d6c-2a1b3c4d5e6f";

/**
 * The id of the `salt`-th item an action creates: the same action always derives the same id (UUID v5).
 * @param actionId the pending action's id
 * @param salt what distinguishes several items one action creates ("insight", "document", "recommendation#2", ...)
 */
export const idFor = (actionId: string, salt: string): string => uuidv5(`${actionId}:${salt}`, NAMESPACE);

/**
 * Create an item once per id. ElectroDB's `create` is conditioned on the item being absent; when that condition
 * fails under a derived id, an earlier run of the same action already wrote it, and its item is the answer (a replay
 * returns the first run's result instead of writing twice; two racing runs cannot both write).
 * @param create the conditional create, returning the new item
 * @param existing reads the item already stored under the id
 * @throws the create's error when it is not that condition, or when no item is found after it
 */
export async function createOnce<T>(opts: AgentWrite<any>, create: () => Promise<T>, existing: () => Promise<T | null>): Promise<T> {
  try {
    return await create();
  } catch (err) {
    if (!opts.id || !isConditionalFailure(err)) throw err;
    const found = await existing();
    if (!found) throw err;
    return found;
  }
}

/**
 * The agent-run id of an operation: derived from the pending action whose execution runs it, so a replay after a
 * crash reserves and settles the same run (charged once, DESIGN.md 6.2/6.3); random (undefined here) otherwise.
 */
export const runIdFor = (opts: AgentWrite<any>): string | undefined => (opts.pendingActionId ? idFor(opts.pendingActionId, "agent-run") : undefined);

/**
 * Thrown when the settlement in an operation's transaction was refused: the executor no longer holds the pending
 * action (its lease expired and another executor took the row over, or the row is finished). Nothing of the
 * transaction was written; the executor that holds the row now does the work.
 */
export class SettlementRefused extends Error {
  override name = "SettlementRefused";
  constructor() {
    super("The pending action is no longer held by this execution; nothing was written");
  }
}

/** Cancellation reasons that mean "busy, try again" rather than a refused condition. */
const BUSY_REASONS = new Set(["TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded", "InternalServerError"]);

/** DynamoDB's limit of items in one transaction. */
export const MAX_WRITE_ITEMS = 100;

/**
 * Commit an operation's writes in one transaction, with the pending action's settlement (when given) as its last
 * item. Just before a commit that carries a settlement the crash tests' `before-commit` point is passed.
 * @param entities the entities the items belong to (ElectroDB reads cancellation details through them)
 * @param items the operation's writes (at most MAX_WRITE_ITEMS, the settlement included)
 * @returns null when committed; else the cancellation reason of each item, in order ("None" for items not at fault)
 *   for the operation to interpret (a `ConditionalCheckFailed` on one of its own items)
 * @throws SettlementRefused when the settlement's condition failed; AppError SERVICE_UNAVAILABLE (503) when the
 *   transaction lost to a concurrent one or was throttled (transient: the executor retries it later)
 */
export async function commitWrites(entities: EntityName[], items: WriteItem[], settlement?: WriteItem): Promise<string[] | null> {
  const all = settlement ? [...items, settlement] : items;
  if (all.length === 0) return null;
  if (all.length > MAX_WRITE_ITEMS) throw new AppError("INVARIANT_VIOLATION", `${all.length} writes do not fit one transaction`);
  if (settlement) await crashPointReached("before-commit");
  const names = [...new Set<EntityName>([...entities, ...(settlement ? (["pendingAction"] as const) : [])])];
  const result = await createWriteTransaction(db().pick(...names), () => all as never).go();
  if (!result.canceled) return null;
  const codes = (result.data as { code?: string }[]).map((d) => d?.code ?? "None");
  if (settlement && codes[codes.length - 1] === "ConditionalCheckFailed") throw new SettlementRefused();
  if (codes.some((c) => BUSY_REASONS.has(c))) {
    throw new AppError("SERVICE_UNAVAILABLE", "The table is busy with a concurrent change; try again", { retryable: true, reasons: codes });
  }
  return settlement ? codes.slice(0, -1) : codes;
}
