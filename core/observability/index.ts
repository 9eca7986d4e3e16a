/**
 * Admin observability (spec 02 "Admin observability (workspace membership required)"; issue #21;
 * docs/decisions.md "Admin observability"): agent runs, their stats, research quality (RQS), message feedback and
 * entropy, for a member of the workspace. Every read is a Query of a workspace partition or index; nothing Scans. The
 * run list and stats read the runs' slim index (gsi5), never the runs' inputs and outputs, except the page's.
 *
 * One rule decides which workspaces a figure covers: the headline figures are those of `workspace_id`; a list that
 * names workspaces (`worst_workspaces`, `recent_scans`) or a count of workspaces (`affected_workspaces`) ranges over
 * the workspaces the caller is a member of, so nobody sees another team's figures.
 */
import type { EntityItem } from "electrodb";
import { db } from "../db/service";
import { getAll } from "../db/bulk";
import { fitResponse } from "../response-size";
import { requireMember } from "../workspace";
import { feedbackOf } from "../chat";
import { answerIdsSince } from "../chat/answers";
import { recentScans } from "../entropy/scans";
import { AGENT_RUN_LIST_INDEX, type AgentRunEntity } from "../agent/agent-run.entity";
import { readIndexed } from "../db/slim-index";
import type {
  AgentRunsPage,
  AgentRunsQuery,
  AgentRunStats,
  AgentRunView,
  EntropyDashboard,
  FeedbackDashboard,
  ObservabilityWorkspaceQuery,
  QualityQuery,
  RqsDashboard,
} from "./schema";
import type { EntropyScan, EntropyTypeCount } from "../entropy/schema";
import pLimit from "p-limit";

export * from "./schema";

type RunItem = EntityItem<AgentRunEntity>;

/** Entries of a `worst_workspaces` list. */
const WORST = 5;
/** Entries of `recent_scans`, and scans read per workspace for it. */
const RECENT_SCANS = 10;
/** Entries of each top-tags list. */
const TOP_TAGS = 10;
/** Workspaces read at once when a figure covers all of the caller's. */
const CONCURRENCY = 4;

const round = (n: number, digits: number) => Math.round(n * 10 ** digits) / 10 ** digits;
const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

/** `items` mapped by `fn`, at most `CONCURRENCY` at a time, in order. */
const mapLimited = <T, R>(items: T[], fn: (t: T) => Promise<R>): Promise<R[]> => pLimit(CONCURRENCY).map(items, fn);

/** The workspaces the user is a member of, with their names (memberships by user, gsi2; then a batch get). */
async function memberWorkspaces(userId: string): Promise<{ id: string; name: string }[]> {
  const { data: memberships } = await db().entities.membership.query.byUser({ user_id: userId }).go({ pages: "all", attributes: ["workspace_id"] });
  if (memberships.length === 0) return [];
  // Through getAll: keys DynamoDB leaves unprocessed are read again, so no workspace drops out under throttling.
  const data = await getAll(memberships.map((m) => ({ id: m.workspace_id })), (keys) => db().entities.workspace.get(keys).go({ attributes: ["id", "name"] }));
  return data.map((w) => ({ id: w.id, name: w.name })).sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
}

/**
 * The window of a quality dashboard: the last `days` UTC days, today included.
 * @returns its first instant (ISO) and the days in order (YYYY-MM-DD)
 */
export function windowOf(days: number, now = new Date()): { since: string; dates: string[] } {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const dates = Array.from({ length: days }, (_, k) => new Date(today - (days - 1 - k) * 86_400_000).toISOString().slice(0, 10));
  return { since: `${dates[0]}T00:00:00.000Z`, dates };
}

/** The copilot's runs (core/agent/copilot.ts): their input is the prompt of a conversation only its owner may read. */
const COPILOT_TOOL = "agent_loop";

/**
 * A run as spec 02's Agent run, for `callerId`. A copilot run another member started shows no `input_data` (null):
 * its prompt and conversation id belong to a private conversation (spec 01: conversations are owner only, and
 * another member is not told one exists); its counts, cost and outcome are the workspace's.
 */
