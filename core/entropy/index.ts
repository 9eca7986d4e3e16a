/**
 * The entropy scanner (issue #21; spec 02 Admin observability, entropy; docs/decisions.md "Entropy scanner"): finds
 * what makes a workspace's knowledge decay, stale sources and contradictory insights, and stores each scan with its
 * issues in the workspace partition. Run on demand (`POST /api/admin/quality/entropy/scan`), by the scheduled scanner
 * (functions/events/entropy-scanner.ts, `scanDue`) and by the overnight research cycle (`scanWorkspace`).
 */
import { randomUUID } from "node:crypto";
import { v5 as uuidv5 } from "uuid";
import type { EntityItem } from "electrodb";
import { AppError } from "../error";
import { db } from "../db/service";
import { writeAll } from "../db/bulk";
import { embedder as defaultEmbedder } from "../ai/select";
import { decodeVector } from "../ai/vectors";
import type { Embedder } from "../ai/ports";
import { tryLock } from "../agent";
import { requireMember } from "../workspace";
import { findContradictions, type ScannedInsight } from "./contradictions";
import { findStaleSources } from "./stale";
import { EntropySettings, MAX_ISSUE_INSIGHT_IDS, MAX_ISSUES_PER_TYPE } from "./settings";
import type { EntropyIssueEntity } from "./entropy.entity";
import { recentScans, toScanView, type ScanItem } from "./scans";
import type {
  EntropyIssue,
  EntropyIssueList,
  EntropyIssuesQuery,
  EntropyIssueType,
  EntropyScan,
  EntropyScanInput,
  EntropyScanResult,
  EntropySeverity,
} from "./schema";

export * from "./schema";
// The scans' reads live in scans.ts (without the scanner's NLP, for the observability dashboards).
export { recentScans, toScanView } from "./scans";
export { EntropySettings, ENTROPY_SCAN_CRON, ENTROPY_SCAN_SCHEDULE } from "./settings";

type IssueItem = EntityItem<EntropyIssueEntity>;

/** Issue ids are UUID v5 of the issue's kind and subject, so one stale source or one pair keeps its id across scans. */
const ISSUE_NAMESPACE = "8f0d3c1e-5b7a-4e26-9c4d-2a61f3b8e0d5";
/** How long a scan may hold its workspace's scan lock, seconds (a crashed scan frees it then). */
const SCAN_LOCK_SECONDS = 300;
const SEVERITIES: EntropySeverity[] = ["high", "medium", "low"];
const TYPES: EntropyIssueType[] = ["stale_source", "contradictory_insights"];

/** What started a scan and what it runs with. */
export interface ScanOptions {
  trigger?: EntropyScan["trigger"];
  /** The member who asked (on-demand scans). */
  requestedBy?: string;
  /** The scan's time (default now): sources are aged against it. */
  now?: Date;
  /** The embedder comparing insights (default the configured one, core/ai/select); null: rules on shared words only. */
  embedder?: Embedder | null;
}

const toIssueView = (i: IssueItem): EntropyIssue => ({
  id: i.id,
  scan_id: i.scan_id,
  workspace_id: i.workspace_id,
  issue_type: i.issue_type,
  severity: i.severity,
  detail: i.detail,
  source_id: i.source_id ?? null,
  insight_ids: i.insight_ids ?? [],
  evidence: (i.evidence ?? {}) as Record<string, unknown>,
  detected_at: i.detected_at,
});

const bySeverity = (a: { severity: EntropySeverity }, b: { severity: EntropySeverity }) => SEVERITIES.indexOf(a.severity) - SEVERITIES.indexOf(b.severity);

/** The workspace's sources and insights, only the fields the detectors read (one Query each, no Scan). */
async function loadWorkspace(workspaceId: string) {
  const e = db().entities;
  const [sources, insights] = await Promise.all([
    e.researchSource.query
      .byWorkspace({ workspace_id: workspaceId })
      .go({ pages: "all", attributes: ["id", "title", "processing_status", "created_at"] }),
    e.insight.query
      .byWorkspace({ workspace_id: workspaceId })
      .go({ pages: "all", attributes: ["id", "title", "description", "severity", "is_archived", "source_ids", "quotes", "vector", "embedder_id"] }),
  ]);
  return { sources: sources.data, insights: insights.data };
}

