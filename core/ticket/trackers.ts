/**
 * What push and sync need from a tracker (DESIGN.md 6.4: execution tickets use only the ports), per platform: the code
 * host on the `CodeHost` port, the planner on the `Planner` port, the ticket tool on the `TicketTool` port, one entry
 * each in {@link TRACKERS}. How each finds an earlier attempt's issue (a retried push never makes a second one):
 * GitHub searches its issues for the body's marker; Linear creates under an id derived from the ticket, so the retry
 * asks for that id; Jira carries the marker as a label and the retry searches for it by JQL.
 */
import { AppError, Errors } from "../error";
import * as Codehost from "../integration/codehost";
import type { CodeHost } from "../integration/codehost";
import * as PlannerIntegration from "../integration/planner";
import { v4From } from "../integration/ids";
import { MAX_PAGE as LINEAR_PAGE } from "../integration/planner/linear";
import type { Planner, PlannerIssue } from "../integration/planner/port";
import * as TicketsIntegration from "../integration/tickets";
import type { TicketIssueStatus, TicketTool } from "../integration/tickets/port";
import { STATUS_PAGE } from "../integration/tickets/jira";
import { ProviderError } from "../integration/errors";
import { PROVIDERS } from "../integration/providers";
import type { IntegrationItem } from "../integration/oauth";
import { githubCategory, jiraCategory, linearCategory, priorityFor, type Platform, type TicketCategory, type TicketPriority } from "./mapping";

/** An issue to create: the rendered body already carries the ticket's marker. */
export interface NewIssue {
  /** The ticket's id: Linear derives the issue's id from it, Jira its marker label. */
  ticket_id: string;
  /** story, feature, epic, task: Jira picks the issue type by it. */
  ticket_type: string;
  title: string;
  body: string;
  labels: string[];
  priority: TicketPriority | null;
}

export interface IssueHandle {
  external_id: string;
  external_url: string;
}

/** One read of an issue's state: unchanged since `etag`, or its category (never its name) and raw state. */
export type IssueRead = { modified: false } | { modified: true; category: TicketCategory | null; remote_state: string; external_url: string; etag: string | null };

/** A tracker, opened for one workspace and destination. Failures are `ProviderError`s. */
export interface Tracker {
  /** The issue an earlier attempt at ticket `ticketId` created (it carries `marker`; created since `since`, ISO), or null. */
  findByMarker(marker: string, since: string, ticketId: string): Promise<IssueHandle | null>;
  create(issue: NewIssue): Promise<IssueHandle>;
  read(externalId: string, etag?: string): Promise<IssueRead>;
  /**
   * Many issues' states in few requests, where the tracker can (Linear and Jira count requests, and GitHub's
   * conditional reads are already nearly free). Ids absent from the answer are gone or out of the grant's reach.
   */
  readMany?(externalIds: string[]): Promise<Map<string, IssueRead>>;
  /**
   * How many ids a sync hands `readMany` at once: a whole number of the tracker's own pages (Linear 250, Jira's search
   * 100), so no request is spent on a short page in the middle of a sync, and the sync checks its time budget and a
   * rate limit between pages.
   */
  readBatch?: number;
}

export interface TrackerAdapter {
  /**
   * Where a push goes (repository, team, project), from the request and the integration's selection.
   * @throws AppError REPO_NOT_SELECTED / NO_TEAM_SELECTED (422)
   */
  destination(workspaceId: string, integration: IntegrationItem, requested: { repo?: string; targetRepo?: string | null; projectKey?: string }): Promise<string>;
  /**
   * Run `fn` with the workspace's tracker at `destination`. A refused grant marks the integration for reconnection
   * and throws the kind's 424; other provider failures reach `fn`'s caller as `ProviderError`s.
   */
  open<T>(workspaceId: string, destination: string, fn: (tracker: Tracker) => Promise<T>): Promise<T>;
  /**
   * Why a push to `destination` (resolved earlier: a queued continuation carries it) may not go on under the
   * integration as it is now, or null: a repository no longer selected, another Linear team or project selected,
   * another Jira site connected. Reads only the integration item.
   */
  changed(integration: IntegrationItem, destination: string): string | null;
}