const toRunView = (r: RunItem, callerId: string): AgentRunView => ({
  id: r.id,
  workspace_id: r.workspace_id,
  agent_type: r.agent_type,
  tool_name: r.tool_name ?? null,
  input_data: r.tool_name === COPILOT_TOOL && r.user_id !== callerId ? null : (r.input_data ?? null),
  output_data: r.output_data ?? null,
  latency_ms: r.latency_ms,
  tokens_used: r.tokens_used,
  cost_usd: r.cost_usd,
  status: r.status,
  error_message: r.error_message ?? null,
  executed_at: r.executed_at,
});

/** What the runs' slim index (gsi5, `AGENT_RUN_LIST_INDEX`) gives of a run. */
type ListedRun = Pick<RunItem, "id" | "executed_at" | "status" | "agent_type" | "cost_usd"> & { tool_name?: string };

/**
 * Every run of the workspace as its slim index entry, newest first, optionally filtered (exact) by agent_type, status
 * and tool_name: one Query of gsi5 (filters applied by DynamoDB), paged through, beside a read of the workspace's
 * index mark; without the mark, the runs of the partition as the backfill read them (core/db/slim-index.ts). An entry
 * is a few hundred bytes; a run itself keeps up to 40,000 characters of input and output.
 */
async function listedRuns(workspaceId: string, f: Partial<Pick<AgentRunsQuery, "agent_type" | "status" | "tool_name">> = {}): Promise<ListedRun[]> {
  const query = db().entities.agentRun.query.listed({ workspace_id: workspaceId });
  const filtered = f.agent_type || f.status || f.tool_name;
  const read = await readIndexed(AGENT_RUN_LIST_INDEX, workspaceId, async () =>
    (
      await (filtered
        ? query.where((a, op) =>
            [f.agent_type ? op.eq(a.agent_type, f.agent_type) : "", f.status ? op.eq(a.status, f.status) : "", f.tool_name ? op.eq(a.tool_name, f.tool_name) : ""]
              .filter(Boolean)
              .join(" AND "),
          )
        : query
      ).go({ order: "desc", pages: "all", attributes: ["id", "executed_at", "status", "agent_type", "tool_name", "cost_usd"] })
    ).data as ListedRun[],
  );
  if (read.marked) return read.data;
  return (read.items as unknown as ListedRun[])
    .filter((r) => (!f.agent_type || r.agent_type === f.agent_type) && (!f.status || r.status === f.status) && (!f.tool_name || r.tool_name === f.tool_name))
    .sort((a, b) => b.executed_at.localeCompare(a.executed_at) || b.id.localeCompare(a.id));
}

