/**
 * What push and sync need from a tracker (DESIGN.md 6.4: execution tickets use only the ports), per platform. The code
 * host is built on the `CodeHost` port; the planner and ticket tool plug in here once their adapters exist
 * (core/integration/planner, core/integration/tickets), one entry each in {@link TRACKERS}.
 */
import { AppError } from "../error";
import * as Codehost from "../integration/codehost";
import type { CodeHost } from "../integration/codehost";
import { PROVIDERS } from "../integration/providers";
import type { IntegrationItem } from "../integration/oauth";
import { githubCategory, priorityFor, type Platform, type TicketCategory, type TicketPriority } from "./mapping";

/** An issue to create: the rendered body already carries the ticket's marker. */
export interface NewIssue {
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
  /** The issue carrying `marker` among those created since `since` (ISO), or null. */
  findByMarker(marker: string, since: string): Promise<IssueHandle | null>;
  create(issue: NewIssue): Promise<IssueHandle>;
  read(externalId: string, etag?: string): Promise<IssueRead>;
}

export interface TrackerAdapter {
  /**
   * Where a push goes (repository, team, project), from the request and the integration's selection.
   * @throws AppError REPO_NOT_SELECTED / NO_TEAM_SELECTED (422)
   */
  destination(workspaceId: string, integration: IntegrationItem, requested: { repo?: string; targetRepo?: string | null }): Promise<string>;
  /**
   * Run `fn` with the workspace's tracker at `destination`. A refused grant marks the integration for reconnection
   * and throws the kind's 424; other provider failures reach `fn`'s caller as `ProviderError`s.
   */
  open<T>(workspaceId: string, destination: string, fn: (tracker: Tracker) => Promise<T>): Promise<T>;
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

/** The adapters that exist. The planner (Linear) and ticket tool (Jira) join with their ports. */
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