/** GitHub issue ids are "owner/repo#number": enough to read the issue back. */
const splitIssueId = (externalId: string) => {
  const at = externalId.lastIndexOf("#");
  return { repo: externalId.slice(0, at), number: Number(externalId.slice(at + 1)) };
};

function codehostTracker(host: CodeHost, login: string, repo: string): Tracker {
  const handle = (i: { number: number; url: string }) => ({ external_id: `${repo}#${i.number}`, external_url: i.url });
  return {
    async findByMarker(marker, since) {
      // Without the login (never stored on a grant that read no account), nothing can be narrowed: do not search.
      if (!login) return null;
      const found = await host.findIssueByMarker(repo, marker, { since, creator: login });
      return found ? handle(found) : null;
    },
    async create(issue) {
      const label = priorityFor("codehost", issue.priority);
      const labels = [...new Set([...issue.labels, ...(label ? [label] : [])])];
      return handle(await host.createIssue(repo, { title: issue.title, body: issue.body, labels }));
    },
    async read(externalId, etag) {
      const { repo: r, number } = splitIssueId(externalId);
      const res = await host.getIssue(r, number, etag);
      if (!res.modified) return { modified: false };
      const { issue } = res;
      return {
        modified: true,
        category: githubCategory(issue),
        remote_state: issue.state_reason ? `${issue.state}/${issue.state_reason}` : issue.state,
        external_url: issue.url,
        etag: res.etag,
      };
    },
  };
}

/** A Linear issue as a sync read: its state's `type` is the category; the name is kept only as the raw state. */
const linearRead = (i: PlannerIssue): IssueRead => ({
  modified: true,
  category: i.state ? linearCategory(i.state) : null,
  remote_state: i.state ? `${i.state.type}/${i.state.name}` : "unknown",
  external_url: i.url,
  etag: null,
});

/** Linear at `destination` ("teamId" or "teamId/projectId"). */
function plannerTracker(planner: Planner, destination: string): Tracker {
  const [teamId, projectId] = destination.split("/") as [string, string | undefined];
  let labels: Promise<Map<string, string>> | undefined;
  /** The team's label ids of the ticket's label names (case-insensitive); names the team has no label for are left out. */
  const labelIds = async (names: string[]): Promise<string[]> => {
    labels ??= planner.team(teamId).then(
      (t) => new Map((t?.labels ?? []).map((l) => [l.name.toLowerCase(), l.id])),
      (err: unknown) => {
        labels = undefined;
        throw err;
      },
    );
    const byName = await labels;
    return [...new Set(names.map((n) => byName.get(n.toLowerCase())).filter((id): id is string => !!id))];
  };
  const handle = (i: PlannerIssue): IssueHandle => ({ external_id: i.id, external_url: i.url });
  return {
    async findByMarker(_marker, _since, ticketId) {
      // The issue was created under an id derived from the ticket: the earlier attempt's issue is that id, or none.
      const found = await planner.getIssue(v4From(ticketId));
      return found ? handle(found) : null;
    },
    async create(issue) {
      const priority = priorityFor("planner", issue.priority);
      const created = await planner.createIssue({
        id: v4From(issue.ticket_id),
        teamId,
        title: issue.title,
        description: issue.body,
        ...(projectId ? { projectId } : {}),
        labelIds: await labelIds(issue.labels),
        ...(priority ? { priority } : {}),
      });
      return handle(created);
    },
    async read(externalId) {
      const issue = await planner.getIssue(externalId);
      if (!issue) throw new ProviderError("not_found", `Linear issue ${externalId} is gone or out of the grant's reach`);
      return linearRead(issue);
    },
    async readMany(externalIds) {
      // One GraphQL query per 250 issues (the adapter pages): Linear counts requests and complexity per hour.
      const issues = await planner.issuesByIds(externalIds);
      return new Map(issues.map((i) => [i.id, linearRead(i)]));
    },
    readBatch: LINEAR_PAGE,
  };
}

/** The Jira label that marks an issue as a ticket's (labels hold no spaces; JQL finds them exactly). */
export const jiraMarkerLabel = (ticketId: string): string => `r2d-ticket-${ticketId}`;

/** Issue type names a ticket type prefers, in order (create only: sync never reads a name). */
const JIRA_TYPES: Record<string, string[]> = { story: ["Story"], feature: ["Story", "Feature", "New Feature"], epic: ["Epic"], task: ["Task"] };