/** The configured embedder, or null when it cannot be loaded (the scan then compares shared words only). */
async function availableEmbedder(): Promise<Embedder | null> {
  try {
    return await defaultEmbedder();
  } catch {
    return null;
  }
}

/**
 * Vectors of the active insights: stored ones made by `emb`, the rest embedded now (`title. description`, as insight
 * search embeds them). Not written back: the scan writes only its own items.
 * @returns one vector per insight, or null when there is no embedder or embedding failed.
 */
async function vectorsOf(insights: { title: string; description: string; vector?: string; embedder_id?: string }[], emb: Embedder | null): Promise<Float32Array[] | null> {
  if (!emb || insights.length === 0) return null;
  const out: (Float32Array | undefined)[] = insights.map((i) => (i.vector && i.embedder_id === emb.id ? decodeVector(i.vector, emb.dimensions) : undefined));
  const missing = out.flatMap((v, k) => (v ? [] : [k]));
  if (missing.length) {
    try {
      const made = await emb.embed(missing.map((k) => `${insights[k]!.title}. ${insights[k]!.description}`));
      missing.forEach((k, n) => (out[k] = made[n]));
    } catch {
      return null;
    }
  }
  return out as Float32Array[];
}

/** Put items in batches, retrying what DynamoDB leaves unprocessed (throttling) a few times (core/db/bulk.ts). */
function putAll(items: IssueItem[]): Promise<void> {
  return writeAll(items, (left) => db().entities.entropyIssue.put(left).go(), (k: { scan_id: string; id: string }) => `${k.scan_id}#${k.id}`);
}

/**
 * Scan one workspace for entropy and store the scan (issue #21): stale sources (core/entropy/stale.ts) and
 * contradictory insights among the active ones (core/entropy/contradictions.ts: embeddings from core/ai for candidate
 * pairs, negation and opposite-scale rules to decide). Reads the workspace partition only (no Scan), writes its issues
 * and then the scan item, so a visible scan always has all its issues. Does not check membership: the admin endpoint
 * (`scanOnDemand`) does; the scheduled scanner and the overnight cycle call this directly.
 * @param workspaceId the workspace (one that does not exist scans as empty)
 * @returns the stored scan (counts, `by_type`) and its issues, high first
 */
