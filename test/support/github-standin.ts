/**
 * A stand-in GitHub (OAuth web flow and the REST endpoints the code host uses) as `msw` handlers, served at a GitHub
 * Enterprise Server-shaped address so the GITHUB_API_URL / GITHUB_WEB_URL settings are what reaches it. Every JSON
 * answer is checked against GitHub's published schema (test/support/github-schema.ts); objects start from Octokit's
 * recorded fixtures (test/fixtures/github/README.md). Real Octokit and oauth4webapi run against it unchanged.
 */
import { createHash, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { http, HttpResponse } from "msw";
import { StandIn } from "./standins";
import { assertGithubRequest, assertGithubResponse } from "./github-schema";

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../fixtures/github/${name}.json`, import.meta.url), "utf8"));
const ISSUE = fixture("issue");
const REPOSITORY = fixture("repository");

export const GHE_WEB = "https://ghe.test";
export const GHE_API = "https://ghe.test/api/v3";

interface StoredIssue {
  number: number;
  title: string;
  body: string | null;
  state: "open" | "closed";
  state_reason: "completed" | "not_planned" | "reopened" | null;
  labels: string[];
  creator: string;
  updated_at: string;
  /** Bumped on every change: the ETag is derived from it. */
  version: number;
  linked_pr?: number;
}

export interface Failure {
  /** Matches `METHOD /path` of the API (without the base). */
  match: RegExp;
  status: number;
  headers?: Record<string, string>;
  message: string;
  /** How many requests it answers (default 1). */
  times?: number;
  /** The request is carried out, then its answer is lost (a network error, as after a timeout): `status` is unused. */
  lost?: boolean;
  /**
   * The request waits this long, then is carried out and answered as usual (`status` is unused): a stalled provider,
   * whose answer the caller may have given up on by then.
   */
  holdMs?: number;
  /** Only a request whose body contains this (a ticket's marker): other work running meanwhile is answered as usual. */
  bodyIncludes?: string;
}

export class GitHubStandIn extends StandIn<Failure> {
  readonly clientId = "gh-client-id";
  readonly clientSecret = "gh-client-secret";
  readonly login = "octokit-fixture-user-a";
  readonly repos = new Map<string, { issues: StoredIssue[]; private: boolean; description: string | null; files: Map<string, string> }>();
  /** Commits and pull requests every repository answers with (newest first). */
  readonly commits = Array.from({ length: 30 }, (_, i) => ({ sha: `${(1000 + i).toString(16).padStart(40, "a")}`, message: `Change ${30 - i}`, date: new Date(Date.UTC(2026, 0, 30 - i)).toISOString().replace(".000", "") }));
  /** Every API request: method, path (with query) and the status answered. */
  readonly requests: { method: string; path: string; status: number }[] = [];
  /**
   * Seconds the access tokens issued next live, with a rotating refresh token beside them: GitHub's expiring user
   * tokens (a GitHub App's `ghu_` tokens, 8 hours, refreshed with `ghr_` tokens that are single-use). Unset (default):
   * an OAuth app's `gho_` tokens, which never expire and come with no refresh token.
   */
  userTokenTtlSeconds: number | undefined;
  /** Token endpoint calls by grant type. */
  readonly tokenCalls = { authorization_code: 0, refresh_token: 0 };
  private readonly codes = new Map<string, { challenge?: string; redirectUri: string }>();
  /** Access token → when it expires (epoch ms; Infinity for an OAuth app's token). */
  private readonly tokens = new Map<string, number>();
  private readonly refreshTokens = new Set<string>();

  constructor(repos: string[] = ["octokit-fixture-org/hello-world"]) {
    super();
    for (const r of repos) this.repos.set(r, { issues: [], private: false, description: `The ${r} repository`, files: new Map() });
  }

  /** Revoke every token issued so far (a user revoking the OAuth app). */
  revokeAll(): void {
    this.tokens.clear();
    this.refreshTokens.clear();
  }

  /**
   * What the browser does with an auth_url: check it as GitHub would (client, exact redirect URI, S256 challenge)
   * and come back with a code and the state.
   */
  authorize(authUrl: string): { code: string; state: string } {
    const url = new URL(authUrl);
    if (`${url.origin}${url.pathname}` !== `${GHE_WEB}/login/oauth/authorize`) throw new Error(`unexpected authorize URL ${authUrl}`);
    if (url.searchParams.get("client_id") !== this.clientId) throw new Error("unknown client_id");
    if (url.searchParams.get("code_challenge_method") !== "S256") throw new Error("PKCE S256 expected");
    const code = randomBytes(10).toString("hex");
    this.codes.set(code, { challenge: url.searchParams.get("code_challenge") ?? undefined, redirectUri: url.searchParams.get("redirect_uri")! });
    return { code, state: url.searchParams.get("state")! };
  }

  /** Put a file in a repository's default branch. */
  putFile(repo: string, path: string, content: string): void {
    this.repos.get(repo)!.files.set(path, content);
  }

  /** Open an issue as someone else would (not through our API). */
  addIssue(repo: string, title: string, body = ""): number {
    const r = this.repos.get(repo)!;
    const number = r.issues.length + 1;
    r.issues.push({ number, title, body, state: "open", state_reason: null, labels: [], creator: "someone-else", updated_at: new Date().toISOString(), version: 1 });
    return number;
  }

  /** Move an issue's last change `ms` into the past, as if it had not been touched since (time passing for `since`). */
  age(repo: string, number: number, ms: number): void {
    const issue = this.issue(repo, number);
    issue.updated_at = new Date(Date.parse(issue.updated_at) - ms).toISOString();
  }

  /** Close an issue in the tracker (a developer finishing the work), optionally by a pull request. */
  close_(repo: string, number: number, reason: "completed" | "not_planned" = "completed", pr?: number): void {
    const issue = this.issue(repo, number);
    Object.assign(issue, { state: "closed", state_reason: reason, updated_at: new Date().toISOString(), version: issue.version + 1, ...(pr ? { linked_pr: pr } : {}) });
  }

  /** A token endpoint answer: an OAuth app's token, or an expiring user token with its refresh token. */
  private newToken() {
    if (this.userTokenTtlSeconds === undefined) {
      const token = `gho_${randomBytes(18).toString("hex")}`;
      this.tokens.set(token, Infinity);
      return { access_token: token, token_type: "bearer", scope: "repo,read:user" };
    }
    const token = `ghu_${randomBytes(18).toString("hex")}`;
    const refresh = `ghr_${randomBytes(30).toString("hex")}`;
    this.tokens.set(token, Date.now() + this.userTokenTtlSeconds * 1000);
    this.refreshTokens.add(refresh);
    return { access_token: token, expires_in: this.userTokenTtlSeconds, refresh_token: refresh, refresh_token_expires_in: 15_811_200, token_type: "bearer", scope: "" };
  }

  issue(repo: string, number: number): StoredIssue {
    const found = this.repos.get(repo)?.issues.find((i) => i.number === number);
    if (!found) throw new Error(`no issue ${repo}#${number}`);
    return found;
  }

  /** Requests that created content (POST): what GitHub's content-creation limits count. */
  creations(): number {
    return this.requests.filter((r) => r.method === "POST").length;
  }

  private issueJson(repo: string, i: StoredIssue) {
    return {
      ...ISSUE,
      url: `${GHE_API}/repos/${repo}/issues/${i.number}`,
      repository_url: `${GHE_API}/repos/${repo}`,
      labels_url: `${GHE_API}/repos/${repo}/issues/${i.number}/labels{/name}`,
      comments_url: `${GHE_API}/repos/${repo}/issues/${i.number}/comments`,
      events_url: `${GHE_API}/repos/${repo}/issues/${i.number}/events`,
      html_url: `${GHE_WEB}/${repo}/issues/${i.number}`,
      id: 5000 + i.number,
      number: i.number,
      title: i.title,
      body: i.body,
      state: i.state,
      state_reason: i.state_reason,
      closed_at: i.state === "closed" ? i.updated_at : null,
      updated_at: i.updated_at,
      labels: i.labels.map((name, k) => ({ id: k + 1, node_id: "MDU6TGFiZWwx", url: `${GHE_API}/repos/${repo}/labels/${encodeURIComponent(name)}`, name, description: null, color: "ededed", default: false })),
      user: { ...ISSUE.user, login: i.creator },
    };
  }

  private repoJson(fullName: string) {
    const [owner, name] = fullName.split("/") as [string, string];
    const r = this.repos.get(fullName)!;
    return {
      ...REPOSITORY,
      name,
      full_name: fullName,
      private: r.private,
      description: r.description,
      html_url: `${GHE_WEB}/${fullName}`,
      url: `${GHE_API}/repos/${fullName}`,
      owner: { ...REPOSITORY.owner, login: owner },
      // Required by today's schema, absent from the 2017 recording.
      has_discussions: false,
    };
  }

  protected handlers() {
    const api = (method: "get" | "post", template: string, answer: (ctx: { params: Record<string, string>; url: URL; request: Request }) => Promise<Response> | Response) => {
      // A file path spans segments: msw's wildcard takes it whole.
      const mswPath = template.replace("{path}", "*").replace(/\{([^}]+)\}/g, ":$1");
      return http[method](`${GHE_API}${mswPath}`, async ({ request, params }) => {
        const url = new URL(request.url);
        const key = `${method.toUpperCase()} ${url.pathname.slice("/api/v3".length)}`;
        const sent = method === "post" ? await request.clone().text() : "";
        let failure = this.takeFailure((f) => f.match.test(key) && (!f.bodyIncludes || sent.includes(f.bodyIncludes)));
        if (failure?.holdMs) {
          await new Promise((resolve) => setTimeout(resolve, failure!.holdMs));
          failure = undefined;
        }
        if (failure?.lost) {
          const done = await answer({ params: params as Record<string, string>, url, request });
          this.requests.push({ method: method.toUpperCase(), path: url.pathname + url.search, status: done.status });
          return HttpResponse.error();
        }
        if (failure) {
          this.requests.push({ method: method.toUpperCase(), path: url.pathname + url.search, status: failure.status });
          return HttpResponse.json({ message: failure.message, documentation_url: "https://docs.github.com/rest" }, { status: failure.status, headers: failure.headers });
        }
        const token = request.headers.get("authorization")?.replace(/^(token|bearer) /i, "");
        if (!token || !((this.tokens.get(token) ?? 0) > Date.now())) {
          this.requests.push({ method: method.toUpperCase(), path: url.pathname + url.search, status: 401 });
          return HttpResponse.json({ message: "Bad credentials", documentation_url: "https://docs.github.com/rest" }, { status: 401 });
        }
        const res = await answer({ params: params as Record<string, string>, url, request });
        this.requests.push({ method: method.toUpperCase(), path: url.pathname + url.search, status: res.status });
        if (res.status < 300 && res.headers.get("content-type")?.includes("json")) {
          assertGithubResponse(method, template, res.status, await res.clone().json());
        }
        return res;
      });
    };
    const json = (body: Record<string, unknown> | unknown[], status = 200, headers: Record<string, string> = {}) =>
      HttpResponse.json(body, { status, headers: { "x-ratelimit-limit": "5000", "x-ratelimit-remaining": "4999", ...headers } });
    const repoOf = (p: Record<string, string>) => `${p.owner}/${p.repo}`;

    const sha = (text: string) => createHash("sha1").update(text).digest("hex");
    const contentJson = (repo: string, path: string, text: string) => ({
      type: "file", encoding: "base64", size: Buffer.byteLength(text), name: path.split("/").pop()!, path, content: Buffer.from(text).toString("base64"),
      sha: sha(text), url: `${GHE_API}/repos/${repo}/contents/${path}`, git_url: null, html_url: null, download_url: null,
      _links: { git: null, html: null, self: `${GHE_API}/repos/${repo}/contents/${path}` },
    });
    const fileOf = (p: Record<string, string>, path: string) => this.repos.get(repoOf(p))?.files.get(path);

    return [
      api("get", "/repos/{owner}/{repo}/contents/{path}", ({ params, url }) => {
        const path = decodeURIComponent(url.pathname.split("/contents/")[1] ?? "");
        const text = fileOf(params, path);
        return text === undefined ? json({ message: "Not Found" }, 404) : json(contentJson(repoOf(params), path, text));
      }),
      api("get", "/repos/{owner}/{repo}/readme", ({ params }) => {
        const text = fileOf(params, "README.md");
        return text === undefined ? json({ message: "Not Found" }, 404) : json(contentJson(repoOf(params), "README.md", text));
      }),
      api("get", "/repos/{owner}/{repo}/git/trees/{tree_sha}", ({ params }) => {
        const files = [...(this.repos.get(repoOf(params))?.files.keys() ?? [])];
        const dirs = new Set(files.flatMap((f) => f.split("/").slice(0, -1).map((_, i, parts) => parts.slice(0, i + 1).join("/"))));
        const tree = [
          ...[...dirs].map((d) => ({ path: d, mode: "040000", type: "tree", sha: sha(d), url: `${GHE_API}/repos/${repoOf(params)}/git/trees/${sha(d)}` })),
          ...files.map((f) => ({ path: f, mode: "100644", type: "blob", sha: sha(f), size: Buffer.byteLength(fileOf(params, f)!), url: `${GHE_API}/repos/${repoOf(params)}/git/blobs/${sha(f)}` })),
        ].sort((a, b) => a.path.localeCompare(b.path));
        return json({ sha: sha("root"), url: `${GHE_API}/repos/${repoOf(params)}/git/trees/main`, tree, truncated: false });
      }),
      api("get", "/search/code", ({ url }) => {
        const q = url.searchParams.get("q") ?? "";
        const repo = /repo:(\S+)/.exec(q)?.[1] ?? "";
        const pathFilter = /path:(\S+)/.exec(q)?.[1];
        const term = q.replace(/(repo|path):\S+/g, "").trim();
        const per = Number(url.searchParams.get("per_page") ?? 30);
        const hits = [...(this.repos.get(repo)?.files ?? new Map<string, string>())].filter(([p, t]) => t.includes(term) && (!pathFilter || p.startsWith(pathFilter)));
        const full = this.repoJson(repo);
        return json({
          total_count: hits.length,
          incomplete_results: false,
          items: hits.slice(0, per).map(([p, t]) => ({
            name: p.split("/").pop()!, path: p, sha: sha(t), url: `${GHE_API}/repos/${repo}/contents/${p}`, git_url: `${GHE_API}/repos/${repo}/git/blobs/${sha(t)}`,
            html_url: `${GHE_WEB}/${repo}/blob/main/${p}`, repository: { ...full, owner: full.owner }, score: 1,
            text_matches: [{ object_url: `${GHE_API}/repos/${repo}/contents/${p}`, object_type: "FileContent", property: "content", fragment: t.split("\n").find((l) => l.includes(term)) ?? "", matches: [] }],
          })),
        });
      }),
      api("get", "/repos/{owner}/{repo}/commits", ({ params, url }) => {
        const per = Number(url.searchParams.get("per_page") ?? 30);
        const since = url.searchParams.get("since");
        const repo = repoOf(params);
        return json(this.commits.filter((c) => !since || c.date >= since).slice(0, per).map((c) => ({
          url: `${GHE_API}/repos/${repo}/commits/${c.sha}`, sha: c.sha, node_id: "MDY6Q29tbWl0MQ==", html_url: `${GHE_WEB}/${repo}/commit/${c.sha}`,
          comments_url: `${GHE_API}/repos/${repo}/commits/${c.sha}/comments`,
          commit: {
            url: `${GHE_API}/repos/${repo}/git/commits/${c.sha}`, author: { name: "Fixture User", email: "fixture@example.com", date: c.date },
            committer: { name: "Fixture User", email: "fixture@example.com", date: c.date }, message: c.message, comment_count: 0,
            tree: { sha: c.sha, url: `${GHE_API}/repos/${repo}/git/trees/${c.sha}` },
          },
          author: ISSUE.user, committer: ISSUE.user, parents: [],
        })));
      }),
      api("get", "/repos/{owner}/{repo}/pulls", ({ url }) => {
        // No pull requests in the stand-in's repositories: the list is empty whatever the state.
        void url;
        return json([]);
      }),
      http.post(`${GHE_WEB}/login/oauth/access_token`, async ({ request }) => {
        const form = new URLSearchParams(await request.text());
        if (form.get("grant_type") === "refresh_token") {
          this.tokenCalls.refresh_token++;
          // GitHub answers token-endpoint errors with 200 and an error field; a refresh token is good for one use.
          if (form.get("client_id") !== this.clientId || form.get("client_secret") !== this.clientSecret) {
            return HttpResponse.json({ error: "incorrect_client_credentials", error_description: "The client_id and/or client_secret passed are incorrect." });
          }
          if (!this.refreshTokens.delete(form.get("refresh_token") ?? "")) {
            return HttpResponse.json({ error: "bad_refresh_token", error_description: "The refresh token passed is incorrect or expired." });
          }
          return HttpResponse.json(this.newToken());
        }
        this.tokenCalls.authorization_code++;
        const grant = this.codes.get(form.get("code") ?? "");
        const verifier = form.get("code_verifier") ?? "";
        const challenge = createHash("sha256").update(verifier).digest("base64url");
        // GitHub answers a bad exchange with 200 and an error field.
        if (!grant || form.get("client_id") !== this.clientId || form.get("client_secret") !== this.clientSecret) {
          return HttpResponse.json({ error: "bad_verification_code", error_description: "The code passed is incorrect or expired." });
        }
        if (grant.redirectUri !== form.get("redirect_uri")) return HttpResponse.json({ error: "redirect_uri_mismatch" });
        if (grant.challenge && grant.challenge !== challenge) return HttpResponse.json({ error: "bad_verification_code" });
        this.codes.delete(form.get("code")!);
        return HttpResponse.json(this.newToken());
      }),
      api("get", "/user", () =>
        json({
          ...ISSUE.user, login: this.login, name: "Fixture User", company: null, blog: "", location: null, email: null, hireable: null, bio: null,
          public_repos: this.repos.size, public_gists: 0, followers: 0, following: 0, created_at: "2017-10-10T16:00:00Z", updated_at: "2017-10-10T16:00:00Z",
        })),
      api("get", "/user/repos", ({ url }) => {
        const per = Number(url.searchParams.get("per_page") ?? 30);
        const page = Number(url.searchParams.get("page") ?? 1);
        const all = [...this.repos.keys()].sort();
        return json(all.slice((page - 1) * per, page * per).map((r) => this.repoJson(r)));
      }),
      api("get", "/repos/{owner}/{repo}", ({ params }) => (this.repos.has(repoOf(params)) ? json(this.repoJson(repoOf(params))) : json({ message: "Not Found" }, 404))),
      api("post", "/repos/{owner}/{repo}/issues", async ({ params, request }) => {
        const repo = this.repos.get(repoOf(params));
        if (!repo) return json({ message: "Not Found" }, 404);
        const body = (await request.json()) as { title: string; body?: string; labels?: string[] };
        assertGithubRequest("post", "/repos/{owner}/{repo}/issues", body);
        const issue: StoredIssue = {
          number: repo.issues.length + 1, title: body.title, body: body.body ?? null, state: "open", state_reason: null,
          labels: body.labels ?? [], creator: this.login, updated_at: new Date().toISOString(), version: 1,
        };
        repo.issues.push(issue);
        return json(this.issueJson(repoOf(params), issue), 201);
      }),
      api("get", "/repos/{owner}/{repo}/issues", ({ params, url }) => {
        const repo = this.repos.get(repoOf(params));
        if (!repo) return json({ message: "Not Found" }, 404);
        const creator = url.searchParams.get("creator");
        const since = url.searchParams.get("since");
        const state = url.searchParams.get("state") ?? "open";
        const per = Number(url.searchParams.get("per_page") ?? 30);
        const page = Number(url.searchParams.get("page") ?? 1);
        const hits = repo.issues
          .filter((i) => (!creator || i.creator === creator) && (!since || i.updated_at >= since) && (state === "all" || i.state === state))
          .sort((a, b) => b.number - a.number);
        return json(hits.slice((page - 1) * per, page * per).map((i) => this.issueJson(repoOf(params), i)));
      }),
      api("get", "/repos/{owner}/{repo}/issues/{issue_number}", ({ params, request }) => {
        const repo = this.repos.get(repoOf(params));
        const issue = repo?.issues.find((i) => i.number === Number(params.issue_number));
        if (!issue) return json({ message: "Not Found" }, 404);
        const etag = `"${createHash("sha1").update(`${repoOf(params)}#${issue.number}@${issue.version}`).digest("hex")}"`;
        // A matching If-None-Match is answered 304 with no body, and GitHub does not count it against the limit.
        if (request.headers.get("if-none-match") === etag) return new HttpResponse(null, { status: 304, headers: { etag } });
        return json(this.issueJson(repoOf(params), issue), 200, { etag });
      }),
      api("get", "/repos/{owner}/{repo}/issues/{issue_number}/timeline", ({ params }) => {
        const issue = this.repos.get(repoOf(params))?.issues.find((i) => i.number === Number(params.issue_number));
        if (!issue) return json({ message: "Not Found" }, 404);
        if (!issue.linked_pr) return json([]);
        const pr = {
          ...this.issueJson(repoOf(params), { ...issue, number: issue.linked_pr, title: `Fix #${issue.number}` }),
          html_url: `${GHE_WEB}/${repoOf(params)}/pull/${issue.linked_pr}`,
          pull_request: { url: `${GHE_API}/repos/${repoOf(params)}/pulls/${issue.linked_pr}`, html_url: `${GHE_WEB}/${repoOf(params)}/pull/${issue.linked_pr}`, diff_url: null, patch_url: null, merged_at: issue.updated_at },
        };
        return json([{ event: "cross-referenced", actor: ISSUE.user, created_at: issue.updated_at, updated_at: issue.updated_at, source: { type: "issue", issue: pr } }]);
      }),
    ];
  }
}
