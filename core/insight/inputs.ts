import { Errors } from "../error";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import type { InsightInput } from "../recommendation/engine/types";
import type { InsightItem } from "./index";

/** An insight as the delivery engines read it. */
export const toEngineInput = (i: InsightItem): InsightInput => ({
  id: i.id,
  title: i.title,
  description: i.description,
  insight_type: i.insight_type,
  severity: i.severity,
  frequency: i.frequency,
  mention_count: i.mention_count,
  quotes: (i.quotes ?? []).map((q) => ({ text: q.text, source_id: q.source_id, speaker: q.speaker ?? null })),
});

/**
 * Load insights of a workspace by id, in the order given. With `skipMissing`, ids that no longer exist (insights
 * deleted after a document cited them) are left out instead of refused.
 * @throws AppError VALIDATION_ERROR naming ids that are not insights of the workspace.
 */
export async function loadInsights(
  workspaceId: string,
  ids: string[],
  field = "insight_ids",
  opts: { skipMissing?: boolean } = {},
): Promise<InsightItem[]> {
  const unique = [...new Set(ids)];
  if (unique.length === 0) return [];
  const data = await getAll(unique.map((id) => ({ workspace_id: workspaceId, id })), (keys) => db().entities.insight.get(keys).go({ consistent: true }));
  const byId = new Map(data.map((i) => [i.id, i]));
  const unknown = unique.filter((id) => !byId.has(id));
  if (opts.skipMissing) return unique.filter((id) => byId.has(id)).map((id) => byId.get(id)!);
  if (unknown.length) throw Errors.unknownIds("insight", field, unknown);
  return unique.map((id) => byId.get(id)!);
}
