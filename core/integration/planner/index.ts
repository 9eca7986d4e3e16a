/**
 * The planner integration (spec 02 "Planner integration", prefix /api/integrations/planner): connect, callback,
 * disconnect, status, teams, teams/select, issues, links, sync. Linear through the `Planner` port (./linear.ts).
 */
import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { AppError } from "../../error";
import { db } from "../../db/service";
import { requireMember } from "../../workspace";
import * as Recommendation from "../../recommendation";
import * as OAuth from "../oauth";
import { ProviderError, toAppError, tokenError } from "../errors";
import { isConditionalFailure } from "../../db/errors";
import { logProviderFailure } from "../log";
import { sha256Hex as sha256, v4From } from "../ids";
import { deferJob, WORK_BUDGET_MS } from "../jobs";
import { markImplemented } from "../implemented";
import { markSynced, markSyncFailed, recordSyncedLink, unreadInRun } from "../links";
import type { IssueLinkEntity } from "../integration.entity";
import type { CallbackQuery, ConnectResult, SyncResult, WorkspaceQuery, LinksQuery } from "../schema";
import type { CreatePlannerIssueBody, PlannerLinkView, PlannerStatus, PlannerTeamList, SelectTeamBody } from "./schema";
import { linear, MAX_PAGE } from "./linear";
import { CLOSED_STATE_TYPES, type Planner, type PlannerIssue } from "./port";

export type { Planner, PlannerIssue } from "./port";
export { CLOSED_STATE_TYPES } from "./port";
type LinkItem = EntityItem<IssueLinkEntity>;
type IntegrationItem = OAuth.IntegrationItem;

/**
 * Run `fn` with the workspace's planner. A refused grant marks the integration for reconnection and answers
 * PLANNER_TOKEN_ERROR (424); other provider failures become their HTTP errors (rate limits 429 with Retry-After)
 * unless `raw` asks for the ProviderError itself (tools and queued work read it).
 * @throws AppError NO_ACTIVE_INTEGRATION (404), PLANNER_TOKEN_ERROR (424), RATE_LIMITED (429), ...
 */
export async function withPlanner<T>(workspaceId: string, fn: (planner: Planner, integration: IntegrationItem) => Promise<T>, opts: { raw?: boolean } = {}): Promise<T> {
  const grant = await OAuth.grantOf(workspaceId, "planner");
  try {
    return await fn(linear(grant.accessToken), grant.integration);
  } catch (err) {
    logProviderFailure("planner", workspaceId, err);
    if (err instanceof ProviderError && err.failure === "auth_expired") {
      await OAuth.markNeedsReconnect(grant.integration);
      throw tokenError("planner");
    }
    throw opts.raw ? err : toAppError("planner", err);
  }
}

/** `POST /connect` (spec 02). @throws AppError SERVICE_UNAVAILABLE (503) naming LINEAR_CLIENT_ID/_SECRET when unset */
export const connect = (userId: string, workspaceId: string): Promise<ConnectResult> => OAuth.connect(userId, "planner", workspaceId);

/** `GET /callback`: exchange (PKCE S256), store encrypted, read the viewer's user and organization; redirect. */
export const callback = (query: CallbackQuery) =>
  OAuth.callback("planner", query, async (token) => {
    const me = await linear(token).viewer();
    return { account: { user_name: me.user_name, user_email: me.user_email, org_name: me.org_name, org_logo_url: me.org_logo_url } };
  });

/** `DELETE /disconnect`: the integration and every planner link of the workspace are removed. */
export const disconnect = (userId: string, workspaceId: string) => OAuth.disconnect(userId, "planner", workspaceId);

/** `GET /status` (spec 02 status fields of the planner). */
export async function status(userId: string, q: WorkspaceQuery): Promise<PlannerStatus> {
  await requireMember(userId, q.workspace_id);
  const row = await OAuth.findIntegration(q.workspace_id, "planner");
  const account = (row?.account ?? {}) as { user_name?: string; org_name?: string; org_logo_url?: string | null };
  return {
    connected: Boolean(row?.is_active && row.token_ciphertext && !row.needs_reconnect),
    needs_reconnect: Boolean(row?.needs_reconnect),
    planner_user_name: account.user_name ?? null,
    planner_org_name: account.org_name ?? null,
    planner_org_logo_url: account.org_logo_url ?? null,
    selected_team_id: row?.selected_team_id ?? null,
    selected_team_name: row?.selected_team_name ?? null,
    selected_project_id: row?.selected_project_id ?? null,
    selected_project_name: row?.selected_project_name ?? null,
    last_synced_at: row?.last_synced_at ?? null,
  };
}

