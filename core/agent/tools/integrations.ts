/**
 * The copilot's code-host tools (spec 02 "Agent tools of the integrations"): seven read tools over the selected
 * repositories (run at once), and the issue tools (create gated through a pending action; list and get read the
 * cached links, get refreshing from GitHub). They use only the `CodeHost` port. A failure is the spec's
 * `{success: false, error, error_code}`, never a thrown error the model cannot read.
 */
import * as z from "zod";
import { AppError } from "../../error";
import { db } from "../../db/service";
import { idFor } from "../../db/agent-write";
import { rateLimit } from "../../rate-limit";
import { ProviderError, toAppError } from "../../integration/errors";
import type { CodeHost } from "../../integration/codehost";
import { codehost } from "./lazy";
import { capBytes, MAX_READ_BYTES, sliceLines } from "../../integration/codehost/text";
import { refusal } from "./refusal";
import { ISSUE_BODY_MAX } from "../../integration/schema";
import type { GatedTool, ReadTool, ToolContext } from "./types";

/** Code search requests per workspace a minute (spec 02: the provider's search is limited to 30 a minute). */
export const CODE_SEARCH_PER_MINUTE = 30;

/** Manifests probed in this order (spec 02 get_package_manifest), with their ecosystem. */
export const MANIFESTS = [
  ["package.json", "npm"],
  ["pyproject.toml", "python"],
  ["requirements.txt", "python"],
  ["go.mod", "go"],
  ["Cargo.toml", "cargo"],
  ["Gemfile", "bundler"],
  ["composer.json", "composer"],
] as const;

type Failure = { success: false; error: string; error_code: string; retry_after?: number; selected_repos?: string[] };

/** The spec's tool error of a failure, or rethrow a defect. */
function toolError(err: unknown): Failure {
  if (err instanceof ProviderError) {
    const code = err.failure === "auth_expired" ? "token_expired" : err.failure === "validation" ? "unknown" : err.failure;
    return { success: false, error: err.message, error_code: code, ...(err.retryAfterSeconds !== undefined ? { retry_after: err.retryAfterSeconds } : {}) };
  }
  if (err instanceof AppError) {
    switch (err.code) {
      case "CODEHOST_TOKEN_ERROR":
        return { success: false, error: err.message, error_code: "token_expired" };
      case "RATE_LIMITED":
        return { success: false, error: err.message, error_code: "rate_limited", retry_after: Number(err.extra.retry_after_seconds ?? 60) };
      case "NO_ACTIVE_INTEGRATION":
        return { success: false, error: err.message, error_code: "integration_not_connected" };
      case "REPO_NOT_SELECTED": {
        const selected = (err.extra.selected_repos as string[] | undefined) ?? [];
        // No repo named and several (or none) selected: ask for one; a repo outside the selection is off limits.
        return { success: false, error: err.message, error_code: /^Name the repository|No repository/.test(err.message) ? "repo_required" : "forbidden", selected_repos: selected };
      }
      case "NOT_FOUND":
        return { success: false, error: err.message, error_code: "not_found" };
      case "FORBIDDEN":
        return { success: false, error: err.message, error_code: "forbidden" };
      default:
        return { success: false, error: err.message, error_code: "unknown" };
    }
  }
  throw err;
}

/** Run a read against the repo the call names (or the only selected one), answering failures as tool errors. */
async function onRepo<T>(ctx: ToolContext, repo: string | undefined, fn: (host: CodeHost, repo: string) => Promise<T>): Promise<T | Failure> {
  try {
    const Codehost = await codehost();
    const name = await Codehost.selectedRepo(ctx.workspaceId, repo);
    return await Codehost.withCodeHost(ctx.workspaceId, (host) => fn(host, name), { raw: true });
  } catch (err) {
    return toolError(err);
  }
}

const Repo = z.string().regex(/^[\w.-]+\/[\w.-]+$/).optional().describe("owner/repo; may be omitted when exactly one repository is selected");
const clamp = (lo: number, hi: number, fallback: number) => z.coerce.number().int().optional().transform((v) => Math.min(hi, Math.max(lo, v ?? fallback)));

