/**
 * The `TicketTool` port on Jira Cloud (DESIGN.md 6.4): `jira.js` over Atlassian's API gateway,
 * `<ATLASSIAN_API_URL>/ex/jira/<cloud_id>`, with the OAuth 2.0 (3LO) access token as a bearer. The token's lifetime
 * and its rotating refresh are ours (core/integration/oauth.ts, one writer at a time), not jira.js's: its own OAuth
 * manager refreshes in memory per client, and two Lambdas each refreshing would each invalidate the other's rotated
 * refresh token. Rate limits are never waited out here: a 429 comes back as a `ProviderError` `rate_limited` with
 * Atlassian's `Retry-After`.
 */
import * as z from "zod";
import type { AccessibleResource, createCloudClient } from "jira.js";
import type { Project } from "jira.js/cloud";
import { Config } from "../../config";
import { isTransportFailure, noAnswer, ProviderError } from "../errors";
import { markAnswered, timeoutSignal, withTimeout } from "../timeout";
import type { TicketIssueStatus, TicketProject, TicketSite, TicketTool } from "./port";

// jira.js (its clients and response schemas) loads with the first Jira call, not with every Lambda that reaches this
// port (issue #24 cold starts).
const JiraJs = () => import("jira.js");

/** The Jira scope a site must have been granted for the ticket tool to use it. */
const JIRA_SCOPE = "read:jira-work";

/** Seconds until Atlassian accepts again: its `Retry-After`, else a minute. */
const retrySeconds = (ms: number | undefined): number => (ms === undefined ? 60 : Math.max(1, Math.ceil(ms / 1000)));

/** Translate a jira.js error into the port's terms; a schema mismatch (tests: 'throw') and defects pass unchanged. */
export async function translate(err: unknown): Promise<unknown> {
  const { isAuthError, isForbiddenError, isNotFoundError, isRateLimitError, isScopeError, isApiError, isNetworkError } = await JiraJs();
  if (isRateLimitError(err)) return new ProviderError("rate_limited", err.message, retrySeconds(err.retryAfterMs));
  // A token that lacks a scope is a refusal of this call, not an expired grant: reconnecting with the same scopes would not help.
  if (isScopeError(err)) return new ProviderError("forbidden", err.message);
  if (isAuthError(err)) return new ProviderError("auth_expired", err.message);
  if (isForbiddenError(err)) return new ProviderError("forbidden", err.message);
  if (isNotFoundError(err)) return new ProviderError("not_found", err.message);
  // Answered below 500, Jira's processing of the request ended, which a push reads to release its lease; a 5xx (a
  // gateway that stopped waiting: 502, 504) may still be carried out.
  if (isApiError(err)) {
    const failure = new ProviderError(err.status === 400 ? "validation" : "unknown", err.message);
    return err.status < 500 ? markAnswered(failure) : failure;
  }
  // No answer (a dropped connection): the request may still be carried out.
  if (isNetworkError(err)) return new ProviderError("unknown", err.message);
  // The provider request timeout (a TimeoutError, ../timeout.ts): no answer, `unknown`.
  if (isTransportFailure(err)) return noAnswer(err);
  return err;
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw await translate(err);
  }
}

/** Atlassian's accessible-resources entry, checked before use (jira.js types it but ships no schema for it). */
const AccessibleResourceSchema = z.object({
  id: z.string().min(1),
  name: z.string(),
  url: z.string(),
  scopes: z.array(z.string()),
  avatarUrl: z.string(),
}) satisfies z.ZodType<AccessibleResource>;

/**
 * The sites an access token reaches (`<ATLASSIAN_API_URL>/oauth/token/accessible-resources`), Jira sites first: the
 * ticket tool connects the first one granted Jira scopes.
 * @throws ProviderError auth_expired (401), rate_limited (429), unknown (anything else)
 */
