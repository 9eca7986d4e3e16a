import { v5 as uuidv5 } from "uuid";
import { isConditionalFailure } from "./errors";

/**
 * How a write made on behalf of an approved pending action is kept exactly-once (DESIGN.md 6.2). Core create
 * operations accept these options: `id` is derived from the action (`idFor`), so a replay of the same action
 * targets the same item, and `pendingActionId` tags the item so agent writes can be traced and undone.
 */
export interface AgentWrite {
  /** The id to create the item under; random when absent. */
  id?: string;
  /** The pending action whose execution writes this item. */
  pendingActionId?: string;
}

/** Namespace of ids derived from pending actions (a fixed random UUID). */
const NAMESPACE = "8f2d7c1e-5b3a-4f0e-9d6c-2a1b3c4d5e6f";

/**
 * The id of the `salt`-th item an action creates: the same action always derives the same id (UUID v5).
 * @param actionId the pending action's id
 * @param salt what distinguishes several items one action creates ("insight", "document", "rec#2", ...)
 */
export const idFor = (actionId: string, salt: string): string => uuidv5(`${actionId}:${salt}`, NAMESPACE);

/**
 * Create an item once per id. ElectroDB's `create` is conditioned on the item being absent; when that condition
 * fails under a derived id, an earlier run of the same action already wrote it, and its item is the answer (a replay
 * after a crash returns the first run's result instead of writing twice; two racing runs cannot both write).
 * @param create the conditional create, returning the new item
 * @param existing reads the item already stored under the id
 * @throws the create's error when it is not that condition, or when no item is found after it
 */
export async function createOnce<T>(opts: AgentWrite, create: () => Promise<T>, existing: () => Promise<T | null>): Promise<T> {
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
export const runIdFor = (opts: AgentWrite): string | undefined => (opts.pendingActionId ? idFor(opts.pendingActionId, "agent-run") : undefined);
