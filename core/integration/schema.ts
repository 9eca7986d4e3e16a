import * as z from "zod";

/**
 * Characters of issue body a code-host create takes: GitHub's 65,536 less room for the marker line a create appends
 * (`\n\n<!-- r2d:issue:<32 hex> -->`, or an action's id), so a body the schema takes is never refused by GitHub.
 */
export const ISSUE_BODY_MAX = 65_536 - 100;

/** The four integration kinds (spec 02: codehost = GitHub, planner = Linear, tickets = Jira Cloud, filestore = Google Drive). */
export const IntegrationKind = z.enum(["codehost", "planner", "tickets", "filestore"]).meta({ id: "IntegrationKind" });
export type IntegrationKind = z.infer<typeof IntegrationKind>;

/** Body of `POST /connect` (and the ticket tool's `POST /disconnect`). */
export const WorkspaceBody = z.object({ workspace_id: z.uuid() });
export type WorkspaceBody = z.infer<typeof WorkspaceBody>;

/** Query naming the workspace (status, disconnect, repos...). */
export const WorkspaceQuery = z.object({ workspace_id: z.uuid() });
export type WorkspaceQuery = z.infer<typeof WorkspaceQuery>;

/** `POST /connect` answer (spec 02 Authentication 4): where to send the browser, and the state it carries. */
export const ConnectResult = z.object({ auth_url: z.url(), state: z.string() }).meta({ id: "ConnectResult" });
export type ConnectResult = z.infer<typeof ConnectResult>;

/**
 * `GET /callback` query, as the provider sends it: `code` and `state`, or an `error` (the user declined). Loose on
 * purpose: a malformed callback is answered with a redirect naming the reason, not a JSON 422 the browser shows.
 */
export const CallbackQuery = z
  .object({
    // Too long to be ours: as good as absent (the callback then redirects with invalid_state or exchange_failed).
    code: z.string().optional().transform((s) => (s && s.length <= 2048 ? s : undefined)),
    state: z.string().optional().transform((s) => (s && s.length <= 512 ? s : undefined)),
    // Only whether it is there matters (access_denied); its text is never shown.
    error: z.string().optional().transform((s) => s?.slice(0, 200)),
    error_description: z.string().optional().transform((s) => s?.slice(0, 2000)),
  })
  .loose();
export type CallbackQuery = z.infer<typeof CallbackQuery>;

/** The status answer of the code host (spec 02 Integration status fields, both names of the repo count). */
export const CodehostStatus = z
  .object({
    connected: z.boolean(),
    needs_reconnect: z.boolean().describe("the grant expired or was revoked: connect again"),
    codehost_username: z.string().nullable(),
    login: z.string().nullable(),
    codehost_avatar_url: z.string().nullable(),
    repos_count: z.int(),
    repos_selected: z.int(),
    selected_repos: z.array(z.string()),
    last_synced_at: z.string().nullable(),
  })
  .meta({ id: "CodehostStatus" });
export type CodehostStatus = z.infer<typeof CodehostStatus>;

/** A repository the connected account can reach. */
export const RepoView = z.object({
  full_name: z.string(),
  name: z.string(),
  owner: z.string(),
  private: z.boolean(),
  description: z.string().nullable(),
  default_branch: z.string().nullable(),
  html_url: z.string(),
  selected: z.boolean(),
});
export type RepoView = z.infer<typeof RepoView>;

/** `GET /repos` query: one provider page (100 repositories), filtered by `search` on the full name and description. */
export const ReposQuery = z.object({
  workspace_id: z.uuid(),
  search: z.string().trim().max(200).optional(),
  page: z.coerce.number().int().min(1).max(1000).default(1),
});
export type ReposQuery = z.infer<typeof ReposQuery>;

export const RepoList = z
  .object({ repos: z.array(RepoView), page: z.int(), has_more: z.boolean(), total: z.int() })
  .meta({ id: "RepoList" });

/** `POST /repos/select` body. */
export const SelectReposBody = z.object({
  workspace_id: z.uuid(),
  repos: z.array(z.string().regex(/^[\w.-]+\/[\w.-]+$/, "org/repo")).max(100),
});
export type SelectReposBody = z.infer<typeof SelectReposBody>;

export const SelectReposResult = z.object({ selected_repos: z.array(z.string()) });

/**
 * `POST /issues` body: the repository under any of the spec's three names (`repository`, `repo_full_name`, `repo`).
 * Title defaults to the recommendation's title, body to its description.
 */
export const CreateIssueBody = z
  .object({
    workspace_id: z.uuid(),
    recommendation_id: z.uuid(),
    repository: z.string().regex(/^[\w.-]+\/[\w.-]+$/).optional(),
    repo_full_name: z.string().regex(/^[\w.-]+\/[\w.-]+$/).optional(),
    repo: z.string().regex(/^[\w.-]+\/[\w.-]+$/).optional(),
    title: z.string().trim().min(1).max(256).optional(),
    // GitHub takes 65,536 characters of body; the marker line a create appends (`<!-- r2d:… -->`) takes the rest.
    body: z.string().max(ISSUE_BODY_MAX).optional(),
    labels: z.array(z.string().min(1).max(50)).max(20).default([]),
  })
  .refine((b) => b.repository ?? b.repo_full_name ?? b.repo, { message: "repository is required", path: ["repository"] });
export type CreateIssueBody = z.infer<typeof CreateIssueBody>;

export const CreateIssueResult = z.object({ issue_url: z.string(), issue_number: z.int(), link_id: z.string() }).meta({ id: "CreateIssueResult" });

/** `GET /links` query. */
export const LinksQuery = z.object({ workspace_id: z.uuid(), recommendation_id: z.uuid() });
export type LinksQuery = z.infer<typeof LinksQuery>;

export const CodehostLinkView = z
  .object({
    id: z.string(),
    recommendation_id: z.string(),
    repo_full_name: z.string(),
    issue_number: z.int(),
    issue_url: z.string(),
    title: z.string(),
    state: z.string(),
    state_reason: z.string().nullable(),
    pull_request_url: z.string().nullable(),
    last_synced_at: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: "CodehostLink" });
export type CodehostLinkView = z.infer<typeof CodehostLinkView>;
export const CodehostLinkList = z.object({ links: z.array(CodehostLinkView) });

/** `POST /sync` answer: links read and links whose state changed (the rest waiting for the provider's limit: queued). */
export const SyncResult = z.object({ synced_count: z.int(), updated_count: z.int(), queued_count: z.int() }).meta({ id: "IntegrationSyncResult" });
export type SyncResult = z.infer<typeof SyncResult>;