/**
 * A ticket tool destination: `<cloud_id>/<project key>`, the site recorded beside the project (Jira numbers issues per
 * site from 10000, so an id read on another site is another issue). Tickets pushed before the site was recorded hold
 * the key alone (`site` null). Project keys hold no "/".
 */
export function jiraDestination(destination: string): { site: string | null; projectKey: string } {
  const at = destination.indexOf("/");
  return at < 0 ? { site: null, projectKey: destination } : { site: destination.slice(0, at), projectKey: destination.slice(at + 1) };
}

/**
 * Whether two places (`<platform>:<destination>`, as `may_hold_issue_at` records them) are the same: equal, or a Jira
 * place recorded before the site was (`tickets:KEY`) and the same project on a site (`tickets:<cloud_id>/KEY`).
 */
export function samePlace(a: string, b: string): boolean {
  if (a === b) return true;
  const jira = (p: string) => (p.startsWith("tickets:") ? jiraDestination(p.slice("tickets:".length)) : null);
  const [x, y] = [jira(a), jira(b)];
  return !!x && !!y && x.projectKey === y.projectKey && (x.site === null || y.site === null);
}

/** A tracker for tickets pushed to another Jira site than the one connected now: every call is refused, nothing is sent. */
function otherSiteTracker(site: string, connected: string): Tracker {
  const refuse = (): never => {
    throw new ProviderError("not_found", `the ticket was pushed to another Jira site (cloud id ${site}) than the one connected now (${connected}): connect that site again to sync or push it`);
  };
  return { findByMarker: async () => refuse(), create: async () => refuse(), read: async () => refuse(), readMany: async () => refuse(), readBatch: STATUS_PAGE };
}

/** Jira at project `projectKey`, issues browsed at `siteUrl`. */
function jiraTracker(tool: TicketTool, projectKey: string, siteUrl: string): Tracker {
  let types: Promise<{ id: string; name: string; subtask: boolean }[]> | undefined;
  /** The project's issue type for a ticket type: the preferred names, then Task, then the first that is not a sub-task. */
  const issueTypeId = async (ticketType: string): Promise<string> => {
    types ??= tool.issueTypes(projectKey).catch((err: unknown) => {
      types = undefined;
      throw err;
    });
    const all = (await types).filter((t) => !t.subtask);
    const byName = new Map(all.map((t) => [t.name.toLowerCase(), t.id]));
    for (const name of [...(JIRA_TYPES[ticketType] ?? []), "Task"]) {
      const id = byName.get(name.toLowerCase());
      if (id) return id;
    }
    if (!all[0]) throw new ProviderError("validation", `Jira project ${projectKey} accepts no issue type this account can create`);
    return all[0].id;
  };
  const url = (key: string) => `${siteUrl.replace(/\/$/, "")}/browse/${key}`;
  const toRead = (s: TicketIssueStatus): IssueRead => ({
    modified: true,
    category: jiraCategory({ name: s.status.name, statusCategory: { ...(s.status.category_key ? { key: s.status.category_key } : {}), ...(s.status.category_id !== null ? { id: s.status.category_id } : {}) } }),
    remote_state: `${s.status.category_key ?? s.status.category_id ?? "?"}/${s.status.name}`,
    external_url: url(s.key),
    etag: null,
  });
  const readMany = async (ids: string[]) => {
    const out = new Map<string, IssueRead>();
    for (let i = 0; i < ids.length; i += STATUS_PAGE) for (const s of await tool.statuses(ids.slice(i, i + STATUS_PAGE))) out.set(s.id, toRead(s));
    return out;
  };
  return {
    async findByMarker(_marker, _since, ticketId) {
      // The label is the ticket's alone: no time window is needed to narrow the search (and JQL dates are in the
      // account's time zone, a window could miss).
      const found = await tool.findByLabel(projectKey, jiraMarkerLabel(ticketId));
      return found ? { external_id: found.id, external_url: url(found.key) } : null;
    },
    async create(issue) {
      const labels = [...new Set([...issue.labels.map((l) => l.trim().replace(/\s+/g, "-")).filter(Boolean), jiraMarkerLabel(issue.ticket_id)])];
      const created = await tool.createIssue({
        projectKey,
        issueTypeId: await issueTypeId(issue.ticket_type),
        summary: issue.title,
        description: issue.body,
        labels,
        priority: priorityFor("tickets", issue.priority),
      });
      return { external_id: created.id, external_url: url(created.key) };
    },
    async read(externalId) {
      const got = (await readMany([externalId])).get(externalId);
      if (!got) throw new ProviderError("not_found", `Jira issue ${externalId} is gone or out of the grant's reach`);
      return got;
    },
    readMany,
    // One enhanced JQL search per 100 issues (Jira's page with only `status` selected).
    readBatch: STATUS_PAGE,
  };
}