/** `GET /teams`: every team the account reaches, with its projects, workflow states (by position) and labels. */
export async function teams(userId: string, q: WorkspaceQuery): Promise<PlannerTeamList> {
  await requireMember(userId, q.workspace_id);
  return withPlanner(q.workspace_id, async (planner, row) => {
    const all = await planner.teams();
    return { teams: all.map((t) => ({ ...t, selected: t.id === row.selected_team_id })) };
  });
}

/**
 * `POST /teams/select`: saves the team (and optionally a project of it) that create, query and state resolution use.
 * Both are checked at Linear first, and their current names stored.
 * @throws AppError NO_ACTIVE_INTEGRATION (404, also when a disconnect lands while Linear is read); NOT_FOUND (404) for a team the account does not reach or a project
 *   that is not the team's
 */
export async function selectTeam(userId: string, body: SelectTeamBody) {
  await requireMember(userId, body.workspace_id);
  const team = await withPlanner(body.workspace_id, (planner) => planner.team(body.team_id));
  if (!team) throw new AppError("NOT_FOUND", `Linear team ${body.team_id} was not found for the connected account`);
  const project = body.project_id ? team.projects.find((p) => p.id === body.project_id) : undefined;
  if (body.project_id && !project) throw new AppError("NOT_FOUND", `Project ${body.project_id} is not a project of team ${team.name}`);
  const key = { workspace_id: body.workspace_id, kind: "planner" as const };
  const update = db().entities.integration.patch(key).set({
    selected_team_id: team.id, selected_team_name: team.name,
    ...(project ? { selected_project_id: project.id, selected_project_name: project.name } : {}),
  });
  try {
    await (project ? update : update.remove(["selected_project_id", "selected_project_name"])).go();
  } catch (err) {
    // A disconnect removed the integration while Linear was read: answer what a select on a disconnected one gets.
    if (!isConditionalFailure(err)) throw err;
    await OAuth.activeIntegration(body.workspace_id, "planner");
    throw err;
  }
  return { selected_team_id: team.id, selected_team_name: team.name, selected_project_id: project?.id ?? null, selected_project_name: project?.name ?? null };
}

/**
 * The team a call works in: the selected team, or the named one when it is the selected team.
 * @throws AppError NO_TEAM_SELECTED (422) when no team is selected, or another team is named; NO_ACTIVE_INTEGRATION (404)
 */
export async function selectedTeam(workspaceId: string, teamId?: string): Promise<{ teamId: string; teamName: string; projectId: string | null; projectName: string | null }> {
  const row = await OAuth.activeIntegration(workspaceId, "planner");
  if (!row.selected_team_id) throw new AppError("NO_TEAM_SELECTED", "No Linear team is selected; select one first (POST /api/integrations/planner/teams/select)");
  if (teamId && teamId !== row.selected_team_id) {
    throw new AppError("NO_TEAM_SELECTED", `Team ${teamId} is not the selected team (${row.selected_team_name ?? row.selected_team_id})`, { selected_team_id: row.selected_team_id });
  }
  return { teamId: row.selected_team_id, teamName: row.selected_team_name ?? row.selected_team_id, projectId: row.selected_project_id ?? null, projectName: row.selected_project_name ?? null };
}

export const toLinkView = (l: LinkItem): PlannerLinkView => ({
  id: l.id,
  recommendation_id: l.recommendation_id,
  issue_id: l.issue_id ?? "",
  identifier: l.identifier ?? "",
  issue_url: l.issue_url,
  title: l.title,
  state: l.state,
  state_type: l.state_type ?? null,
  last_synced_at: l.last_synced_at ?? null,
  created_at: l.created_at,
});

/** The planner's issue and comment ids (core/integration/ids.ts), re-exported for its agent tools. */
export { v4From };

/** Options of `createIssue` for an approved pending action: the issue's and link's ids derive from it. */
export interface IssueWriteOptions {
  /** The Linear issue id to create under (a replay finds the issue by it instead of creating a second one). */
  issueId?: string;
  linkId?: string;
  pendingActionId?: string;
}

/**
 * The issue `id` names, or a new one: what makes a retried create replay-safe. With an id, Linear is asked for that
 * issue first, and only created when it is absent.
 */
export async function createOrFind(planner: Planner, input: Parameters<Planner["createIssue"]>[0]): Promise<PlannerIssue> {
  if (input.id) {
    const found = await planner.getIssue(input.id);
    if (found) return found;
  }
  return planner.createIssue(input);
}

