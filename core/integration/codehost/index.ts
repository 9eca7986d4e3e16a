/**
 * The code-host integration (spec 02 "Code-host integration", prefix /api/integrations/codehost): connect, callback,
 * disconnect, status, repos, repos/select, issues, links, sync. GitHub through the `CodeHost` port (./github.ts).
 */
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
import { markSyncFailed, markSynced, recordSyncedLink, unreadInRun } from "../links";
import type { IssueLinkEntity } from "../integration.entity";
import type {
  CallbackQuery,
  CodehostLinkView,
  CodehostStatus,
  ConnectResult,
  CreateIssueBody,
  LinksQuery,
  ReposQuery,
  SelectReposBody,
  SyncResult,
  WorkspaceQuery,
} from "../schema";
import { github } from "./github";
import type { CodeHost } from "./port";

export type { CodeHost } from "./port";
type LinkItem = EntityItem<IssueLinkEntity>;

/**
 * Run `fn` with the workspace's code host. A refused grant marks the integration for reconnection and answers
 * CODEHOST_TOKEN_ERROR (424); other provider failures become their HTTP errors (rate limits 429 with Retry-After)
 * unless `raw` asks for the ProviderError itself (queued work reads its retry-after).
 * @throws AppError NO_ACTIVE_INTEGRATION (404), CODEHOST_TOKEN_ERROR (424), RATE_LIMITED (429), ...
 */
export async function withCodeHost<T>(workspaceId: string, fn: (host: CodeHost, login: string) => Promise<T>, opts: { raw?: boolean } = {}): Promise<T> {
  const grant = await OAuth.grantOf(workspaceId, "codehost");
  try {
    return await fn(github(grant.accessToken), String((grant.integration.account as { login?: string } | undefined)?.login ?? ""));
  } catch (err) {
    logProviderFailure("codehost", workspaceId, err);
    if (err instanceof ProviderError && err.failure === "auth_expired") {
      await OAuth.markNeedsReconnect(grant.integration);
      throw tokenError("codehost");
    }
    throw opts.raw ? err : toAppError("codehost", err);
  }
}

/** `POST /connect` (spec 02). @throws AppError SERVICE_UNAVAILABLE (503) naming GITHUB_CLIENT_ID/_SECRET when unset */
export const connect = (userId: string, workspaceId: string): Promise<ConnectResult> => OAuth.connect(userId, "codehost", workspaceId);

/** `GET /callback`: exchange, store encrypted, read the login and avatar; redirect to the settings page. */
export const callback = (query: CallbackQuery) =>
  OAuth.callback("codehost", query, async (token) => {
    const me = await github(token).viewer();
    return { account: { login: me.login, avatar_url: me.avatar_url } };
  });

/** `DELETE /disconnect`: the integration and every code-host link of the workspace are removed. */
export const disconnect = (userId: string, workspaceId: string) => OAuth.disconnect(userId, "codehost", workspaceId);

/** `GET /status` (spec 02 status fields of the code host, under both names the spec gives). */
export async function status(userId: string, q: WorkspaceQuery): Promise<CodehostStatus> {
  await requireMember(userId, q.workspace_id);
  const row = await OAuth.findIntegration(q.workspace_id, "codehost");
  const account = (row?.account ?? {}) as { login?: string; avatar_url?: string | null };
  const selected = row?.selected_repos ?? [];
  return {
    connected: Boolean(row?.is_active && row.token_ciphertext && !row.needs_reconnect),
    needs_reconnect: Boolean(row?.needs_reconnect),
    codehost_username: account.login ?? null,
    login: account.login ?? null,
    codehost_avatar_url: account.avatar_url ?? null,
    repos_count: selected.length,
    repos_selected: selected.length,
    selected_repos: selected,
    last_synced_at: row?.last_synced_at ?? null,
  };
}

/**
 * `GET /repos`: one page (100) of the repositories the account reaches, filtered client-side by `search` (a
 * case-insensitive substring of the full name or description), each marked `selected`.
 */
export async function repos(userId: string, q: ReposQuery) {
  await requireMember(userId, q.workspace_id);
  const row = await OAuth.activeIntegration(q.workspace_id, "codehost");
  const selected = new Set(row.selected_repos ?? []);
  const page = await withCodeHost(q.workspace_id, (host) => host.listRepos(q.page));
  const needle = q.search?.toLowerCase();
  const repos = page.repos
    .filter((r) => !needle || r.full_name.toLowerCase().includes(needle) || (r.description ?? "").toLowerCase().includes(needle))
    .map((r) => ({ ...r, selected: selected.has(r.full_name) }));
  return { repos, page: q.page, has_more: page.hasMore, total: repos.length };
}