/**
 * `GET /api/admin/agent-runs` (spec 02): the workspace's agent runs, newest first, filtered by agent_type, status and
 * tool_name (exact), paged by limit (default 50, max 100) and offset. Counted and filtered on the runs' slim index
 * (gsi5: a few hundred bytes a run, not its input and output); the page's runs are then fetched whole in one batch get.
 * @returns {runs, total, limit, offset}, each run with exactly spec 02's Agent run fields
 * @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function listRuns(userId: string, q: AgentRunsQuery): Promise<AgentRunsPage> {
  await requireMember(userId, q.workspace_id);
  const keys = await listedRuns(q.workspace_id, q);
  const page = keys.slice(q.offset, q.offset + q.limit);
  let runs: AgentRunView[] = [];
  if (page.length) {
    // Every key read (unprocessed ones asked again), then put back in the listing's order.
    const rows = await getAll(page.map((k) => ({ workspace_id: q.workspace_id, executed_at: k.executed_at, id: k.id })), (k) => db().entities.agentRun.get(k).go());
    const byId = new Map(rows.map((r) => [r.id, r as RunItem]));
    // Cut to what one answer may carry (each run's input and output hold up to 20,000 characters): `total` still
    // counts every match, and the next page starts at offset plus the runs given.
    runs = fitResponse(page.map((k) => byId.get(k.id)).filter((r): r is RunItem => r !== undefined).map((r) => toRunView(r, userId)));
  }
  return { runs, total: keys.length, limit: q.limit, offset: q.offset };
}

/**
 * `GET /api/admin/agent-runs/stats` (spec 02): counts and cost of every run of the workspace, all time, from the runs'
 * slim index (gsi5), which carries each run's type, status and cost.
 * @returns total_runs, total_cost_usd (USD, 6 decimals), runs_by_type and runs_by_status (only values that occur)
 * @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function runStats(userId: string, q: ObservabilityWorkspaceQuery): Promise<AgentRunStats> {
  await requireMember(userId, q.workspace_id);
  const data = await listedRuns(q.workspace_id);
  const runs_by_type: Record<string, number> = {};
  const runs_by_status: Record<string, number> = {};
  let cost = 0;
  for (const r of data) {
    runs_by_type[r.agent_type] = (runs_by_type[r.agent_type] ?? 0) + 1;
    runs_by_status[r.status] = (runs_by_status[r.status] ?? 0) + 1;
    cost += r.cost_usd ?? 0;
  }
  return { total_runs: data.length, total_cost_usd: round(cost, 6), runs_by_type, runs_by_status };
}

/** A judged run's quality fields (written by the harness's post-flight, issue #21 point 1). */
interface Judged {
  agent_type: RunItem["agent_type"];
  executed_at: string;
  rqs: number;
  contract_passed?: boolean;
  verifier_passed?: boolean;
}

/** The workspace's runs in the window that the harness judged (those with an `rqs`), from one projected Query. */
async function judgedRuns(workspaceId: string, since: string): Promise<Judged[]> {
  const { data } = await db()
    .entities.agentRun.query.byWorkspace({ workspace_id: workspaceId })
    // A range within `agentrun#`: `gte` alone would run on into the items sorted after the runs.
    .between({ executed_at: since }, { executed_at: "9999" })
    .where((a, op) => op.exists(a.rqs))
    .go({ pages: "all", attributes: ["agent_type", "executed_at", "rqs", "contract_passed", "verifier_passed"] });
  return data.filter((r) => typeof r.rqs === "number") as Judged[];
}

/** Average RQS and pass rates of a set of judged runs (rates over the runs that carry the flag). */
function qualityOf(runs: Judged[]) {
  const passRate = (flag: "contract_passed" | "verifier_passed") => {
    const judged = runs.filter((r) => typeof r[flag] === "boolean");
    return judged.length ? judged.filter((r) => r[flag]).length / judged.length : null;
  };
  return {
    avgRqs: runs.length ? round(mean(runs.map((r) => r.rqs)), 1) : null,
    contract: passRate("contract_passed"),
    verifier: passRate("verifier_passed"),
    verifierFails: runs.filter((r) => r.verifier_passed === false).length,
  };
}

