/**
 * The per-workspace synthesis lock (spec 01: 409 SYNTHESIS_IN_PROGRESS while another synthesis runs). One guard item
 * (`ws#<id>` / `guard#synthesis`) with an owner and an expiry. The holder extends the expiry while it runs (a copilot
 * stream's synthesis may outlive one lock period: the stream Lambda has 330 s), and its commit checks, in the same
 * transaction, that it still holds the lock: a run that lost it (expired, then taken by another synthesis) writes
 * nothing, so two syntheses never both commit merges read from the same insights.
 */
import { randomUUID } from "node:crypto";
import { AppError } from "../error";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import type { WriteItem } from "../db/agent-write";
import { serviceLog } from "../log";

/** The per-workspace synthesis lock expires after this long, so a crashed synthesis cannot block forever. */
export const SYNTHESIS_LOCK_SECONDS = 300;

/**
 * How often a running synthesis extends its lock, ms (`SYNTHESIS_LOCK_HEARTBEAT_MS`, default a third of the lock
 * period: two extensions may fail before the lock expires under a live run).
 */
const heartbeatMs = () => {
  const set = Number(process.env.SYNTHESIS_LOCK_HEARTBEAT_MS);
  return Number.isFinite(set) && set > 0 ? set : (SYNTHESIS_LOCK_SECONDS * 1000) / 3;
};

const nowSeconds = () => Math.floor(Date.now() / 1000);

/** The lock owner of a synthesis a pending action runs: `<prefix><random>`, the prefix naming the action. */
const actionOwnerPrefix = (actionId: string) => `pending-action#${actionId}#`;

/** The refusal of a run that no longer holds the lock: another synthesis runs (or ran) meanwhile. */
const lockLost = () =>
  new AppError("SYNTHESIS_IN_PROGRESS", "Another synthesis took over this workspace's lock while this one ran; nothing was stored, run it again", { retryable: true });

/** A taken synthesis lock. */
export interface SynthesisLock {
  /** The transaction item that holds only while this take still owns the lock (a ConditionCheck on its owner). */
  heldCheck(): WriteItem;
  /** @throws AppError SYNTHESIS_IN_PROGRESS (409, retryable) when this take no longer owns the lock (strong read). */
  assertHeld(): Promise<void>;
  /**
   * Stop extending the lock and wait for an extension under way: before the commit, whose transaction checks the lock
   * (an extension of the same item meanwhile would cancel it as a TransactionConflict). The lock then holds for what
   * is left of its period, ample for one commit.
   */
  stopExtending(): Promise<void>;
  /** Stop extending and delete the lock while it is still this take's. Never throws (the lock expires by itself). */
  release(): Promise<void>;
}

/**
 * Take the workspace's synthesis lock for `SYNTHESIS_LOCK_SECONDS`, extended every third of that while held. A lock
 * expired by then is free. A synthesis run for a pending action may also take over a lock held by a run of the same
 * action (a crashed or replaced execution of it, DESIGN.md 6.2): that is not a conflict, and the replay must not wait
 * 5 minutes for its own lock; the replaced run's commit is then refused by `heldCheck`. Each take gets an owner of its
 * own, so a replaced run that ends late neither extends nor releases its successor's lock.
 * @param actionId the approved pending action the run executes, if any
 * @throws AppError SYNTHESIS_IN_PROGRESS (409) while another synthesis (a request, or another action) holds it.
 */
export async function takeSynthesisLock(workspaceId: string, actionId: string | undefined): Promise<SynthesisLock> {
  const owner = `${actionId ? actionOwnerPrefix(actionId) : ""}${randomUUID()}`;
  const key = { scope: `ws#${workspaceId}`, name: "synthesis" };
  const now = nowSeconds();
  try {
    await db()
      .entities.guard.put({ ...key, owner, ttl: now + SYNTHESIS_LOCK_SECONDS })
      .where((attr, op) =>
        [op.notExists(attr.owner), op.lt(attr.ttl, now), ...(actionId ? [op.begins(attr.owner, actionOwnerPrefix(actionId))] : [])].join(" OR "),
      )
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
    throw new AppError("SYNTHESIS_IN_PROGRESS", "A synthesis is already running in this workspace; try again when it finishes");
  }
  const log = serviceLog("synthesis");
  let lost = false;
  // One extension at a time: a slow one is not overtaken by the next tick.
  let extending: Promise<void> | undefined;
  const extend = async () => {
    try {
      await db()
        .entities.guard.patch(key)
        .set({ ttl: nowSeconds() + SYNTHESIS_LOCK_SECONDS })
        .where((attr, op) => op.eq(attr.owner, owner))
        .go({ response: "none" });
    } catch (err) {
      if (isConditionalFailure(err)) {
        // Taken by another run after it expired (or deleted): the commit's check refuses this run's writes.
        lost = true;
        clearInterval(timer);
        log.warn("the synthesis lock was lost while the run went on; its writes will be refused", { workspace_id: workspaceId });
        return;
      }
      // A throttled or failed extension is tried again at the next tick; the lock holds two more periods' thirds.
      log.warn("extending the synthesis lock failed; trying again at the next tick", { workspace_id: workspaceId, error: err as Error });
    }
  };
  const timer = setInterval(() => {
    extending ??= extend().finally(() => (extending = undefined));
  }, heartbeatMs());
  timer.unref?.();
  return {
    heldCheck: () => {
      // ElectroDB builds condition checks only inside its own transaction callback; the key is the entity's own.
      const { TableName, Key } = db().entities.guard.get(key).params<{ TableName: string; Key: Record<string, string> }>();
      return { ConditionCheck: { TableName, Key, ConditionExpression: "#owner = :owner", ExpressionAttributeNames: { "#owner": "owner" }, ExpressionAttributeValues: { ":owner": owner } } };
    },
    assertHeld: async () => {
      if (lost) throw lockLost();
      const { data } = await db().entities.guard.get(key).go({ consistent: true, attributes: ["owner", "ttl"] });
      if (data?.owner !== owner) throw lockLost();
    },
    stopExtending: async () => {
      clearInterval(timer);
      await extending;
    },
    release: async () => {
      clearInterval(timer);
      await extending;
      try {
        await db().entities.guard.delete(key).where((attr, op) => op.eq(attr.owner, owner)).go();
      } catch (err) {
        if (isConditionalFailure(err)) return; // expired and taken by someone else: nothing to release
        // The release runs after the synthesis (stored or not): its failure must not turn a stored run into an error
        // that a client retries (creating every insight again). The lock expires by itself (SYNTHESIS_LOCK_SECONDS).
        log.warn("the synthesis lock could not be released; it expires by itself", { workspace_id: workspaceId, error: err as Error });
      }
    },
  };
}
