/**
 * Reading entropy scans (core/entropy): the workspace's newest scans and their API shape. A module of its own, without
 * the scanner (whose contradiction check loads wink's 3.6 MB language model), so the observability dashboards read
 * scans without loading it (issue #24 cold starts). core/entropy re-exports it.
 */
import type { EntityItem } from "electrodb";
import { db } from "../db/service";
import type { EntropyScanEntity } from "./entropy.entity";
import type { EntropyScan, EntropyTypeCount } from "./schema";

/** A stored entropy scan. */
export type ScanItem = EntityItem<EntropyScanEntity>;

/** A stored scan in the API's shape (spec 02 admin quality). */
export const toScanView = (s: ScanItem): EntropyScan => ({
  id: s.id,
  workspace_id: s.workspace_id,
  scanned_at: s.scanned_at,
  trigger: s.trigger,
  insight_count: s.insight_count,
  source_count: s.source_count,
  issue_count: s.issue_count,
  high_severity_count: s.high_count,
  by_type: (s.by_type ?? []) as EntropyTypeCount[],
  truncated: s.truncated,
  duration_ms: s.duration_ms,
  embedder_id: s.embedder_id ?? null,
});

/** The workspace's newest scans, newest first (one Query of the workspace partition). */
export async function recentScans(workspaceId: string, limit = 10): Promise<EntropyScan[]> {
  const { data } = await db().entities.entropyScan.query.byWorkspace({ workspace_id: workspaceId }).go({ order: "desc", limit });
  return data.map(toScanView);
}