/**
 * `GET /api/admin/quality/rqs` (spec 02): research quality of the workspace's judged runs (those the harness scored)
 * over the last `days` UTC days (7, 30 or 90): the mean RQS (0–100, 1 decimal), contract and verifier pass rates
 * (0–1, 4 decimals), a daily trend (percentages, 1 decimal; nulls on days without judged runs), the mean per agent
 * type, and the caller's five workspaces with the lowest mean.
 * @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function rqsDashboard(userId: string, q: QualityQuery, now = new Date()): Promise<RqsDashboard> {
  await requireMember(userId, q.workspace_id);
  const { since, dates } = windowOf(q.days, now);
  const scope = await memberWorkspaces(userId);
  const perWorkspace = await mapLimited(scope, async (w) => ({ w, runs: await judgedRuns(w.id, since) }));
  const runs = perWorkspace.find((p) => p.w.id === q.workspace_id)?.runs ?? (await judgedRuns(q.workspace_id, since));
  const overall = qualityOf(runs);
  const pctOf = (r: number | null) => (r === null ? null : round(r * 100, 1));
  const byDay = new Map<string, Judged[]>();
  for (const r of runs) byDay.set(r.executed_at.slice(0, 10), [...(byDay.get(r.executed_at.slice(0, 10)) ?? []), r]);
  const byType = new Map<Judged["agent_type"], number[]>();
  for (const r of runs) byType.set(r.agent_type, [...(byType.get(r.agent_type) ?? []), r.rqs]);
  return {
    avg_rqs: overall.avgRqs,
    contract_pass_rate: overall.contract === null ? null : round(overall.contract, 4),
    verifier_pass_rate: overall.verifier === null ? null : round(overall.verifier, 4),
    daily_trend: dates.map((date) => {
      const day = qualityOf(byDay.get(date) ?? []);
      return { date, avg_rqs: day.avgRqs, contract_pass_pct: pctOf(day.contract), verifier_pass_pct: pctOf(day.verifier) };
    }),
    by_agent_type: [...byType].map(([agent_type, scores]) => ({ agent_type, avg_rqs: round(mean(scores), 1) })).sort((a, b) => a.agent_type.localeCompare(b.agent_type)),
    worst_workspaces: perWorkspace
      .filter((p) => p.runs.length > 0)
      .map(({ w, runs: rs }) => {
        const qy = qualityOf(rs);
        return { workspace_id: w.id, workspace_name: w.name, avg_rqs: qy.avgRqs!, run_count: rs.length, verifier_fail_count: qy.verifierFails };
      })
      .sort((a, b) => a.avg_rqs - b.avg_rqs || b.verifier_fail_count - a.verifier_fail_count || a.workspace_name.localeCompare(b.workspace_name))
      .slice(0, WORST),
  };
}

/** Tag counts, most used first (ties alphabetical), at most `TOP_TAGS`; tags compared trimmed and lower-cased. */
function topTags(tagLists: string[][]): { tag: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const tags of tagLists) for (const tag of new Set(tags.map((t) => t.trim().toLowerCase()).filter(Boolean))) counts.set(tag, (counts.get(tag) ?? 0) + 1);
  return [...counts].map(([tag, count]) => ({ tag, count })).sort((a, b) => b.count - a.count || a.tag.localeCompare(b.tag)).slice(0, TOP_TAGS);
}

/** Feedback of a workspace given in the window (gsi3 by date), all of it. */
const feedbackSince = (workspaceId: string, since: string) => feedbackOf(workspaceId, { since, limit: Number.MAX_SAFE_INTEGER });