export const readRepoFile: ReadTool<{ path: string; repo?: string; start_line?: number; end_line?: number }> = {
  name: "read_repo_file",
  description: "Read a file of a selected code repository, optionally lines start_line..end_line (1-indexed, inclusive). Long files are cut by lines, then by bytes.",
  cues: ["read file", "source code", "open the file", "in the repo", "code of"],
  gated: false,
  input: z.object({ path: z.string().min(1).max(1000), repo: Repo, start_line: z.int().min(1).optional(), end_line: z.int().min(1).optional() }).strict(),
  run: (ctx, input) =>
    onRepo(ctx, input.repo, async (host, repo) => {
      const file = await host.getFile(repo, input.path.replace(/^\/+/, ""));
      const slice = sliceLines(file.bytes.toString("utf8"), input.start_line, input.end_line);
      return { repo, path: file.path, ...slice, total_bytes: file.size, sha: file.sha };
    }),
};

export const listRepoTree: ReadTool<{ repo?: string; path: string; depth: number }> = {
  name: "list_repo_tree",
  description: "List the files and folders of a selected repository under a path, depth 1 to 5 levels (default 2).",
  cues: ["file tree", "folder structure", "list files", "directory", "repository layout"],
  gated: false,
  input: z.object({ repo: Repo, path: z.string().max(1000).default(""), depth: clamp(1, 5, 2) }).strict() as unknown as z.ZodType<{ repo?: string; path: string; depth: number }>,
  run: (ctx, input) =>
    onRepo(ctx, input.repo, async (host, repo) => {
      const MAX = 500;
      const { entries, truncated } = await host.listTree(repo, input.path, input.depth);
      return { repo, path: input.path, entries: entries.slice(0, MAX), total_entries: entries.length, truncated: truncated || entries.length > MAX, depth: input.depth };
    }),
};

export const searchRepoCode: ReadTool<{ query: string; repo?: string; path_filter?: string; max_results: number }> = {
  name: "search_repo_code",
  description: "Search the code of a selected repository (at most 30 searches a minute); optionally within a path. Returns matching paths with snippets.",
  cues: ["search code", "where in the code", "grep", "find in repo", "code that"],
  gated: false,
  input: z.object({ query: z.string().trim().min(1).max(256), repo: Repo, path_filter: z.string().max(500).optional(), max_results: clamp(1, 50, 10) }).strict() as unknown as z.ZodType<{ query: string; repo?: string; path_filter?: string; max_results: number }>,
  run: (ctx, input) =>
    onRepo(ctx, input.repo, async (host, repo) => {
      // Our own count first (every Lambda shares it), so GitHub's search limit is not what refuses us.
      await rateLimit(`codehost-search#${ctx.workspaceId}`, CODE_SEARCH_PER_MINUTE, 60, "codehost-search");
      const res = await host.searchCode(repo, input.query, input.path_filter, input.max_results);
      const matches = res.matches.slice(0, input.max_results);
      return { repo, matches, total_matches: res.total, truncated: res.total > matches.length };
    }),
};

export const listRecentCommits: ReadTool<{ repo?: string; limit: number; path?: string; since?: string }> = {
  name: "list_recent_commits",
  description: "The latest commits of a selected repository (1 to 100, default 20), optionally touching a path or since an ISO 8601 time.",
  cues: ["recent commits", "what changed", "commit history", "latest changes"],
  gated: false,
  input: z.object({ repo: Repo, limit: clamp(1, 100, 20), path: z.string().max(1000).optional(), since: z.iso.datetime({ offset: true }).optional() }).strict() as unknown as z.ZodType<{ repo?: string; limit: number; path?: string; since?: string }>,
  run: (ctx, input) =>
    onRepo(ctx, input.repo, async (host, repo) => {
      const commits = await host.listCommits(repo, { limit: input.limit, path: input.path, since: input.since });
      return { repo, commits, total: commits.length, limit: input.limit };
    }),
};

