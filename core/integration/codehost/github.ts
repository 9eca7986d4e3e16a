/**
 * The `CodeHost` port on GitHub (DESIGN.md 6.4): `@octokit/core` with the REST endpoint methods, retry and throttling
 * plugins, its base URL from GITHUB_API_URL (GitHub Enterprise Server works the same). Rate limits are never waited
 * out here: the throttling plugin's handlers decline to retry, and the limit comes back as a `ProviderError`
 * `rate_limited` with GitHub's own wait (retry-after, else x-ratelimit-reset), which a request answers as 429 and
 * queued work turns into a message delay. The plugin's shared limiters still pace this process's calls (a second
 * between writes, two between code searches: GitHub's content-creation and search limits).
 */
import { Config } from "../../config";
import { ProviderError } from "../errors";
import { markAnswered, timedFetch } from "../timeout";
import type { CodeHost, IssueRef, IssueSnapshot, PullRequestRef, RepoInfo, TreeEntry } from "./port";

// Octokit and its plugins load with the first GitHub call, not with every Lambda that reaches this port (issue #24
// cold starts); the class is composed once per container.
const composeOctokit = async () => {
  const [{ Octokit: Core }, { restEndpointMethods }, { retry }, { throttling }] = await Promise.all([
    import("@octokit/core"),
    import("@octokit/plugin-rest-endpoint-methods"),
    import("@octokit/plugin-retry"),
    import("@octokit/plugin-throttling"),
  ]);
  return Core.plugin(restEndpointMethods, retry, throttling);
};
let composed: ReturnType<typeof composeOctokit> | undefined;
type Client = InstanceType<Awaited<ReturnType<typeof composeOctokit>>>;

/** A GitHub client for one access token. */
export async function githubClient(accessToken: string): Promise<Client> {
  const Octokit = await (composed ??= composeOctokit());
  return new Octokit({
    auth: accessToken,
    baseUrl: Config.githubApiUrl(),
    userAgent: "research-to-delivery",
    // Every request (and its body) is aborted after PROVIDER_REQUEST_TIMEOUT_SECONDS (../timeout.ts): Octokit has no
    // timeout of its own. The abort fails as a RequestError 500 caused by a TimeoutError: `unknown` (creates are not
    // retried; a read gets its one retry).
    request: { fetch: timedFetch("GitHub") },
    // One quick retry of a 5xx; never of a limit (429 and 403 are the throttling handlers' and ours).
    retry: { retries: 1, doNotRetry: [400, 401, 403, 404, 409, 410, 422, 429, 451] },
    throttle: { onRateLimit: () => false, onSecondaryRateLimit: () => false },
    log: { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined },
  });
}

interface HttpError {
  status?: number;
  message?: string;
  response?: { headers?: Record<string, string | number | undefined>; data?: unknown };
}

/** Seconds until GitHub accepts again: `retry-after`, else `x-ratelimit-reset` (epoch seconds), else 60. */
export function retryAfterOf(headers: Record<string, string | number | undefined> = {}, now = Date.now()): number {
  const after = Number(headers["retry-after"]);
  if (Number.isFinite(after) && after >= 0) return Math.max(1, Math.ceil(after));
  const reset = Number(headers["x-ratelimit-reset"]);
  if (Number.isFinite(reset) && reset > 0) return Math.max(1, Math.ceil(reset - now / 1000));
  return 60;
}