export async function accessibleSites(accessToken: string): Promise<TicketSite[]> {
  // jira.js's own helper has the public address built in; the setting must reach stand-ins and proxies too.
  const res = await fetch(`${Config.atlassianApiUrl()}/oauth/token/accessible-resources`, {
    headers: { authorization: `Bearer ${accessToken}`, accept: "application/json" },
    signal: timeoutSignal("Atlassian"),
  }).catch((err: unknown) => {
    throw new ProviderError("unknown", `Atlassian did not answer: ${(err as Error).message}`);
  });
  if (res.status === 401) throw new ProviderError("auth_expired", "Atlassian refused the access token");
  if (res.status === 429) {
    const after = Number(res.headers.get("retry-after"));
    throw new ProviderError("rate_limited", "Atlassian is rate limiting", Number.isFinite(after) && after > 0 ? Math.ceil(after) : 60);
  }
  if (!res.ok) throw new ProviderError("unknown", `Atlassian answered ${res.status} for the accessible resources`);
  const parsed = z.array(AccessibleResourceSchema).safeParse(await res.json());
  if (!parsed.success) throw new ProviderError("unknown", "Atlassian's accessible resources were not in the documented shape");
  const sites = parsed.data.map((r): TicketSite => ({ cloud_id: r.id, name: r.name, url: r.url, scopes: r.scopes, avatar_url: r.avatarUrl || null }));
  const jira = (s: TicketSite) => s.scopes.some((scope) => scope.endsWith(":jira-work") || scope === JIRA_SCOPE);
  return [...sites.filter(jira), ...sites.filter((s) => !jira(s))];
}

/** The site-scoped REST base of a cloud id, through Atlassian's API gateway (the only base an OAuth 2.0 token works on). */
export const jiraHost = (cloudId: string): string => `${Config.atlassianApiUrl()}/ex/jira/${encodeURIComponent(cloudId)}`;

/** Issues a status read asks for at once: Jira's page of the enhanced search with only `status` selected. */
export const STATUS_PAGE = 100;

type AdfNode = { type: string; attrs?: Record<string, unknown>; content?: AdfNode[]; text?: string };

/** Lines as ADF text separated by hard breaks (a line break inside a paragraph). */
const inline = (lines: string[]): AdfNode[] =>
  lines.flatMap((line, i) => [...(i ? [{ type: "hardBreak" }] : []), ...(line ? [{ type: "text", text: line }] : [])]);

/**
 * Plain text with blank-line paragraphs as an Atlassian Document Format document (Jira Cloud's v3 API takes
 * descriptions only in ADF): `## ` lines become headings, blocks of `- ` lines bullet lists, the rest paragraphs. The
 * text itself is carried verbatim (the evidence's quotes must arrive as written); HTML comments are dropped, since
 * ADF would show them as text.
 */