export async function scanWorkspace(workspaceId: string, opts: ScanOptions = {}): Promise<EntropyScanResult> {
  const started = performance.now();
  const now = opts.now ?? new Date();
  const scanId = randomUUID();
  const scannedAt = now.toISOString();
  const { sources, insights } = await loadWorkspace(workspaceId);
  const active = insights.filter((i) => !i.is_archived);
  const emb = opts.embedder === undefined ? await availableEmbedder() : opts.embedder;
  const vectors = await vectorsOf(active, emb);

  const stale = findStaleSources(
    sources.map((s) => ({ id: s.id, title: s.title, processing_status: s.processing_status, created_at: s.created_at })),
    insights.map((i) => ({ id: i.id, title: i.title, severity: i.severity, is_archived: i.is_archived, source_ids: i.source_ids ?? [], quotes: i.quotes ?? [] })),
    now,
    EntropySettings.staleSourceDays(),
  );
  const scanned: ScannedInsight[] = active.map((i, k) => ({ id: i.id, title: i.title, description: i.description, severity: i.severity, vector: vectors?.[k] }));
  const contradictions = findContradictions(scanned, { minSimilarity: EntropySettings.contradictionMinSimilarity() });

  const ttl = Math.floor(now.getTime() / 1000) + Math.round(EntropySettings.retentionDays() * 86_400);
  const base = { workspace_id: workspaceId, scan_id: scanId, detected_at: scannedAt, ttl };
  const issues: IssueItem[] = [
    ...stale.slice(0, MAX_ISSUES_PER_TYPE).map((s) => ({
      ...base,
      id: uuidv5(`${workspaceId}:stale_source:${s.sourceId}`, ISSUE_NAMESPACE),
      issue_type: "stale_source" as const,
      severity: s.severity,
      detail: s.detail,
      source_id: s.sourceId,
      insight_ids: s.insightIds.slice(0, MAX_ISSUE_INSIGHT_IDS),
      evidence: { reason: s.reason, age_days: s.ageDays, stale_after_days: EntropySettings.staleSourceDays(), insight_count: s.insightIds.length },
    })),
    ...contradictions.slice(0, MAX_ISSUES_PER_TYPE).map((c) => ({
      ...base,
      id: uuidv5(`${workspaceId}:contradictory_insights:${c.insightIds.join(":")}`, ISSUE_NAMESPACE),
      issue_type: "contradictory_insights" as const,
      severity: c.severity,
      detail: c.detail,
      insight_ids: c.insightIds,
      evidence: { similarity: c.similarity, rules: c.rules, compared_by: vectors ? "embedding" : "shared_words" },
    })),
  ].sort(bySeverity);
  const count = (type: EntropyIssueType, severity: EntropySeverity) => issues.filter((i) => i.issue_type === type && i.severity === severity).length;
  const byType = TYPES.flatMap((issue_type) => SEVERITIES.map((severity) => ({ issue_type, severity, count: count(issue_type, severity) }))).filter((c) => c.count > 0);

  if (issues.length) await putAll(issues);
  const { data: scan } = await db()
    .entities.entropyScan.create({
      id: scanId,
      workspace_id: workspaceId,
      scanned_at: scannedAt,
      trigger: opts.trigger ?? "on_demand",
      ...(opts.requestedBy ? { requested_by: opts.requestedBy } : {}),
      insight_count: active.length,
      source_count: sources.length,
      issue_count: issues.length,
      high_count: issues.filter((i) => i.severity === "high").length,
      medium_count: issues.filter((i) => i.severity === "medium").length,
      low_count: issues.filter((i) => i.severity === "low").length,
      by_type: byType,
      truncated: stale.length > MAX_ISSUES_PER_TYPE || contradictions.length > MAX_ISSUES_PER_TYPE,
      duration_ms: Math.round(performance.now() - started),
      ...(vectors && emb ? { embedder_id: emb.id } : {}),
      ttl,
    })
    .go();
  return { scan: toScanView(scan as ScanItem), issues: issues.map(toIssueView) };
}

/**
 * `POST /api/admin/quality/entropy/scan` (ours; issue #21): scan the workspace now, for a member. One scan of a
 * workspace runs at a time (a lock that a crashed scan frees after 5 minutes).
 * @throws AppError FORBIDDEN (403) for a non-member; CONFLICT (409) while another scan of the workspace runs.
 */
export async function scanOnDemand(userId: string, input: EntropyScanInput): Promise<EntropyScanResult> {
  await requireMember(userId, input.workspace_id);
  const release = await tryLock(`entropy#${input.workspace_id}`, "scan", SCAN_LOCK_SECONDS);
  if (!release) throw new AppError("CONFLICT", "An entropy scan of this workspace is already running; its result will be in the dashboard shortly");
  try {
    return await scanWorkspace(input.workspace_id, { trigger: "on_demand", requestedBy: userId });
  } finally {
    await release();
  }
}

/**
 * `GET /api/admin/quality/entropy/issues` (ours): the workspace's active issues, those of its latest scan, high
 * first, optionally of one type or severity.
 * @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function activeIssues(userId: string, q: EntropyIssuesQuery): Promise<EntropyIssueList> {
  await requireMember(userId, q.workspace_id);
  const [scan] = await recentScans(q.workspace_id, 1);
  if (!scan) return { scan: null, issues: [], total: 0 };
  const { data } = await db().entities.entropyIssue.query.byScan({ workspace_id: q.workspace_id, scan_id: scan.id }).go({ pages: "all" });
  const issues = data
    .map(toIssueView)
    .filter((i) => (!q.issue_type || i.issue_type === q.issue_type) && (!q.severity || i.severity === q.severity))
    .sort((a, b) => bySeverity(a, b) || a.id.localeCompare(b.id));
  return { scan, issues, total: issues.length };
}

/** What one run of the scheduled scanner did. */
export interface ScanDueReport {
  /** Workspaces looked at (owned by active users). */
  workspaces: number;
  scanned: number;
  /** Scanned recently enough (`ENTROPY_SCAN_INTERVAL_HOURS`), or being scanned by someone else. */
  skipped: number;
  /** Left for the next run because the time budget ran out. */
  deferred: number;
  errors: { workspaceId: string; error: unknown }[];
}

