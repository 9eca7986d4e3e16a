/**
 * The `CodeHost` port (DESIGN.md 6.4): what the code-host endpoints, the copilot's tools and execution tickets need
 * from a code host. Failures are `ProviderError`s (core/integration/errors.ts). `repo` is always "owner/name".
 */
export interface RepoInfo {
  full_name: string;
  name: string;
  owner: string;
  private: boolean;
  description: string | null;
  default_branch: string | null;
  html_url: string;
}

export interface IssueRef {
  number: number;
  url: string;
  title: string;
}

/** An issue's state as sync reads it: `state` and `state_reason` are GitHub's categories, never a label or name. */
export interface IssueSnapshot extends IssueRef {
  state: "open" | "closed";
  /** completed, not_planned, reopened, or null. */
  state_reason: string | null;
  /** Set when the issue itself is a pull request. */
  pull_request_url: string | null;
}

export interface TreeEntry {
  path: string;
  type: "file" | "dir";
  size: number | null;
}

export interface PullRequestRef {
  number: number;
  title: string;
  state: string;
  author: string | null;
  url: string;
  created_at: string;
  updated_at: string;
  draft: boolean;
}

export interface FileBytes {
  path: string;
  sha: string;
  size: number;
  bytes: Buffer;
}

export interface CodeHost {
  viewer(): Promise<{ login: string; avatar_url: string | null }>;
  /** One page (1-based) of the repositories the account can reach, 100 a page. */
  listRepos(page: number): Promise<{ repos: RepoInfo[]; hasMore: boolean }>;
  createIssue(repo: string, input: { title: string; body: string; labels: string[] }): Promise<IssueRef>;
  /**
   * The issue whose body carries `marker`, among those `creator` opened or touched since `since` (ISO), or null: how
   * a retried push finds the issue an earlier attempt created before it creates another.
   */
  findIssueByMarker(repo: string, marker: string, opts: { since: string; creator: string }): Promise<IssueRef | null>;
  /** The issue, or `{modified: false}` when `etag` still matches (a conditional request: no rate limit spent). */
  getIssue(repo: string, number: number, etag?: string): Promise<{ modified: false } | { modified: true; issue: IssueSnapshot; etag: string | null }>;
  /** The pull request that references the issue most recently, from its timeline, or null. */
  linkedPullRequest(repo: string, number: number): Promise<string | null>;
  getFile(repo: string, path: string): Promise<FileBytes>;
  getReadme(repo: string): Promise<FileBytes>;
  /** Entries under `path` ("" for the root) at most `depth` levels down, from the default branch. */
  listTree(repo: string, path: string, depth: number): Promise<{ entries: TreeEntry[]; truncated: boolean }>;
  searchCode(repo: string, query: string, pathFilter: string | undefined, max: number): Promise<{ total: number; matches: { path: string; snippet: string | null }[] }>;
  listCommits(repo: string, opts: { limit: number; path?: string; since?: string }): Promise<{ sha: string; message: string; author: string | null; date: string | null; url: string }[]>;
  listPulls(repo: string, state: "open" | "closed" | "all", limit: number): Promise<PullRequestRef[]>;
}
