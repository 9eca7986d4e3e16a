/**
 * Pre-flight reads of the harness (issue #21; spec 02 `harness_workspace_profile`): what the workspace holds (a
 * light snapshot: ids, titles and quotes, no vectors, no texts) and how good its copilot runs have been (the RQS the
 * post-flight stored on its recent agent runs). The snapshot also serves the mid-stream alerts (./alerts.ts), which
 * must answer at once: "is this quoted text in the workspace?" without a read per token batch.
 */
import { db } from "../db/service";
import { documentsOf } from "../document/listing";
import { normalise } from "./claims";
import { snapshotInsights } from "../insight/search";

/** The workspace as the harness sees it before a run. */
export interface WorkspaceSnapshot {
  counts: { sources: number; insights: number; recommendations: number; documents: number };
  /** Every id of the workspace's sources, insights, recommendations and documents. */
  ids: Set<string>;
  /** Normalised texts a quote may come from: insight quotes, titles and descriptions; recommendation, document and source titles. */
  texts: string[];
}

/** Workspace maturity, from what it holds (spec 02 "workspace maturity"). */
export type Maturity = "new" | "researching" | "synthesized" | "delivering";

/** The `harness_workspace_profile` payload. */
export interface WorkspaceProfile {
  maturity: Maturity;
  source_count: number;
  insight_count: number;
  recommendation_count: number;
  document_count: number;
  historical_quality: {
    /** Judged runs among the workspace's last HISTORY_RUNS agent runs. */
    runs_judged: number;
    /** Mean RQS (0–100) of those runs; null before the first judged run. */
    avg_rqs: number | null;
    contract_pass_rate: number | null;
    verifier_pass_rate: number | null;
    /** Judged runs that ended degraded (retries used up below the threshold). */
    degraded_runs: number;
  };
}

/** How many recent agent runs the historical quality covers. */
export const HISTORY_RUNS = 50;

const round = (x: number, d = 3) => Math.round(x * 10 ** d) / 10 ** d;

/**
 * Read the workspace's snapshot. The insights, which hold most of a workspace's text (descriptions and quotes), come
 * from the insights' search snapshot (core/insight/search.ts `snapshotInsights`): cached per container and exact as
 * of its head's version, so a warm run at thousands of insights reads one head item instead of every insight again.
 * Sources, recommendations and documents are three partition queries of their ids and titles only.
 * The caller has checked the user's membership.
 */
export async function snapshotOf(workspaceId: string): Promise<WorkspaceSnapshot> {
  const e = db().entities;
  const [sources, insights, recs, docs] = await Promise.all([
    e.researchSource.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", attributes: ["id", "title"] }),
    snapshotInsights(workspaceId),
    e.recommendation.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", attributes: ["id", "title"] }),
    documentsOf(workspaceId, { attributes: ["id", "title"] }),
  ]);
  const ids = new Set<string>();
  const texts: string[] = [];
  for (const s of sources.data) ids.add(s.id), texts.push(normalise(s.title ?? ""));
  for (const i of insights) {
    ids.add(i.id);
    texts.push(normalise(i.title ?? ""), normalise(i.description ?? ""), ...(i.quotes ?? []).map((q) => normalise(q.text)));
  }
  for (const r of recs.data) ids.add(r.id), texts.push(normalise(r.title ?? ""));
  for (const d of docs) ids.add(d.id), texts.push(normalise(d.title ?? ""));
  return {
    counts: { sources: sources.data.length, insights: insights.length, recommendations: recs.data.length, documents: docs.length },
    ids,
    texts: texts.filter(Boolean),
  };
}

/** Maturity from the counts: nothing yet, sources only, insights, or recommendations / documents. */
export function maturityOf(c: WorkspaceSnapshot["counts"]): Maturity {
  if (c.sources === 0 && c.insights === 0) return "new";
  if (c.insights === 0) return "researching";
  if (c.recommendations === 0 && c.documents === 0) return "synthesized";
  return "delivering";
}

/**
 * The workspace profile (`harness_workspace_profile`): maturity and counts from the snapshot, and the historical
 * quality of the last HISTORY_RUNS agent runs (one Query, newest first, the quality attributes only).
 */
export async function profileOf(workspaceId: string, snapshot: WorkspaceSnapshot | Promise<WorkspaceSnapshot>): Promise<WorkspaceProfile> {
  // The history is read while the snapshot is.
  const [{ data }, snap] = await Promise.all([
    db().entities.agentRun.query.byWorkspace({ workspace_id: workspaceId }).go({ order: "desc", limit: HISTORY_RUNS, attributes: ["rqs", "contract_passed", "verifier_passed", "quality"] }),
    snapshot,
  ]);
  snapshot = snap;
  const judged = data.filter((r) => typeof r.rqs === "number");
  const rate = (pick: (r: (typeof judged)[number]) => boolean | undefined) => (judged.length ? round(judged.filter((r) => pick(r) === true).length / judged.length) : null);
  return {
    maturity: maturityOf(snapshot.counts),
    source_count: snapshot.counts.sources,
    insight_count: snapshot.counts.insights,
    recommendation_count: snapshot.counts.recommendations,
    document_count: snapshot.counts.documents,
    historical_quality: {
      runs_judged: judged.length,
      avg_rqs: judged.length ? round(judged.reduce((s, r) => s + (r.rqs ?? 0), 0) / judged.length, 1) : null,
      contract_pass_rate: rate((r) => r.contract_passed),
      verifier_pass_rate: rate((r) => r.verifier_passed),
      degraded_runs: judged.filter((r) => (r.quality as { degraded?: boolean } | undefined)?.degraded === true).length,
    },
  };
}