/** How many workspaces' last scans the scheduled scanner reads at a time (one Query each). */
const LAST_SCAN_READS = 8;

/**
 * The scheduled scanner's work (functions/events/entropy-scanner.ts): every workspace owned by an active user (users
 * by access status, gsi3, then their owner memberships, gsi2: Queries, no Scan) whose last scan is older than
 * `ENTROPY_SCAN_INTERVAL_HOURS` is scanned, the longest unscanned first: never scanned, then by their last scan, oldest
 * first. It first reads each workspace's last scan (one Query of its partition, limit 1), then scans in that order and
 * stops starting scans once its time is up; the rest wait for the next run, where they come first (the owners' order
 * would leave the same tail waiting every day while the head, due again each day, took the run's time). A failing
 * workspace is reported and skipped.
 * @param opts.timeLeftMs time left to start scans (the handler: the Lambda's remaining time less a margin); default
 *   `budgetMs` (default ten minutes) from the start
 */
export async function scanDue(opts: { now?: Date; budgetMs?: number; timeLeftMs?: () => number } = {}): Promise<ScanDueReport> {
  const started = Date.now();
  const budget = opts.budgetMs ?? 10 * 60_000;
  const timeLeft = opts.timeLeftMs ?? (() => started + budget - Date.now());
  const now = opts.now ?? new Date();
  const dueBefore = new Date(now.getTime() - EntropySettings.scanIntervalHours() * 3_600_000).toISOString();
  const report: ScanDueReport = { workspaces: 0, scanned: 0, skipped: 0, deferred: 0, errors: [] };
  /** When the workspace was last scanned (null: never); due when that is at least the interval ago. */
  const lastScanAt = async (workspaceId: string): Promise<string | null> => (await recentScans(workspaceId, 1))[0]?.scanned_at ?? null;
  const isDue = (last: string | null) => last === null || last <= dueBefore;
  const e = db().entities;
  const owned = new Set<string>();
  let cursor: string | null = null;
  do {
    const page: { data: { id: string }[]; cursor: string | null } = await e.user.query
      .byAccessStatus({ access_status: "active" })
      .go({ cursor, attributes: ["id"] });
    cursor = page.cursor;
    for (const user of page.data) {
      const { data } = await e.membership.query
        .byUser({ user_id: user.id })
        .where((a, op) => op.eq(a.role, "owner"))
        .go({ pages: "all", attributes: ["workspace_id"] });
      for (const { workspace_id } of data) owned.add(workspace_id);
    }
  } while (cursor);
  report.workspaces = owned.size;

  // Each workspace's last scan, a few at a time: the due ones, never scanned first, then the oldest scan first.
  const due: { workspaceId: string; last: string | null }[] = [];
  const queue = [...owned];
  const read = async () => {
    for (let ws = queue.shift(); ws; ws = queue.shift()) {
      try {
        const last = await lastScanAt(ws);
        if (isDue(last)) due.push({ workspaceId: ws, last });
        else report.skipped++;
      } catch (error) {
        report.errors.push({ workspaceId: ws, error });
      }
    }
  };
  await Promise.all(Array.from({ length: LAST_SCAN_READS }, read));
  due.sort((a, b) => (a.last ?? "").localeCompare(b.last ?? "") || a.workspaceId.localeCompare(b.workspaceId));

  for (const { workspaceId } of due) {
    if (timeLeft() <= 0) {
      report.deferred++;
      continue;
    }
    try {
      const release = await tryLock(`entropy#${workspaceId}`, "scan", SCAN_LOCK_SECONDS);
      if (!release) {
        report.skipped++;
        continue;
      }
      try {
        // Read again under the lock: another run may have scanned it since its last scan was read above.
        if (!isDue(await lastScanAt(workspaceId))) {
          report.skipped++;
          continue;
        }
        await scanWorkspace(workspaceId, { trigger: "scheduled", now });
        report.scanned++;
      } finally {
        await release();
      }
    } catch (error) {
      report.errors.push({ workspaceId, error });
    }
  }
  return report;
}