/**
 * `POST /repos/select`: replaces `selected_repos` (deduplicated, order kept).
 * @throws NO_ACTIVE_INTEGRATION (404), also when a disconnect removes the integration before the write
 */
export async function selectRepos(userId: string, body: SelectReposBody): Promise<{ selected_repos: string[] }> {
  await requireMember(userId, body.workspace_id);
  await OAuth.activeIntegration(body.workspace_id, "codehost");
  const selected = [...new Set(body.repos)];
  try {
    await db().entities.integration.patch({ workspace_id: body.workspace_id, kind: "codehost" }).set({ selected_repos: selected }).go();
  } catch (err) {
    // A disconnect removed the integration after the read: answer what a select on a disconnected one gets.
    if (!isConditionalFailure(err)) throw err;
    await OAuth.activeIntegration(body.workspace_id, "codehost");
    throw err;
  }
  return { selected_repos: selected };
}

/**
 * The repository a call names, checked against the selection; with none named, the only selected one.
 * @throws AppError REPO_NOT_SELECTED (422) naming the selection
 */
export async function selectedRepo(workspaceId: string, repo: string | undefined): Promise<string> {
  const row = await OAuth.activeIntegration(workspaceId, "codehost");
  const selected = row.selected_repos ?? [];
  if (!repo) {
    if (selected.length === 1) return selected[0]!;
    throw new AppError("REPO_NOT_SELECTED", selected.length ? `Name the repository: one of ${selected.join(", ")}` : "No repository is selected; select one first", { selected_repos: selected });
  }
  const hit = selected.find((s) => s.toLowerCase() === repo.toLowerCase());
  if (!hit) throw new AppError("REPO_NOT_SELECTED", `${repo} is not a selected repository`, { selected_repos: selected });
  return hit;
}

export const toLinkView = (l: LinkItem): CodehostLinkView => ({
  id: l.id,
  recommendation_id: l.recommendation_id,
  repo_full_name: l.repo_full_name ?? "",
  issue_number: l.issue_number ?? 0,
  issue_url: l.issue_url,
  title: l.title,
  state: l.state,
  state_reason: l.state_reason ?? null,
  pull_request_url: l.pull_request_url ?? null,
  last_synced_at: l.last_synced_at ?? null,
  created_at: l.created_at,
});

/** Options of `createIssue` for an approved pending action: the ids derive from it, and the marker finds a retry's issue. */
export interface IssueWriteOptions {
  linkId?: string;
  marker?: string;
  pendingActionId?: string;
  /**
   * The earliest instant an earlier attempt could have created the issue (ISO 8601; an approved action's approval
   * time). Default: this call's start. The marker search looks from a minute before it (clock skew with the host).
   */
  markerSince?: string;
}

/**
 * Where a marker search starts: a minute before the first attempt could have written. GitHub's `since` filters on
 * `updated_at`, so an issue a crashed attempt created stays findable only if the window reaches back to that attempt,
 * not to this one: a replay that comes minutes later (a lease that expired) must still find it.
 */
function markerWindow(since?: string): string {
  const from = since ? Date.parse(since) : Date.now();
  return new Date((Number.isFinite(from) ? from : Date.now()) - 60_000).toISOString();
}

/**
 * How far back a plain `POST /issues` (no action marker) looks for the issue an earlier attempt of the same request
 * created: a client retries within seconds or minutes of a failure, and an identical request later than this is taken
 * as a new one. Bounded because the search lists the account's issues touched since then (a page per 100).
 */
export const ISSUE_RETRY_WINDOW_MS = 15 * 60_000;

/**
 * The link of an issue: its id derives from the issue, so whether an issue is linked already is one read of a known
 * key, and a retried write of the same link replaces it instead of adding a second.
 */
const linkIdOf = (repo: string, number: number) => v4From(sha256(`codehost:${repo}#${number}`));

/**
 * `POST /issues`: an issue in a selected repository for a recommendation of the workspace, and the link between
 * them. Title defaults to the recommendation's title, body to its description.
 * - With a `marker` (an approved pending action's id), an issue that carries it already is reused instead of creating
 *   a second one, under the action's link id.
 * - Without one (the HTTP route), the body carries a marker hashed from the request's content (workspace,
 *   recommendation, repository, title, body). An issue of the account that carries it, touched in the last
 *   `ISSUE_RETRY_WINDOW_MS`, and that has no link yet is adopted: the retry of a request whose link write failed
 *   (a store error, a Lambda that died) answers that issue instead of creating a second. One that is linked already
 *   means the same issue is asked for again on purpose: a new one is created. The link's id derives from the issue.
 * @returns `{issue_url, issue_number, link_id}`
 * @throws AppError REPO_NOT_SELECTED (422); NOT_FOUND (404, recommendation); NO_ACTIVE_INTEGRATION (404);
 *   CODEHOST_TOKEN_ERROR (424); RATE_LIMITED (429)
 */