/** Translate an Octokit error into the port's terms. */
export function translate(err: unknown): unknown {
  const e = err as HttpError;
  if (typeof e?.status !== "number") return err;
  const headers = e.response?.headers ?? {};
  const message = e.message ?? `GitHub answered ${e.status}`;
  if (e.status === 401) return new ProviderError("auth_expired", message);
  if (e.status === 429 || (e.status === 403 && (headers["x-ratelimit-remaining"] === "0" || /rate limit/i.test(message)))) {
    return new ProviderError("rate_limited", message, retryAfterOf(headers));
  }
  if (e.status === 403) return new ProviderError("forbidden", message);
  // 410: the issue was deleted.
  if (e.status === 404 || e.status === 410) return new ProviderError("not_found", message);
  if (e.status === 422) return new ProviderError("validation", message);
  // Answered below 500, GitHub's processing of the request ended. A 5xx (a gateway that stopped waiting: 502, 504)
  // or no response at all (Octokit's status 500 for a failed fetch, our timeout's abort) may still be carried out,
  // which a push reads to keep its lease.
  return e.response && e.status < 500 ? markAnswered(new ProviderError("unknown", message)) : new ProviderError("unknown", message);
}

/** Pages read at most by a listing that scans (marker search, timeline): 500 items. */
const MAX_PAGES = 5;

const split = (repo: string) => {
  const [owner, name] = repo.split("/") as [string, string];
  return { owner, repo: name };
};

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw translate(err);
  }
}