export const listOpenPullRequests: ReadTool<{ repo?: string; state: string; limit: number }> = {
  name: "list_open_pull_requests",
  description: "Pull requests of a selected repository: state open (default), closed or all; 1 to 50.",
  cues: ["pull requests", "open prs", "prs", "code review"],
  gated: false,
  input: z.object({ repo: Repo, state: z.string().max(20).default("open"), limit: clamp(1, 50, 20) }).strict() as unknown as z.ZodType<{ repo?: string; state: string; limit: number }>,
  async run(ctx, input) {
    if (!["open", "closed", "all"].includes(input.state)) {
      return { success: false, error: `state must be open, closed or all, not "${input.state}"`, error_code: "invalid_state" };
    }
    return onRepo(ctx, input.repo, async (host, repo) => {
      const pulls = await host.listPulls(repo, input.state as "open" | "closed" | "all", input.limit);
      return { repo, pull_requests: pulls, total: pulls.length, state: input.state, limit: input.limit };
    });
  },
};

export const getReadme: ReadTool<{ repo?: string }> = {
  name: "get_readme",
  description: "The README of a selected repository.",
  cues: ["readme", "what is this repo", "project description"],
  gated: false,
  input: z.object({ repo: Repo }).strict(),
  run: (ctx, input) =>
    onRepo(ctx, input.repo, async (host, repo) => {
      const file = await host.getReadme(repo);
      const text = file.bytes.toString("utf8");
      const capped = capBytes(text, MAX_READ_BYTES);
      return { repo, content: capped.text, truncated: capped.truncated, path: file.path, total_lines: sliceLines(text).total_lines, total_bytes: file.size, sha: file.sha };
    }),
};

export const getPackageManifest: ReadTool<{ repo?: string }> = {
  name: "get_package_manifest",
  description: "The package manifest of a selected repository: the first of package.json, pyproject.toml, requirements.txt, go.mod, Cargo.toml, Gemfile, composer.json.",
  cues: ["dependencies", "package.json", "manifest", "tech stack", "libraries"],
  gated: false,
  input: z.object({ repo: Repo }).strict(),
  run: (ctx, input) =>
    onRepo(ctx, input.repo, async (host, repo) => {
      const probed: string[] = [];
      for (const [path, type] of MANIFESTS) {
        probed.push(path);
        try {
          const file = await host.getFile(repo, path);
          const capped = capBytes(file.bytes.toString("utf8"), MAX_READ_BYTES);
          return { repo, detected: true, manifest_type: type, path, content: capped.text, truncated: capped.truncated, total_bytes: file.size, sha: file.sha };
        } catch (err) {
          if (!(err instanceof ProviderError) || err.failure !== "not_found") throw err;
        }
      }
      return { repo, detected: false, paths_probed: probed };
    }),
};

type CreateIssueInput = { title?: string; body?: string; repo?: string; labels: string[]; recommendation_id?: string };