/**
 * `POST /issues`: an issue in the selected team for a recommendation of the workspace, and the link between them
 * (with the issue's current state and state type). The project falls back to the selected project; title and body
 * default to the recommendation's. An issue created in a completed or cancelled state moves the recommendation to
 * implemented (unless implemented or rejected).
 * - With an `issueId` (an approved pending action's), the issue is found by it or created under it, and linked under
 *   the action's link id.
 * - Without one (the HTTP route), the issue is created under an id hashed from the request's content (workspace,
 *   recommendation, team, project, title, body), and Linear is asked for that id first. Found and not linked yet, it
 *   is adopted: the retry of a request whose link write failed (a store error, a Lambda that died) answers that issue
 *   instead of creating a second. Found and linked, the same issue is asked for again on purpose: a new one is
 *   created under a random id. The link's id derives from the issue's.
 * @returns `{issue_url, issue_identifier, link_id}`
 * @throws AppError NO_TEAM_SELECTED (422); NOT_FOUND (404, recommendation); NO_ACTIVE_INTEGRATION (404);
 *   PLANNER_TOKEN_ERROR (424); RATE_LIMITED (429)
 */
export async function createIssue(userId: string, input: CreatePlannerIssueBody, opts: IssueWriteOptions = {}) {
  await requireMember(userId, input.workspace_id);
  const rec = await Recommendation.get(userId, input.recommendation_id);
  if (rec.workspace_id !== input.workspace_id) throw new AppError("NOT_FOUND", "Recommendation not found");
  const team = await selectedTeam(input.workspace_id, input.team_id);
  const projectId = input.project_id ?? team.projectId;
  const title = input.title ?? rec.title;
  const description = input.body ?? rec.description;
  const fields = {
    teamId: team.teamId, title, description,
    ...(projectId ? { projectId } : {}),
    labelIds: input.label_ids,
    ...(input.state_id ? { stateId: input.state_id } : {}),
    ...(input.priority !== undefined ? { priority: input.priority } : {}),
  };
  // A link's id derives from its issue's, so "is this issue linked?" is one read of a known key, and a retried write
  // of the same link replaces it instead of adding a second.
  const linkIdOf = (issueId: string) => v4From(sha256(`planner:${issueId}`));
  const issue = await withPlanner(input.workspace_id, async (planner) => {
    if (opts.issueId) return createOrFind(planner, { id: opts.issueId, ...fields });
    // JSON, not a joined string: no title or body can make two different requests hash alike.
    const id = v4From(sha256(JSON.stringify([input.workspace_id, rec.id, team.teamId, projectId ?? null, title, description])));
    const found = await planner.getIssue(id);
    if (!found) return planner.createIssue({ id, ...fields });
    const { data: link } = await db().entities.issueLink.get({ workspace_id: input.workspace_id, kind: "planner", recommendation_id: rec.id, id: linkIdOf(found.id) }).go({ consistent: true });
    return link ? planner.createIssue({ id: randomUUID(), ...fields }) : found;
  });
  const linkId = opts.linkId ?? linkIdOf(issue.id);
  await db().entities.issueLink.put({
    id: linkId, workspace_id: input.workspace_id, kind: "planner", recommendation_id: rec.id, issue_id: issue.id,
    identifier: issue.identifier, issue_url: issue.url, title: issue.title, state: issue.state?.name ?? "unknown",
    ...(issue.state ? { state_type: issue.state.type } : {}), created_by: userId,
    ...(opts.pendingActionId ? { pending_action_id: opts.pendingActionId } : {}),
  }).go();
  // An issue created (or found, on a replay) already completed or cancelled closes the recommendation now, as a sync
  // would (spec 02); after the link, so a failure here leaves the link for the next sync to catch up.
  if (issue.state && CLOSED_STATE_TYPES.includes(issue.state.type)) await markImplemented(userId, rec.id);
  return { issue_url: issue.url, issue_identifier: issue.identifier, link_id: linkId, issue };
}

/** `GET /links`: the recommendation's planner links, oldest first. */
export async function links(userId: string, q: LinksQuery): Promise<{ links: PlannerLinkView[] }> {
  await requireMember(userId, q.workspace_id);
  const { data } = await db().entities.issueLink.query.byWorkspace({ workspace_id: q.workspace_id, kind: "planner", recommendation_id: q.recommendation_id }).go({ pages: "all" });
  return { links: data.sort((a, b) => a.created_at.localeCompare(b.created_at)).map(toLinkView) };
}

/** Every planner link of a workspace. */
export async function allLinks(workspaceId: string): Promise<LinkItem[]> {
  const { data } = await db().entities.issueLink.query.byWorkspace({ workspace_id: workspaceId, kind: "planner" }).go({ pages: "all" });
  return data;
}

/**
 * Bring one link up to date with its issue as just read. Whenever the state's type is completed or cancelled, the
 * recommendation moves to implemented (a no-op when it is implemented or rejected; spec 02), whether or not the link
 * already recorded that state: a link created closed whose move failed after the link's write is caught up here. The
 * move comes before the link records a new state, so a crash in between is caught up by the next sync too.
 * @returns whether the link's state changed
 */