export function toAdf(text: string): { type: "doc"; version: 1; content: AdfNode[] } {
  const content: AdfNode[] = [];
  for (const block of text.replace(/<!--[\s\S]*?-->/g, "").split(/\n{2,}/)) {
    const lines = block.split("\n").map((l) => l.trimEnd()).filter(Boolean);
    if (!lines.length) continue;
    const heading = /^(#{1,6}) (.*)$/.exec(lines[0]!);
    if (heading && lines.length === 1) {
      content.push({ type: "heading", attrs: { level: heading[1]!.length }, content: inline([heading[2]!]) });
    } else if (lines.every((l) => l.startsWith("- "))) {
      content.push({ type: "bulletList", content: lines.map((l) => ({ type: "listItem", content: [{ type: "paragraph", content: inline([l.slice(2)]) }] })) });
    } else {
      content.push({ type: "paragraph", content: inline(lines) });
    }
  }
  return { type: "doc", version: 1, content };
}

/** A JQL string literal. */
const jqlString = (s: string) => `"${s.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;

const toProject = (p: Project): TicketProject => ({
  id: p.id ?? "",
  key: p.key ?? "",
  name: p.name ?? p.key ?? "",
  project_type_key: p.projectTypeKey ?? null,
  style: p.style ?? null,
  avatar_url: p.avatarUrls?.["48x48"] ?? null,
});

/** The `TicketTool` port over one Jira site and one access token. */
export function jira(accessToken: string, cloudId: string): TicketTool {
  // Both clients are made by the first call, which loads jira.js.
  let made: Promise<{ client: ReturnType<typeof createCloudClient>; writer: ReturnType<typeof createCloudClient> }> | undefined;
  // jira.js takes neither a signal nor a fetch of its own, and has no timeout: each request (its retries included)
  // goes through a client whose sendRequest is bounded by PROVIDER_REQUEST_TIMEOUT_SECONDS (../timeout.ts).
  const timed = (createClient: typeof import("jira.js/core").createClient, config: Parameters<typeof createCloudClient>[0]) => {
    const inner = createClient(config);
    return { sendRequest: ((options) => withTimeout("Jira", inner.sendRequest(options))) as typeof inner.sendRequest };
  };
  const clients = () =>
    (made ??= Promise.all([JiraJs(), import("jira.js/core")]).then(([{ createCloudClient }, { createClient }]) => ({
      client: createCloudClient(
        timed(createClient, {
          host: jiraHost(cloudId),
          auth: { type: "bearer", token: accessToken },
          onSchemaMismatch: Config.jiraSchemaMismatch(),
          // One quick retry of a 502/503/504 or a dropped connection (jira.js never retries a 4xx, so never a 429).
          retry: { maxAttempts: 2, initialDelayMs: 200 },
        }),
      ),
      // Creates are not idempotent, and jira.js retries a dropped connection whatever the method: a create whose
      // answer was lost would be made twice. Creates go through a client that never retries; the push's marker search
      // (a label) is what finds an issue behind a lost answer.
      writer: createCloudClient(
        timed(createClient, {
          host: jiraHost(cloudId),
          auth: { type: "bearer", token: accessToken },
          onSchemaMismatch: Config.jiraSchemaMismatch(),
          retry: { maxAttempts: 1 },
        }),
      ),
    })));
  return {
    async listProjects({ startAt, maxResults, query }) {
      const page = await call(async () => (await clients()).client.projects.searchProjects({ startAt, maxResults, orderBy: "key", ...(query ? { query } : {}) }));
      return { projects: page.values.map(toProject), total: page.total, isLast: page.isLast };
    },

    async issueTypes(projectKey) {
      const page = await call(async () => (await clients()).client.issues.getCreateIssueMetaIssueTypes({ projectIdOrKey: projectKey, maxResults: 200 }));
      const types = page.issueTypes ?? page.createMetaIssueType ?? [];
      return types.filter((t) => t.id && t.name).map((t) => ({ id: t.id!, name: t.name!, subtask: Boolean(t.subtask) }));
    },

    async createIssue(input) {
      const created = await call(async () =>
        (await clients()).writer.issues.createIssue({
          fields: {
            project: { key: input.projectKey },
            issuetype: { id: input.issueTypeId },
            // Jira refuses a summary over 255 characters or with a line break.
            summary: input.summary.replace(/\s+/g, " ").trim().slice(0, 255),
            description: toAdf(input.description),
            labels: input.labels,
            ...(input.priority ? { priority: { name: input.priority } } : {}),
          },
        }),
      );
      return { id: created.id, key: created.key };
    },

    async findByLabel(projectKey, label) {
      const page = await call(async () =>
        (await clients()).client.issueSearch.searchAndReconsileIssuesUsingJqlPost({ jql: `project = ${jqlString(projectKey)} AND labels = ${jqlString(label)} ORDER BY created ASC`, fields: ["status"], maxResults: 1 }),
      );
      const hit = page.issues?.[0];
      return hit?.id && hit.key ? { id: hit.id, key: hit.key } : null;
    },

    async statuses(ids) {
      if (!ids.length) return [];
      if (ids.length > STATUS_PAGE) throw new Error(`statuses: at most ${STATUS_PAGE} ids a call`);
      const numeric = ids.map(Number).filter((n) => Number.isInteger(n) && n > 0);
      // No id Jira could have given (a link written by hand or damaged): `id in ()` is a JQL error, not an empty answer.
      if (!numeric.length) return [];
      // reconcileIssues: the search index lags behind writes; naming the ids makes Jira answer them as they are now.
      const page = await call(async () =>
        (await clients()).client.issueSearch.searchAndReconsileIssuesUsingJqlPost({ jql: `id in (${numeric.join(", ")})`, fields: ["status"], maxResults: STATUS_PAGE, reconcileIssues: numeric }),
      );
      return (page.issues ?? []).flatMap((i): TicketIssueStatus[] => {
        const status = i.fields?.status as { name?: string; statusCategory?: { key?: string; id?: number } } | undefined;
        if (!i.id || !i.key || !status) return [];
        return [{ id: i.id, key: i.key, status: { name: status.name ?? "", category_key: status.statusCategory?.key ?? null, category_id: status.statusCategory?.id ?? null } }];
      });
    },
  } satisfies TicketTool;
}