export const createCodehostIssue: GatedTool<CreateIssueInput> = {
  name: "create_codehost_issue",
  description: "Create a GitHub issue in a selected repository (needs a member's approval). With recommendation_id, title and body default to the recommendation's and the issue is linked to it.",
  cues: ["create issue", "open an issue", "file a ticket", "github issue"],
  gated: true,
  input: z
    .object({
      title: z.string().trim().min(1).max(256).optional(),
      body: z.string().max(ISSUE_BODY_MAX).optional(),
      repo: Repo,
      labels: z.array(z.string().min(1).max(50)).max(20).default([]),
      recommendation_id: z.uuid().optional(),
    })
    .strict()
    .refine((i) => i.title || i.recommendation_id, { message: "title is required without a recommendation_id", path: ["title"] }) as unknown as z.ZodType<CreateIssueInput>,
  async preview(ctx, input) {
    try {
      const Codehost = await codehost();
      const repo = await Codehost.selectedRepo(ctx.workspaceId, input.repo);
      return { summary: `Create a GitHub issue${input.title ? ` '${input.title}'` : ""} in ${repo}`, target: "codehost_issue", operation: "create", fields: { ...input, repo } };
    } catch (err) {
      // Refused before queuing (not connected, repo_required, a repo outside the selection): the AppError it is over
      // HTTP, carrying the spec's tool failure (with selected_repos) that the agent loop answers the model with.
      throw refusal(toAppError("codehost", err), toolError(err));
    }
  },
  async execute(ctx, input) {
    const Codehost = await codehost();
    const repo = await Codehost.selectedRepo(ctx.workspaceId, input.repo);
    if (input.recommendation_id) {
      // The action id travels in the body as a marker: a replay finds the issue it created instead of a second one.
      const res = await Codehost.createIssue(ctx.userId, { workspace_id: ctx.workspaceId, recommendation_id: input.recommendation_id, repo, title: input.title, body: input.body, labels: input.labels }, {
        linkId: idFor(ctx.actionId, "codehost-link"), marker: ctx.actionId, pendingActionId: ctx.actionId, markerSince: ctx.approvedAt,
      });
      return { ...res, repo, linked_recommendation: input.recommendation_id };
    }
    const issue = await Codehost.createUnlinkedIssue(ctx.userId, ctx.workspaceId, repo, { title: input.title!, body: input.body ?? "", labels: input.labels }, ctx.actionId, ctx.approvedAt);
    return { issue_url: issue.url, issue_number: issue.number, repo };
  },
};

export const listCodehostIssues: ReadTool<{ repo?: string; state: "all" | "open" | "closed"; limit: number }> = {
  name: "list_codehost_issues",
  description: "The GitHub issues linked to the workspace's recommendations (as last synced), optionally of one repository and state.",
  cues: ["linked issues", "github issues", "issues we opened", "tracked issues"],
  gated: false,
  input: z.object({ repo: Repo, state: z.enum(["all", "open", "closed"]).default("all"), limit: clamp(1, 200, 50) }).strict() as unknown as z.ZodType<{ repo?: string; state: "all" | "open" | "closed"; limit: number }>,
  async run(ctx, input) {
    const Codehost = await codehost();
    const links = (await Codehost.allLinks(ctx.workspaceId))
      .filter((l) => (!input.repo || l.repo_full_name?.toLowerCase() === input.repo.toLowerCase()) && (input.state === "all" || l.state === input.state))
      .sort((a, b) => b.created_at.localeCompare(a.created_at));
    return { issues: links.slice(0, input.limit).map(Codehost.toLinkView), count: Math.min(links.length, input.limit), total: links.length };
  },
};

export const getCodehostIssue: ReadTool<{ repo?: string; issue_number: number }> = {
  name: "get_codehost_issue",
  description: "One linked GitHub issue, its state refreshed from GitHub when the integration is connected.",
  cues: ["issue status", "is the issue closed", "issue number"],
  gated: false,
  input: z.object({ repo: Repo, issue_number: z.int().min(1) }).strict(),
  async run(ctx, input) {
    try {
      const Codehost = await codehost();
      const repo = await Codehost.selectedRepo(ctx.workspaceId, input.repo);
      const link = (await Codehost.allLinks(ctx.workspaceId)).find((l) => l.repo_full_name === repo && l.issue_number === input.issue_number);
      if (!link) return { success: false, error: `${repo}#${input.issue_number} is not linked to a recommendation`, error_code: "not_found" };
      await Codehost.withCodeHost(ctx.workspaceId, (host) => Codehost.refreshLink(ctx.userId, host, link), { raw: true });
      const { data } = await db().entities.issueLink.get({ workspace_id: link.workspace_id, kind: "codehost", recommendation_id: link.recommendation_id, id: link.id }).go({ consistent: true });
      return { issue: Codehost.toLinkView(data ?? link), refreshed: true };
    } catch (err) {
      return toolError(err);
    }
  },
};

/** The integration tools, registered with the others in ./index.ts. */
export const INTEGRATION_TOOLS: readonly (ReadTool | GatedTool)[] = [
  readRepoFile, listRepoTree, searchRepoCode, listRecentCommits, listOpenPullRequests, getReadme, getPackageManifest,
  listCodehostIssues, getCodehostIssue, createCodehostIssue,
];