export async function applyIssue(userId: string, link: LinkItem, issue: PlannerIssue, now = new Date().toISOString()): Promise<boolean> {
  const stateType = issue.state?.type;
  const changed = (issue.state?.name ?? link.state) !== link.state || (stateType ?? undefined) !== (link.state_type ?? undefined);
  // Not only on a change: the link may have stored the closed state without the recommendation having moved.
  if (stateType && CLOSED_STATE_TYPES.includes(stateType)) await markImplemented(userId, link.recommendation_id);
  const written = await recordSyncedLink(link, {
    title: issue.title, issue_url: issue.url, identifier: issue.identifier, last_synced_at: now,
    ...(issue.state ? { state: issue.state.name, state_type: issue.state.type } : {}),
  });
  return written && changed;
}

/**
 * `POST /sync` (spec 02 "Planner integration"): refresh every planner link of the workspace with one batched GraphQL
 * query per 250 links (Linear counts requests and complexity per hour; one query per issue would spend both).
 * - Work budget: before each batch but the first, past `WORK_BUDGET_MS` (12 s, shared with the code-host and
 *   execution-ticket syncs) the rest is queued at once as a `planner.sync` job of the same run (`started_at`), so a
 *   request or a queued job stays well inside API Gateway's 29 s and the Lambda's timeout. A batch begun is finished.
 * - Rate limit: when Linear rate-limits a batch, the rest is queued with Linear's wait as the delay.
 * - An issue Linear no longer answers for (deleted, out of the grant's reach) keeps its link's last known state and
 *   is not counted; the link is noted as failed by this run (`sync_failed_run`), so the run's continuations do not
 *   read it again and the chain of continuations ends.
 * Counts are this invocation's only, as the code-host sync answers them: `synced_count` the links read and recorded
 * here, `updated_count` those of them whose state changed, `queued_count` the links left to the queued continuation
 * (an extra field beside the spec's two; 0 when the run finished here). A continuation answers nobody.
 * @param startedAt the run's start (ISO): links synced at or after it, or failed by the run begun then, are skipped
 *   (a queued continuation of the same sync)
 * @param opts.budgetMs the work budget, ms (default `WORK_BUDGET_MS`)
 * @returns `{synced_count, updated_count, queued_count}`
 * @throws AppError FORBIDDEN (403, not a member); NO_ACTIVE_INTEGRATION (404); PLANNER_TOKEN_ERROR (424);
 *   SERVICE_UNAVAILABLE (503) when Linear cannot be reached or no queue is configured
 */
export async function sync(userId: string, workspaceId: string, startedAt = new Date().toISOString(), opts: { budgetMs?: number } = {}): Promise<SyncResult> {
  const deadline = Date.now() + (opts.budgetMs ?? WORK_BUDGET_MS);
  await requireMember(userId, workspaceId);
  await OAuth.activeIntegration(workspaceId, "planner");
  // A link this run already tried and could not read (`sync_failed_run`) is not read again by its continuations.
  const pending = (await allLinks(workspaceId)).filter((l) => l.issue_id && unreadInRun(l, startedAt));
  let synced = 0;
  let updated = 0;
  let queued = 0;
  await withPlanner(workspaceId, async (planner) => {
    for (let i = 0; i < pending.length; i += MAX_PAGE) {
      if (i > 0 && Date.now() > deadline) {
        // Past the budget: the queue's consumer goes on with the links not synced since `startedAt` (nor failed by
        // this run: each run reads every link once, so the chain of continuations ends).
        queued = pending.length - i;
        await deferJob({ type: "planner.sync", workspace_id: workspaceId, user_id: userId, started_at: startedAt }, 1);
        return;
      }
      const chunk = pending.slice(i, i + MAX_PAGE);
      let issues: PlannerIssue[];
      try {
        issues = await planner.issuesByIds(chunk.map((l) => l.issue_id!));
      } catch (err) {
        if (!(err instanceof ProviderError) || err.failure !== "rate_limited") throw err;
        queued = pending.length - i;
        await deferJob({ type: "planner.sync", workspace_id: workspaceId, user_id: userId, started_at: startedAt }, err.retryAfterSeconds ?? 60);
        return;
      }
      const byId = new Map(issues.map((x) => [x.id, x]));
      for (const link of chunk) {
        const issue = byId.get(link.issue_id!);
        // An issue Linear no longer answers for (deleted, or out of the grant's reach) keeps its last known state.
        if (!issue) {
          await markSyncFailed(link, startedAt);
          continue;
        }
        if (await applyIssue(userId, link, issue)) updated++;
        synced++;
      }
    }
  });
  await markSynced(workspaceId, "planner");
  return { synced_count: synced, updated_count: updated, queued_count: queued };
}
