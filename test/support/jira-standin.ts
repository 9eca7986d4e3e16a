/**
 * A stand-in Atlassian (OAuth 2.0 3LO and the Jira Cloud REST endpoints the ticket tool uses) as `msw` handlers, at
 * addresses of its own so the ATLASSIAN_AUTH_URL / ATLASSIAN_API_URL settings are what reaches it. Bodies are typed by
 * jira.js's own models (`Project`, `PageProject`, `AccessibleResource`), and the client under test runs jira.js with
 * `onSchemaMismatch: 'throw'` (JIRA_SCHEMA_MISMATCH), so an answer jira.js's schema does not describe fails the test.
 *
 * The token endpoint behaves as Atlassian's rotating refresh tokens do: every refresh issues a new refresh token and
 * invalidates the one used; presenting a replaced one is refused (403 unauthorized_client) and revokes the whole
 * grant, as Atlassian does once the reuse falls outside its grace period.
 */
import { randomBytes } from "node:crypto";
import { http, HttpResponse } from "msw";
import { StandIn } from "./standins";
import type { AccessibleResource } from "jira.js";
import type { CreatedIssue, PageOfCreateMetaIssueTypes, PageProject, Project, SearchAndReconcileResults, StatusDetails } from "jira.js/cloud";

export const ATLASSIAN_AUTH = "https://auth.atlassian.test";
export const ATLASSIAN_API = "https://api.atlassian.test";

export interface JiraFailure {
  /** Matches `METHOD /path` (under ATLASSIAN_API, without the query). */
  match: RegExp;
  status: number;
  headers?: Record<string, string>;
  body?: Record<string, unknown>;
  times?: number;
  /**
   * The request is carried out, then its answer is lost: with `status` 0 the connection drops (a network error), with
   * a 5xx `status` the gateway answers that instead (504: Atlassian's edge timed out waiting while Jira wrote).
   */
  lost?: boolean;
  /** The request waits this long, then is carried out and answered as usual (`status` is unused): a stalled provider. */
  holdMs?: number;
}

/** An issue created in the stand-in site (by a push). */
export interface JiraIssue {
  id: string;
  key: string;
  projectKey: string;
  issueTypeId: string;
  summary: string;
  /** The ADF document as sent. */
  description: unknown;
  labels: string[];
  priority: string | null;
  statusId: string;
}

/**
 * The site's workflow statuses: Jira's fixed categories (2 new, 4 indeterminate, 3 done) under names a team might
 * choose, including a renamed done ("Shipped") and a "Won't Do" inside done: sync must read the category.
 */
const STATUSES: StatusDetails[] = [
  { id: "10000", name: "To Do", statusCategory: { id: 2, key: "new", colorName: "blue-gray", name: "To Do" } },
  { id: "3", name: "In Progress", statusCategory: { id: 4, key: "indeterminate", colorName: "yellow", name: "In Progress" } },
  { id: "10001", name: "Shipped", statusCategory: { id: 3, key: "done", colorName: "green", name: "Done" } },
  { id: "10002", name: "Won't Do", statusCategory: { id: 3, key: "done", colorName: "green", name: "Done" } },
];

/** Issue types of every project (a company-managed software project's defaults). */
const ISSUE_TYPES = [
  { id: "10001", name: "Story", subtask: false },
  { id: "10002", name: "Task", subtask: false },
  { id: "10003", name: "Bug", subtask: false },
  { id: "10004", name: "Epic", subtask: false },
  { id: "10005", name: "Subtask", subtask: true },
];

interface Grant {
  /** Every refresh token issued to this grant, the current one last. */
  refreshTokens: string[];
  revoked: boolean;
}