/**
 * `GET /api/admin/quality/feedback` (spec 02): what members thought of the copilot's answers over the last `days` UTC
 * days (default 30), from message feedback (thumbs up or down with tags; core/chat): the positive rate (0–1, 4
 * decimals), the mean rating with positive = 1 and negative = -1 (3 decimals), ratings given in the window, assistant
 * messages written in the window that nobody rated, a daily trend, the ten most used tags of each rating, and the
 * caller's five workspaces with the lowest positive rate. The answers are counted on their slim index
 * (core/chat/answers.ts): a key range on their creation time, ids only, whatever the messages weigh.
 * @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function feedbackDashboard(userId: string, q: QualityQuery, now = new Date()): Promise<FeedbackDashboard> {
  await requireMember(userId, q.workspace_id);
  const { since, dates } = windowOf(q.days, now);
  const scope = await memberWorkspaces(userId);
  const [perWorkspace, answers] = await Promise.all([
    mapLimited(scope, async (w) => ({ w, ratings: await feedbackSince(w.id, since) })),
    // Assistant messages of the window, by id from their slim index (not the messages themselves: up to ~400 KB
    // each): feedback on them cannot be older than they are, so the window's feedback tells which were rated.
    answerIdsSince(q.workspace_id, since),
  ]);
  const ratings = perWorkspace.find((p) => p.w.id === q.workspace_id)?.ratings ?? (await feedbackSince(q.workspace_id, since));
  const positive = ratings.filter((r) => r.rating === "positive");
  const negative = ratings.filter((r) => r.rating === "negative");
  const rated = new Set(ratings.map((r) => r.message_id));
  const perDay = (list: typeof ratings, date: string) => list.filter((r) => r.created_at.slice(0, 10) === date).length;
  return {
    positive_rate: ratings.length ? round(positive.length / ratings.length, 4) : null,
    avg_rating: ratings.length ? round((positive.length - negative.length) / ratings.length, 3) : null,
    rated_count: ratings.length,
    unrated_count: answers.filter((id) => !rated.has(id)).length,
    daily_trend: dates.map((date) => ({ date, positive_count: perDay(positive, date), negative_count: perDay(negative, date) })),
    top_positive_tags: topTags(positive.map((r) => r.tags)),
    top_negative_tags: topTags(negative.map((r) => r.tags)),
    worst_workspaces: perWorkspace
      .filter((p) => p.ratings.length > 0)
      .map(({ w, ratings: rs }) => ({
        workspace_id: w.id,
        workspace_name: w.name,
        positive_rate: round(rs.filter((r) => r.rating === "positive").length / rs.length, 4),
        total_rated: rs.length,
      }))
      .sort((a, b) => a.positive_rate - b.positive_rate || b.total_rated - a.total_rated || a.workspace_name.localeCompare(b.workspace_name))
      .slice(0, WORST),
  };
}

/** Severity counts of a scan, from its `by_type`. */
const countsOf = (scan: EntropyScan) => {
  const of = (severity: EntropyTypeCount["severity"]) => scan.by_type.filter((t) => t.severity === severity).reduce((s, t) => s + t.count, 0);
  return { high: of("high"), medium: of("medium"), low: of("low") };
};

/**
 * `GET /api/admin/quality/entropy` (spec 02; core/entropy): the active issues of the workspace (those of its latest
 * scan; none before the first scan) by type and severity, how many of the caller's workspaces have issues, the five
 * worst of them, and their ten newest scans. Reads only stored scans: `POST /api/admin/quality/entropy/scan` or the
 * scheduled scanner makes them.
 * @throws AppError FORBIDDEN (403) for a non-member.
 */
export async function entropyDashboard(userId: string, q: ObservabilityWorkspaceQuery): Promise<EntropyDashboard> {
  await requireMember(userId, q.workspace_id);
  const scope = await memberWorkspaces(userId);
  const perWorkspace = await mapLimited(scope, async (w) => ({ w, scans: await recentScans(w.id, RECENT_SCANS) }));
  const latest = perWorkspace.find((p) => p.w.id === q.workspace_id)?.scans[0] ?? (await recentScans(q.workspace_id, 1))[0];
  const withIssues = perWorkspace.filter((p) => (p.scans[0]?.issue_count ?? 0) > 0);
  return {
    total_active_issues: latest?.issue_count ?? 0,
    high_severity_count: latest?.high_severity_count ?? 0,
    affected_workspaces: withIssues.length,
    by_type: latest?.by_type ?? [],
    worst_workspaces: withIssues
      .map(({ w, scans }) => {
        const c = countsOf(scans[0]!);
        return { workspace_id: w.id, workspace_name: w.name, high_count: c.high, medium_count: c.medium, low_count: c.low, last_scanned_at: scans[0]!.scanned_at };
      })
      .sort((a, b) => b.high_count - a.high_count || b.medium_count - a.medium_count || b.low_count - a.low_count || a.workspace_name.localeCompare(b.workspace_name))
      .slice(0, WORST),
    recent_scans: perWorkspace
      .flatMap(({ w, scans }) => scans.map((s) => ({ workspace_id: w.id, workspace_name: w.name, scanned_at: s.scanned_at, issue_count: s.issue_count, high_severity_count: s.high_severity_count })))
      .sort((a, b) => b.scanned_at.localeCompare(a.scanned_at) || a.workspace_id.localeCompare(b.workspace_id))
      .slice(0, RECENT_SCANS),
  };
}