/** The `CodeHost` port over one GitHub token. */
export function github(accessToken: string): CodeHost {
  // Made by the first call, which loads Octokit.
  let made: Promise<Client> | undefined;
  const gh = () => (made ??= githubClient(accessToken));
  return {
    async viewer() {
      const { data } = await call(async () => (await gh()).rest.users.getAuthenticated());
      return { login: data.login, avatar_url: data.avatar_url ?? null };
    },

    async listRepos(page) {
      const perPage = 100;
      const { data } = await call(async () => (await gh()).rest.repos.listForAuthenticatedUser({ per_page: perPage, page, sort: "full_name" }));
      const repos: RepoInfo[] = data.map((r) => ({
        full_name: r.full_name, name: r.name, owner: r.owner.login, private: r.private, description: r.description ?? null,
        default_branch: r.default_branch ?? null, html_url: r.html_url,
      }));
      return { repos, hasMore: data.length === perPage };
    },

    async createIssue(repo, input) {
      // Never retried here: a create whose answer was lost may have created the issue, and a blind retry would make
      // a second one. Callers that must not duplicate search for their marker first (findIssueByMarker).
      const { data } = await call(async () => (await gh()).rest.issues.create({ ...split(repo), title: input.title, body: input.body, labels: input.labels, request: { retries: 0 } }));
      return { number: data.number, url: data.html_url, title: data.title };
    },

    async findIssueByMarker(repo, marker, { since, creator }) {
      // The REST list (not search, whose index lags) of the creator's issues touched since the attempt began.
      for (let page = 1; page <= MAX_PAGES; page++) {
        const { data } = await call(async () => (await gh()).rest.issues.listForRepo({ ...split(repo), creator, since, state: "all", per_page: 100, page }));
        const hit = data.find((i) => !i.pull_request && (i.body ?? "").includes(marker));
        if (hit) return { number: hit.number, url: hit.html_url, title: hit.title };
        if (data.length < 100) break;
      }
      return null;
    },

    async getIssue(repo, number, etag) {
      try {
        const res = await (await gh()).rest.issues.get({ ...split(repo), issue_number: number, headers: etag ? { "if-none-match": etag } : {} });
        const i = res.data;
        const snapshot: IssueSnapshot = {
          number: i.number, url: i.html_url, title: i.title, state: i.state === "closed" ? "closed" : "open",
          state_reason: i.state_reason ?? null, pull_request_url: i.pull_request?.html_url ?? null,
        };
        return { modified: true, issue: snapshot, etag: (res.headers.etag as string | undefined) ?? null };
      } catch (err) {
        // A 304 answers "unchanged since that ETag" and costs no rate limit.
        if ((err as HttpError).status === 304) return { modified: false };
        throw translate(err);
      }
    },

    async linkedPullRequest(repo, number) {
      const events: unknown[] = [];
      for (let page = 1; page <= MAX_PAGES; page++) {
        const { data } = await call(async () => (await gh()).rest.issues.listEventsForTimeline({ ...split(repo), issue_number: number, per_page: 100, page }));
        events.push(...data);
        if (data.length < 100) break;
      }
      for (const ev of [...events].reverse()) {
        const source = (ev as { event?: string; source?: { issue?: { pull_request?: unknown; html_url?: string } } });
        if (source.event === "cross-referenced" && source.source?.issue?.pull_request && source.source.issue.html_url) return source.source.issue.html_url;
      }
      return null;
    },

    async getFile(repo, path) {
      const { data } = await call(async () => (await gh()).rest.repos.getContent({ ...split(repo), path }));
      if (Array.isArray(data) || data.type !== "file") throw new ProviderError("not_found", `${path} is not a file`);
      const file = data as { content?: string; encoding?: string; sha: string; size: number; path: string; download_url: string | null };
      if (file.encoding !== "base64" || file.content === undefined || (file.content === "" && file.size > 0)) {
        // Files over 1 MB come without content from the contents API.
        throw new ProviderError("too_large", `${path} is ${file.size} bytes, more than the contents API returns`);
      }
      return { path: file.path, sha: file.sha, size: file.size, bytes: Buffer.from(file.content, "base64") };
    },

    async getReadme(repo) {
      const { data } = await call(async () => (await gh()).rest.repos.getReadme(split(repo)));
      return { path: data.path, sha: data.sha, size: data.size, bytes: Buffer.from(data.content ?? "", "base64") };
    },

    async listTree(repo, path, depth) {
      const { data: info } = await call(async () => (await gh()).rest.repos.get(split(repo)));
      const { data } = await call(async () => (await gh()).rest.git.getTree({ ...split(repo), tree_sha: info.default_branch, recursive: "1" }));
      const prefix = path.replace(/^\/+|\/+$/g, "");
      const entries: TreeEntry[] = [];
      for (const t of data.tree) {
        if (!t.path) continue;
        if (prefix && !(t.path === prefix || t.path.startsWith(`${prefix}/`))) continue;
        const rel = prefix ? t.path.slice(prefix.length + 1) : t.path;
        if (!rel) continue;
        if (rel.split("/").length > depth) continue;
        entries.push({ path: t.path, type: t.type === "tree" ? "dir" : "file", size: t.size ?? null });
      }
      return { entries, truncated: data.truncated };
    },

    async searchCode(repo, query, pathFilter, max) {
      const q = [query, `repo:${repo}`, pathFilter ? `path:${pathFilter}` : ""].filter(Boolean).join(" ");
      const { data } = await call(async () =>
        (await gh()).rest.search.code({ q, per_page: Math.min(100, max), headers: { accept: "application/vnd.github.text-match+json" } }),
      );
      return {
        total: data.total_count,
        matches: data.items.map((i) => ({
          path: i.path,
          snippet: (i.text_matches ?? []).map((m) => m.fragment ?? "").filter(Boolean).join("\n…\n") || null,
        })),
      };
    },

    async listCommits(repo, opts) {
      const { data } = await call(async () => (await gh()).rest.repos.listCommits({ ...split(repo), per_page: opts.limit, ...(opts.path ? { path: opts.path } : {}), ...(opts.since ? { since: opts.since } : {}) }));
      return data.map((c) => ({
        sha: c.sha, message: c.commit.message, author: c.commit.author?.name ?? c.author?.login ?? null,
        date: c.commit.author?.date ?? c.commit.committer?.date ?? null, url: c.html_url,
      }));
    },

    async listPulls(repo, state, limit) {
      const { data } = await call(async () => (await gh()).rest.pulls.list({ ...split(repo), state, per_page: limit }));
      return data.map((p): PullRequestRef => ({
        number: p.number, title: p.title, state: p.state, author: p.user?.login ?? null, url: p.html_url,
        created_at: p.created_at, updated_at: p.updated_at, draft: p.draft ?? false,
      }));
    },
  } satisfies CodeHost;
}

export type { IssueRef };