/** The adapters, one per platform. */
export const TRACKERS: Partial<Record<Platform, TrackerAdapter>> = {
  codehost: {
    async destination(workspaceId, _integration, requested) {
      if (requested.repo) return Codehost.selectedRepo(workspaceId, requested.repo);
      // The recommendation's target repository when it is selected; else the only selected one (or 422 naming them).
      if (requested.targetRepo) {
        try {
          return await Codehost.selectedRepo(workspaceId, requested.targetRepo);
        } catch (err) {
          if (!(err instanceof AppError) || err.code !== "REPO_NOT_SELECTED") throw err;
        }
      }
      return Codehost.selectedRepo(workspaceId, undefined);
    },
    open: (workspaceId, repo, fn) => Codehost.withCodeHost(workspaceId, (host, login) => fn(codehostTracker(host, login, repo)), { raw: true }),
    changed: (integration, repo) =>
      (integration.selected_repos ?? []).some((r) => r.toLowerCase() === repo.toLowerCase()) ? null : `${repo} is no longer a selected repository; select it, or push to another`,
  },
  planner: {
    async destination(workspaceId) {
      // The selected team, and its selected project when there is one (as the planner's own issue endpoint does).
      const team = await PlannerIntegration.selectedTeam(workspaceId);
      return team.projectId ? `${team.teamId}/${team.projectId}` : team.teamId;
    },
    open: (workspaceId, destination, fn) => PlannerIntegration.withPlanner(workspaceId, (planner) => fn(plannerTracker(planner, destination)), { raw: true }),
    changed(integration, destination) {
      const now = integration.selected_team_id ? (integration.selected_project_id ? `${integration.selected_team_id}/${integration.selected_project_id}` : integration.selected_team_id) : null;
      return now === destination ? null : "the Linear team or project selected for this workspace changed since the push began; push again";
    },
  },
  tickets: {
    async destination(_workspaceId, integration, requested) {
      // The server keeps no project selection for the ticket tool (spec 02: the frontend keeps the chosen projects).
      if (!requested.projectKey) {
        throw Errors.validation([{ loc: ["body", "project_key"], msg: "the Jira project to push to is required for the ticket tool", type: "missing" }], "project_key is required when pushing to Jira");
      }
      // The site goes with the project: the ticket's sync and a retried push must reach the site it was pushed to.
      return `${integration.cloud_id ?? ""}/${requested.projectKey}`;
    },
    open: (workspaceId, destination, fn) =>
      TicketsIntegration.withTicketTool(workspaceId, (tool, cloudId, integration) => {
        const { site, projectKey } = jiraDestination(destination);
        const account = (integration.account ?? {}) as { site_url?: string; site_name?: string };
        if (site !== null && site !== cloudId) return fn(otherSiteTracker(site, account.site_name ?? cloudId));
        return fn(jiraTracker(tool, projectKey, account.site_url ?? ""));
      }, { raw: true }),
    changed(integration, destination) {
      const { site } = jiraDestination(destination);
      return site === null || site === integration.cloud_id ? null : "the workspace is connected to another Jira site than when the push began; push again";
    },
  },
};

/**
 * The adapter of a platform.
 * @throws AppError SERVICE_UNAVAILABLE (503) naming the platform when its adapter is not in this build
 */
export function trackerOf(platform: Platform): TrackerAdapter {
  const adapter = TRACKERS[platform];
  if (!adapter) throw new AppError("SERVICE_UNAVAILABLE", `Pushing execution tickets to ${PROVIDERS[platform].name} is not available in this build`, { platform });
  return adapter;
}