export class JiraStandIn extends StandIn<JiraFailure> {
  readonly clientId = "atl-client-id";
  readonly clientSecret = "atl-client-secret";
  /**
   * The site's cloud id. A test may change it: the same issues then answer under another site's id, as another site
   * does whose issues are numbered from 10000 too (a workspace reconnected to another site).
   */
  cloudId = "11223344-a1b2-4c3d-8e9f-000000000001";
  readonly siteUrl = "https://acme.atlassian.net";
  /** Seconds the access tokens issued next live (Atlassian: 3600). */
  accessTtlSeconds = 3600;
  /** Sites the next grants reach. */
  sites: AccessibleResource[] = [
    { id: "99999999-0000-4000-8000-00000000c0f1", name: "acme-wiki", url: "https://acme-wiki.atlassian.net", scopes: ["read:confluence-content.all"], avatarUrl: "https://site-admin-avatar-cdn.prod.public.atl-paas.net/avatars/240/flag.png" },
    { id: this.cloudId, name: "acme", url: this.siteUrl, scopes: ["read:jira-work", "write:jira-work", "read:jira-user"], avatarUrl: "https://site-admin-avatar-cdn.prod.public.atl-paas.net/avatars/240/rocket.png" },
  ];
  readonly projects: { key: string; name: string; type: "software" | "business" | "service_desk" }[] = [];
  /** Token endpoint calls by grant type, and refresh attempts refused as reuse. */
  readonly tokenCalls = { authorization_code: 0, refresh_token: 0, refused_reuse: 0 };
  /** API requests: method, path with query, status. */
  readonly requests: { method: string; path: string; status: number }[] = [];
  /** How many issue ids each status search (`id in (...)`) named, in order. */
  readonly idSearches: number[] = [];
  private readonly codes = new Map<string, { redirectUri: string }>();
  /** Access token → its grant and expiry (epoch ms). */
  private readonly access = new Map<string, { grant: Grant; expiresAt: number }>();
  /** Issues by id, in creation order. */
  readonly issues = new Map<string, JiraIssue>();
  /** Called once per refresh before it answers (lets a test hold a refresh in flight). */
  onRefresh: (() => Promise<void>) | undefined;

  constructor(projectCount = 3) {
    super();
    for (let i = 1; i <= projectCount; i++) this.projects.push({ key: `P${String(i).padStart(3, "0")}`, name: `Project ${i}`, type: i % 3 === 0 ? "business" : "software" });
  }

  /** An issue created in Jira by someone else (or seeded by a benchmark): its id. */
  addIssue(projectKey: string, summary: string, labels: string[] = []): JiraIssue {
    const id = String(10000 + this.issues.size + 1);
    const key = `${projectKey}-${[...this.issues.values()].filter((i) => i.projectKey === projectKey).length + 1}`;
    const issue: JiraIssue = { id, key, projectKey, issueTypeId: ISSUE_TYPES[1]!.id, summary, description: undefined, labels, priority: null, statusId: STATUSES[0]!.id! };
    this.issues.set(id, issue);
    return issue;
  }

  /** Move an issue to a workflow status by its name (a developer in Jira). */
  transition(key: string, statusName: string): void {
    const issue = [...this.issues.values()].find((i) => i.key === key);
    const status = STATUSES.find((s) => s.name === statusName);
    if (!issue || !status) throw new Error(`stand-in Jira: no issue ${key} or status ${statusName}`);
    issue.statusId = status.id!;
  }

  /** Issues created (POST /issue answered 201) since `mark` (an index into `requests`). */
  creations(mark = 0): number {
    return this.requests.slice(mark).filter((r) => r.method === "POST" && r.path.endsWith("/rest/api/3/issue") && r.status === 201).length;
  }

  /** Revoke every grant (the user removing the app from their Atlassian account). */
  revokeAll(): void {
    for (const { grant } of this.access.values()) grant.revoked = true;
  }

  /**
   * What the browser does with an auth_url: check it as Atlassian does (audience, client, exact redirect URI, response
   * type, consent prompt, offline access for a refresh token) and come back with a code and the state.
   */
  authorize(authUrl: string): { code: string; state: string } {
    const url = new URL(authUrl);
    const p = url.searchParams;
    if (`${url.origin}${url.pathname}` !== `${ATLASSIAN_AUTH}/authorize`) throw new Error(`unexpected authorize URL ${authUrl}`);
    if (p.get("audience") !== "api.atlassian.com") throw new Error("audience api.atlassian.com expected");
    if (p.get("client_id") !== this.clientId) throw new Error("unknown client_id");
    if (p.get("response_type") !== "code") throw new Error("response_type=code expected");
    if (!(p.get("scope") ?? "").split(" ").includes("offline_access")) throw new Error("offline_access expected");
    const code = randomBytes(10).toString("hex");
    this.codes.set(code, { redirectUri: p.get("redirect_uri")! });
    return { code, state: p.get("state")! };
  }