export async function createIssue(userId: string, input: CreateIssueBody, opts: IssueWriteOptions = {}) {
  await requireMember(userId, input.workspace_id);
  const rec = await Recommendation.get(userId, input.recommendation_id);
  if (rec.workspace_id !== input.workspace_id) throw new AppError("NOT_FOUND", "Recommendation not found");
  const repo = await selectedRepo(input.workspace_id, input.repository ?? input.repo_full_name ?? input.repo);
  const title = input.title ?? rec.title;
  const text = input.body ?? rec.description;
  // JSON, not a joined string: no title or body can make two different requests hash alike.
  const marker = opts.marker ?? `issue:${sha256(JSON.stringify([input.workspace_id, rec.id, repo, title, text])).slice(0, 32)}`;
  const body = `${text}\n\n<!-- r2d:${marker} -->`;
  const startedAt = opts.marker ? markerWindow(opts.markerSince) : new Date(Date.now() - ISSUE_RETRY_WINDOW_MS).toISOString();
  const linkOf = async (number: number) =>
    (await db().entities.issueLink.get({ workspace_id: input.workspace_id, kind: "codehost", recommendation_id: rec.id, id: linkIdOf(repo, number) }).go({ consistent: true })).data;
  const issue = await withCodeHost(input.workspace_id, async (host, login) => {
    if (login) {
      const found = await host.findIssueByMarker(repo, `r2d:${marker}`, { since: startedAt, creator: login });
      // An action's issue is its own whether linked or not; a request's is adopted only while unlinked (newest first:
      // the orphan of a repeated request is found before the linked issues it repeats).
      if (found && (opts.marker || !(await linkOf(found.number)))) return found;
    }
    return host.createIssue(repo, { title, body, labels: input.labels });
  });
  const linkId = opts.linkId ?? linkIdOf(repo, issue.number);
  await db().entities.issueLink.put({
    id: linkId, workspace_id: input.workspace_id, kind: "codehost", recommendation_id: rec.id, repo_full_name: repo,
    issue_number: issue.number, issue_url: issue.url, title: issue.title, state: "open", created_by: userId,
    ...(opts.pendingActionId ? { pending_action_id: opts.pendingActionId } : {}),
  }).go();
  return { issue_url: issue.url, issue_number: issue.number, link_id: linkId };
}

/**
 * An issue without a recommendation (the copilot's create_codehost_issue without recommendation_id): no link. The
 * action id travels in the body as a marker, so a replay finds the issue its first run created.
 * @param markerSince as `IssueWriteOptions.markerSince`
 */
export async function createUnlinkedIssue(userId: string, workspaceId: string, repo: string, input: { title: string; body: string; labels: string[] }, marker: string, markerSince?: string) {
  await requireMember(userId, workspaceId);
  const startedAt = markerWindow(markerSince);
  return withCodeHost(workspaceId, async (host, login) => {
    const found = login ? await host.findIssueByMarker(repo, `r2d:${marker}`, { since: startedAt, creator: login }) : null;
    return found ?? host.createIssue(repo, { ...input, body: `${input.body}\n\n<!-- r2d:${marker} -->` });
  });
}

/** `GET /links`: the recommendation's code-host links, oldest first. */
export async function links(userId: string, q: LinksQuery): Promise<{ links: CodehostLinkView[] }> {
  await requireMember(userId, q.workspace_id);
  const { data } = await db().entities.issueLink.query.byWorkspace({ workspace_id: q.workspace_id, kind: "codehost", recommendation_id: q.recommendation_id }).go({ pages: "all" });
  return { links: data.sort((a, b) => a.created_at.localeCompare(b.created_at)).map(toLinkView) };
}

/** Every code-host link of a workspace. */
export async function allLinks(workspaceId: string): Promise<LinkItem[]> {
  const { data } = await db().entities.issueLink.query.byWorkspace({ workspace_id: workspaceId, kind: "codehost" }).go({ pages: "all" });
  return data;
}

/**
 * Refresh one link from its issue with a conditional request (its ETag): a 304 changes nothing and costs no rate
 * limit. A closed issue moves the recommendation to implemented unless `state_reason` is not_planned (before the link
 * is written); the pull request URL is kept once known.
 * @returns whether the link's state changed
 */
