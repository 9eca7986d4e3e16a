/**
 * Stale sources (issue #21; docs/decisions.md "Entropy scanner"). A source is stale when its research is older than
 * `staleDays` (its upload, `created_at`: when the research came in) and it no longer feeds current knowledge well:
 *
 * | reason | what | severity |
 * |---|---|---|
 * | `aging_evidence` | it is, with other old sources at most, the only evidence of active insights (no source younger than `staleDays` backs them) | high when one of those insights is high or critical, else medium |
 * | `superseded` | every insight that cites it is archived | low |
 * | `never_synthesized` | completed, but no insight ever cited it | low |
 * | `failed_extraction` | its extraction failed and nobody fixed or removed it | low |
 *
 * An old source whose insights are all also backed by a fresh source is not stale: newer research corroborates it.
 * Pending sources are the recovery sweeper's (core/pipeline/recovery.ts), not stale. An insight cites a source
 * through `source_ids` or a quote's `source_id`. Pure.
 */
import type { EntropySeverity } from "./schema";

export interface ScannedSource {
  id: string;
  title: string;
  processing_status: "pending" | "completed" | "failed";
  created_at: string;
}

export interface CitingInsight {
  id: string;
  title: string;
  severity: "low" | "medium" | "high" | "critical";
  is_archived: boolean;
  source_ids: string[];
  quotes: { source_id: string }[];
}

export type StaleReason = "aging_evidence" | "superseded" | "never_synthesized" | "failed_extraction";

export interface StaleSource {
  sourceId: string;
  reason: StaleReason;
  severity: EntropySeverity;
  ageDays: number;
  /** aging_evidence: the active insights that rest only on old research; superseded: the archived ones. */
  insightIds: string[];
  detail: string;
}

const DAY_MS = 86_400_000;
const RANK: Record<EntropySeverity, number> = { high: 2, medium: 1, low: 0 };

const citedBy = (i: CitingInsight): Set<string> => new Set([...(i.source_ids ?? []), ...(i.quotes ?? []).map((q) => q.source_id)]);

/**
 * The stale sources of one workspace, weightiest first (severity, then age).
 * @param now the scan's time
 * @param staleDays age in days from which a source's research counts as old
 */
export function findStaleSources(sources: ScannedSource[], insights: CitingInsight[], now: Date, staleDays: number): StaleSource[] {
  const ageDays = (s: ScannedSource) => Math.floor((now.getTime() - Date.parse(s.created_at)) / DAY_MS);
  const fresh = new Set(sources.filter((s) => ageDays(s) < staleDays).map((s) => s.id));
  const cites = insights.map((i) => ({ insight: i, sources: citedBy(i) }));
  const out: StaleSource[] = [];
  for (const source of sources) {
    const age = ageDays(source);
    if (age < staleDays || source.processing_status === "pending") continue;
    const days = `${age} days old`;
    if (source.processing_status === "failed") {
      out.push({ sourceId: source.id, reason: "failed_extraction", severity: "low", ageDays: age, insightIds: [], detail: `“${source.title}” (${days}) failed extraction and was never reprocessed or removed.` });
      continue;
    }
    const citing = cites.filter((c) => c.sources.has(source.id));
    if (citing.length === 0) {
      out.push({ sourceId: source.id, reason: "never_synthesized", severity: "low", ageDays: age, insightIds: [], detail: `“${source.title}” (${days}) was never synthesized: no insight cites it.` });
      continue;
    }
    const active = citing.filter((c) => !c.insight.is_archived);
    if (active.length === 0) {
      out.push({
        sourceId: source.id, reason: "superseded", severity: "low", ageDays: age, insightIds: citing.map((c) => c.insight.id),
        detail: `“${source.title}” (${days}) is cited only by archived insights (${citing.length}).`,
      });
      continue;
    }
    // Insights resting on old research only: no source they cite is younger than staleDays.
    const aging = active.filter((c) => ![...c.sources].some((id) => fresh.has(id))).map((c) => c.insight);
    if (aging.length === 0) continue;
    const weighty = aging.filter((i) => i.severity === "high" || i.severity === "critical");
    out.push({
      sourceId: source.id,
      reason: "aging_evidence",
      severity: weighty.length ? "high" : "medium",
      ageDays: age,
      insightIds: aging.map((i) => i.id),
      detail:
        `“${source.title}” (${days}) is the newest evidence of ${aging.length} active insight${aging.length === 1 ? "" : "s"}` +
        `${weighty.length ? ` (${weighty.length} high or critical, e.g. “${weighty[0]!.title}”)` : ""}; no research from the last ${staleDays} days backs them.`,
    });
  }
  return out.sort((a, b) => RANK[b.severity] - RANK[a.severity] || b.ageDays - a.ageDays || a.sourceId.localeCompare(b.sourceId));
}