  private issue(grant: Grant) {
    const accessToken = `atl_at_${randomBytes(16).toString("hex")}`;
    const refreshToken = `atl_rt_${randomBytes(16).toString("hex")}`;
    grant.refreshTokens.push(refreshToken);
    this.access.set(accessToken, { grant, expiresAt: Date.now() + this.accessTtlSeconds * 1000 });
    return { access_token: accessToken, refresh_token: refreshToken, expires_in: this.accessTtlSeconds, token_type: "Bearer", scope: "read:jira-work write:jira-work read:jira-user offline_access" };
  }

  private grantOfRefresh(token: string): { grant: Grant; current: boolean } | undefined {
    for (const { grant } of this.access.values()) {
      const at = grant.refreshTokens.indexOf(token);
      if (at >= 0) return { grant, current: at === grant.refreshTokens.length - 1 };
    }
    return undefined;
  }

  protected handlers() {
    const api = (method: "get" | "post", template: string, answer: (ctx: { url: URL; params: Record<string, string>; body: any }) => Response) =>
      http[method](`${ATLASSIAN_API}${template}`, async ({ request, params }) => {
        const url = new URL(request.url);
        const key = `${method.toUpperCase()} ${url.pathname}`;
        let failure = this.takeFailure((f) => f.match.test(key));
        const log = (status: number) => this.requests.push({ method: method.toUpperCase(), path: url.pathname + url.search, status });
        if (failure?.holdMs) {
          await new Promise((resolve) => setTimeout(resolve, failure!.holdMs));
          failure = undefined;
        }
        if (failure) {
          if (failure.lost) {
            const done = answer({ url, params: params as Record<string, string>, body: method === "post" ? await request.json() : undefined });
            log(done.status);
            return failure.status >= 500 ? HttpResponse.json({ errorMessages: ["Gateway timeout"], errors: {} }, { status: failure.status }) : HttpResponse.error();
          }
          log(failure.status);
          return HttpResponse.json(failure.body ?? { errorMessages: ["failure"], errors: {} }, { status: failure.status, headers: failure.headers });
        }
        const token = request.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
        const held = this.access.get(token);
        if (!held || held.grant.revoked || held.expiresAt < Date.now()) {
          log(401);
          return HttpResponse.json({ code: 401, message: "Unauthorized" }, { status: 401 });
        }
        const body = method === "post" ? await request.json() : undefined;
        const res = answer({ url, params: params as Record<string, string>, body });
        log(res.status);
        return res;
      });

    return [
      http.post(`${ATLASSIAN_AUTH}/oauth/token`, async ({ request }) => {
        const text = await request.text();
        // Atlassian documents JSON bodies and accepts the standard form encoding as well.
        const form = (request.headers.get("content-type") ?? "").includes("json")
          ? new URLSearchParams(Object.entries(JSON.parse(text) as Record<string, string>))
          : new URLSearchParams(text);
        if (form.get("client_id") !== this.clientId || form.get("client_secret") !== this.clientSecret) {
          return HttpResponse.json({ error: "access_denied", error_description: "Unauthorized" }, { status: 401 });
        }
        const grantType = form.get("grant_type");
        if (grantType === "authorization_code") {
          this.tokenCalls.authorization_code++;
          const code = this.codes.get(form.get("code") ?? "");
          if (!code || code.redirectUri !== form.get("redirect_uri")) {
            return HttpResponse.json({ error: "invalid_grant", error_description: "Invalid authorization code" }, { status: 403 });
          }
          this.codes.delete(form.get("code")!);
          return HttpResponse.json(this.issue({ refreshTokens: [], revoked: false }));
        }
        if (grantType === "refresh_token") {
          this.tokenCalls.refresh_token++;
          await this.onRefresh?.();
          const found = this.grantOfRefresh(form.get("refresh_token") ?? "");
          if (!found || found.grant.revoked || !found.current) {
            this.tokenCalls.refused_reuse += found && !found.current ? 1 : 0;
            // A replaced token presented again: refused, and the grant is revoked with every token it issued.
            if (found) found.grant.revoked = true;
            return HttpResponse.json({ error: "unauthorized_client", error_description: "refresh_token is invalid" }, { status: 403 });
          }
          return HttpResponse.json(this.issue(found.grant));
        }
        return HttpResponse.json({ error: "unsupported_grant_type" }, { status: 400 });
      }),
      api("get", "/ex/jira/:cloudId/rest/api/3/issue/createmeta/:project/issuetypes", ({ params }) => {
        if (params.cloudId !== this.cloudId || !this.projects.some((p) => p.key === params.project)) return HttpResponse.json({ errorMessages: ["No project could be found with key."], errors: {} }, { status: 404 });
        const page: PageOfCreateMetaIssueTypes = { issueTypes: ISSUE_TYPES, maxResults: 200, startAt: 0, total: ISSUE_TYPES.length };
        return HttpResponse.json(page);
      }),
      api("post", "/ex/jira/:cloudId/rest/api/3/issue", ({ params, body }) => {
        const f = (body as { fields: Record<string, any> }).fields;
        const project = this.projects.find((p) => p.key === f.project?.key);
        if (params.cloudId !== this.cloudId || !project) return HttpResponse.json({ errorMessages: [], errors: { project: "valid project is required" } }, { status: 400 });
        if (!ISSUE_TYPES.some((t) => t.id === f.issuetype?.id && !t.subtask)) return HttpResponse.json({ errorMessages: [], errors: { issuetype: "valid issue type is required" } }, { status: 400 });
        if (typeof f.summary !== "string" || !f.summary || f.summary.length > 255 || /\n/.test(f.summary)) return HttpResponse.json({ errorMessages: [], errors: { summary: "Summary must be one line of at most 255 characters." } }, { status: 400 });
        // Jira Cloud's v3 API takes descriptions only as an ADF document.
        if (f.description !== undefined && (f.description?.type !== "doc" || f.description?.version !== 1)) return HttpResponse.json({ errorMessages: [], errors: { description: "Operation value must be an Atlassian Document." } }, { status: 400 });
        if ((f.labels ?? []).some((l: string) => /\s/.test(l))) return HttpResponse.json({ errorMessages: [], errors: { labels: "Labels cannot contain spaces." } }, { status: 400 });
        if (f.priority && !["Highest", "High", "Medium", "Low", "Lowest"].includes(f.priority.name)) return HttpResponse.json({ errorMessages: [], errors: { priority: "Priority name is not valid." } }, { status: 400 });
        const id = String(10000 + this.issues.size + 1);
        const key = `${project.key}-${[...this.issues.values()].filter((i) => i.projectKey === project.key).length + 1}`;
        this.issues.set(id, { id, key, projectKey: project.key, issueTypeId: f.issuetype.id, summary: f.summary, description: f.description, labels: f.labels ?? [], priority: f.priority?.name ?? null, statusId: STATUSES[0]!.id! });
        const created: CreatedIssue = { id, key, self: `${ATLASSIAN_API}/ex/jira/${this.cloudId}/rest/api/3/issue/${id}` };
        return HttpResponse.json(created, { status: 201 });
      }),
      api("post", "/ex/jira/:cloudId/rest/api/3/search/jql", ({ params, body }) => {
        if (params.cloudId !== this.cloudId) return HttpResponse.json({ errorMessages: ["Site not found"], errors: {} }, { status: 404 });
        const { jql, fields, maxResults = 50 } = body as { jql: string; fields?: string[]; maxResults?: number };
        // The two queries the adapter sends; any other JQL fails the test rather than being answered loosely.
        let hits: JiraIssue[];
        const byLabel = /^project = "([^"]+)" AND labels = "([^"]+)" ORDER BY created ASC$/.exec(jql);
        const byIds = /^id in \(([\d, ]+)\)$/.exec(jql);
        if (byLabel) hits = [...this.issues.values()].filter((i) => i.projectKey === byLabel[1] && i.labels.includes(byLabel[2]!));
        else if (byIds) {
          const ids = byIds[1]!.split(",").map((x) => x.trim());
          this.idSearches.push(ids.length);
          hits = ids.map((x) => this.issues.get(x)).filter((i): i is JiraIssue => !!i);
        }
        else throw new Error(`stand-in Jira: JQL not understood: ${jql}`);
        if (maxResults > 5000 || (fields && fields.join() !== "status")) throw new Error(`stand-in Jira: unexpected search ${JSON.stringify(body)}`);
        const page: SearchAndReconcileResults = {
          isLast: hits.length <= maxResults,
          issues: hits.slice(0, maxResults).map((i) => ({ id: i.id, key: i.key, self: `${ATLASSIAN_API}/ex/jira/${this.cloudId}/rest/api/3/issue/${i.id}`, fields: { status: STATUSES.find((s) => s.id === i.statusId) } })),
        };
        return HttpResponse.json(page);
      }),
      api("get", "/oauth/token/accessible-resources", () => HttpResponse.json(this.sites satisfies AccessibleResource[])),
      api("get", "/ex/jira/:cloudId/rest/api/3/project/search", ({ url, params }) => {
        if (params.cloudId !== this.cloudId) return HttpResponse.json({ errorMessages: ["Site not found"], errors: {} }, { status: 404 });
        const startAt = Number(url.searchParams.get("startAt") ?? 0);
        const maxResults = Number(url.searchParams.get("maxResults") ?? 50);
        const query = (url.searchParams.get("query") ?? "").toLowerCase();
        const hits = this.projects.filter((p) => !query || p.key.toLowerCase().includes(query) || p.name.toLowerCase().includes(query));
        const values = hits.slice(startAt, startAt + maxResults).map((p, i): Project => ({
          expand: "description,lead,issueTypes,url,projectKeys,permissions,insight",
          self: `${ATLASSIAN_API}/ex/jira/${this.cloudId}/rest/api/3/project/${10000 + startAt + i}`,
          id: String(10000 + this.projects.indexOf(p)),
          key: p.key,
          name: p.name,
          avatarUrls: {
            "48x48": `${this.siteUrl}/rest/api/3/universal_avatar/view/type/project/avatar/10400`,
            "24x24": `${this.siteUrl}/rest/api/3/universal_avatar/view/type/project/avatar/10400?size=small`,
            "16x16": `${this.siteUrl}/rest/api/3/universal_avatar/view/type/project/avatar/10400?size=xsmall`,
            "32x32": `${this.siteUrl}/rest/api/3/universal_avatar/view/type/project/avatar/10400?size=medium`,
          },
          projectTypeKey: p.type,
          simplified: p.type === "business",
          style: p.type === "business" ? "next-gen" : "classic",
          isPrivate: false,
          properties: {},
        }));
        const page: PageProject = {
          self: url.toString(),
          maxResults,
          startAt,
          total: hits.length,
          isLast: startAt + maxResults >= hits.length,
          values,
          ...(startAt + maxResults < hits.length ? { nextPage: `${url.origin}${url.pathname}?startAt=${startAt + maxResults}&maxResults=${maxResults}` } : {}),
        };
        return HttpResponse.json(page);
      }),
    ];
  }
}

