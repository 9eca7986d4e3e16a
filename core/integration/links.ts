/**
 * What the code-host and planner syncs share on a link (the `issueLink` item between a recommendation and its issue).
 */
import type { EntityItem } from "electrodb";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import type { IssueLinkEntity } from "./integration.entity";

type LinkItem = EntityItem<IssueLinkEntity>;
type LinkSet = Parameters<ReturnType<ReturnType<typeof db>["entities"]["issueLink"]["patch"]>["set"]>[0];

/**
 * Record on a link what a sync read of its issue, only over the link as that sync read it (its `last_synced_at`): a
 * concurrent sync that read the issue later and wrote first keeps its newer state (closed is not moved back to open).
 * @param set the fields to write (`last_synced_at` among them)
 * @returns false when another sync wrote first (nothing was written)
 */
export async function recordSyncedLink(link: LinkItem, set: LinkSet): Promise<boolean> {
  try {
    await db()
      .entities.issueLink.patch({ workspace_id: link.workspace_id, kind: link.kind, recommendation_id: link.recommendation_id, id: link.id })
      .set(set)
      .where((a, op) => (link.last_synced_at ? op.eq(a.last_synced_at, link.last_synced_at) : op.notExists(a.last_synced_at)))
      .go();
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/**
 * Note the end of a sync on the integration (`last_synced_at`). An integration disconnected while the sync ran is not
 * written back (the patch's existence condition): the sync answers what it did.
 */
export async function markSynced(workspaceId: string, kind: "codehost" | "planner"): Promise<void> {
  try {
    await db().entities.integration.patch({ workspace_id: workspaceId, kind }).set({ last_synced_at: new Date().toISOString() }).go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}

/**
 * Whether the sync run begun at `startedAt` has still to read this link or ticket: not synced since the run began, and
 * not noted as failed by that run (`markSyncFailed`), so each run reads every item at most once and its chain of
 * queued continuations ends (code-host, planner and execution-ticket syncs).
 */
export const unreadInRun = (item: { last_synced_at?: string | null; sync_failed_run?: string | null }, startedAt: string): boolean =>
  (!item.last_synced_at || item.last_synced_at < startedAt) && item.sync_failed_run !== startedAt;

/**
 * Note on a link that the sync run begun at `startedAt` tried it and could not read its issue: the run's queued
 * continuations (they pick up the links that run has not synced) skip it, so a run whose failing reads outlast the
 * work budget still ends instead of queueing another continuation that reads them again, for ever. The next sync
 * (another `started_at`) reads it again. A link gone meanwhile (a disconnect) is left gone.
 */
export async function markSyncFailed(link: LinkItem, startedAt: string): Promise<void> {
  try {
    await db()
      .entities.issueLink.patch({ workspace_id: link.workspace_id, kind: link.kind, recommendation_id: link.recommendation_id, id: link.id })
      .set({ sync_failed_run: startedAt })
      .go();
  } catch (err) {
    if (!isConditionalFailure(err)) throw err;
  }
}