export async function refreshLink(userId: string, host: CodeHost, link: LinkItem, now = new Date().toISOString()): Promise<boolean> {
  const key = { workspace_id: link.workspace_id, kind: link.kind, recommendation_id: link.recommendation_id, id: link.id };
  const read = await host.getIssue(link.repo_full_name!, link.issue_number!, link.etag);
  if (!read.modified) {
    try {
      await db().entities.issueLink.patch(key).set({ last_synced_at: now }).go();
    } catch (err) {
      if (!isConditionalFailure(err)) throw err; // the link went with a disconnect (or its recommendation) meanwhile
    }
    return false;
  }
  const { issue } = read;
  const changed = issue.state !== link.state || (issue.state_reason ?? undefined) !== (link.state_reason ?? undefined);
  let pr = issue.pull_request_url ?? link.pull_request_url ?? null;
  if (!pr && changed && issue.state === "closed") pr = await host.linkedPullRequest(link.repo_full_name!, link.issue_number!);
  // The recommendation moves before the link records the issue and its ETag: after a crash or a failure in between,
  // the next sync reads the issue again (its old ETag no longer matches) and catches up, where a 304 would not.
  if (issue.state === "closed" && issue.state_reason !== "not_planned") await markImplemented(userId, link.recommendation_id);
  const written = await recordSyncedLink(link, {
    state: issue.state, title: issue.title, last_synced_at: now,
    ...(issue.state_reason ? { state_reason: issue.state_reason } : {}),
    ...(pr ? { pull_request_url: pr } : {}),
    ...(read.etag ? { etag: read.etag } : {}),
  });
  return written && changed;
}

/**
 * `POST /sync` (spec 02): refresh every code-host link of the workspace. When GitHub rate-limits part-way, the rest
 * is queued with GitHub's wait as the delay (the answer counts it in `queued_count`) instead of waiting here; past
 * `WORK_BUDGET_MS` (12 s) the rest is queued at once, so a request stays well inside API Gateway's 29 s. A link whose
 * issue GitHub no longer answers for (deleted, out of reach) keeps its last known state and is not counted; it is noted
 * as failed by this run (`sync_failed_run`), so the run's continuations do not read it again and the chain ends.
 * @param startedAt links synced at or after this instant, or failed by the run begun then, are skipped (a queued
 *   continuation of the same sync)
 * @returns `{synced_count, updated_count, queued_count}`
 */
export async function sync(userId: string, workspaceId: string, startedAt = new Date().toISOString(), opts: { budgetMs?: number } = {}): Promise<SyncResult> {
  const deadline = Date.now() + (opts.budgetMs ?? WORK_BUDGET_MS);
  await requireMember(userId, workspaceId);
  await OAuth.activeIntegration(workspaceId, "codehost");
  // A link this run already tried and could not read (`sync_failed_run`) is not read again by its continuations.
  const pending = (await allLinks(workspaceId)).filter((l) => unreadInRun(l, startedAt));
  let synced = 0;
  let updated = 0;
  let queued = 0;
  await withCodeHost(workspaceId, async (host) => {
    for (let i = 0; i < pending.length; i++) {
      if (i > 0 && Date.now() > deadline) {
        // Past the budget: the queue's consumer goes on with the links not synced since `startedAt` (nor tried and
        // failed by this run: each run reads every link once, so the chain of continuations ends).
        queued = pending.length - i;
        await deferJob({ type: "codehost.sync", workspace_id: workspaceId, user_id: userId, started_at: startedAt }, 1);
        return;
      }
      try {
        if (await refreshLink(userId, host, pending[i]!)) updated++;
        synced++;
      } catch (err) {
        // An issue GitHub no longer answers for (deleted: 410; its repository gone or out of the grant's reach: 404,
        // 403) keeps its last known state, as a planner link does; the other links still sync.
        if (err instanceof ProviderError && (err.failure === "not_found" || err.failure === "forbidden")) {
          logProviderFailure("codehost", workspaceId, err);
          await markSyncFailed(pending[i]!, startedAt);
          continue;
        }
        if (!(err instanceof ProviderError) || err.failure !== "rate_limited") throw err;
        queued = pending.length - i;
        await deferJob({ type: "codehost.sync", workspace_id: workspaceId, user_id: userId, started_at: startedAt }, err.retryAfterSeconds ?? 60);
        return;
      }
    }
  });
  await markSynced(workspaceId, "codehost");
  return { synced_count: synced, updated_count: updated, queued_count: queued };
}