/** Point the Atlassian settings at the stand-in, with jira.js checking every answer against its schema. */
export function useJiraSettings(jira: JiraStandIn): void {
  const { API_URL, APP_URL } = { API_URL: "https://api.r2d.test", APP_URL: "https://app.r2d.test" };
  Object.assign(process.env, {
    ATLASSIAN_AUTH_URL: ATLASSIAN_AUTH,
    ATLASSIAN_API_URL: ATLASSIAN_API,
    ATLASSIAN_CLIENT_ID: jira.clientId,
    ATLASSIAN_CLIENT_SECRET: jira.clientSecret,
    JIRA_SCHEMA_MISMATCH: "throw",
    API_URL,
    APP_URL,
  });
}

/** Connect Jira through the public API as a browser would: connect, authorize at the stand-in, callback. */
export async function connectJira(jira: JiraStandIn, token: string, workspaceId: string) {
  const { call } = await import("./api");
  const connect = await call("POST", "/api/integrations/tickets/connect", { token, body: { workspace_id: workspaceId } });
  if (connect.status !== 200) throw new Error(`connect: ${connect.status} ${connect.text}`);
  const { code, state } = jira.authorize(connect.body.auth_url);
  if (state !== connect.body.state) throw new Error("state changed on the way");
  const cb = await call("GET", "/api/integrations/tickets/callback", { query: { code, state } });
  if (cb.status !== 302 || cb.headers.location !== "https://app.r2d.test/settings/integrations?tickets=connected") throw new Error(`callback: ${cb.status} ${String(cb.headers.location)}`);
  return { state, code };
}
