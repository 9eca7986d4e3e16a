import type { EntityItem } from "electrodb";
import type { InsightEntity } from "./insight.entity";
import type { Insight as InsightView } from "./schema";

/** An insight as stored (the insight entity's item). */
export type InsightItem = EntityItem<InsightEntity>;

/**
 * The API shape of an insight (spec 01 `Insight`) from its stored item. Also applied to raw items read through the
 * document client (core/insight/search-index.ts), whose attributes are stored under the same names.
 */
export const toView = (i: InsightItem): InsightView => ({
  id: i.id,
  workspace_id: i.workspace_id,
  insight_type: i.insight_type as InsightView["insight_type"],
  title: i.title,
  description: i.description,
  source_ids: i.source_ids ?? [],
  quotes: (i.quotes ?? []).map((q) => ({ text: q.text, source_id: q.source_id, speaker: q.speaker ?? null })),
  frequency: i.frequency,
  mention_count: i.mention_count,
  severity: i.severity,
  impact: i.impact ?? null,
  is_archived: i.is_archived,
  notes: i.notes ?? null,
  rating: i.rating ?? null,
  created_at: i.created_at,
  updated_at: i.updated_at,
});
