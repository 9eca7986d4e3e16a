/**
 * The copilot's planner tools (spec 02 "Agent tools of the integrations", Planner tools): six read tools that run at
 * once and three write tools gated through pending actions (create_planner_issue, update_planner_issue,
 * create_planner_comment). They use only the `Planner` port, in the selected team; names (assignee, project, label,
 * state, cycle) are resolved here, server-side, never left to the model. A read failure is the spec's
 * `{success: false, error, error_code}`; a gated write's refusal at preview is an AppError carrying that failure
 * (`refusal`: the loop answers the model with it), and a failure of its execution an AppError the executor fails or,
 * for rate limits, defers the action with.
 */
import * as z from "zod";
import { AppError, type ErrorCode } from "../../error";
import { idFor } from "../../db/agent-write";
import { ProviderError, toAppError } from "../../integration/errors";
import { planner as plannerModule } from "./lazy";
import { CLOSED_STATE_TYPES, type Planner, type PlannerIssue } from "../../integration/planner/port";
import type { PlannerTeam } from "../../integration/planner/port";
import { refusal } from "./refusal";
import type { GatedTool, Preview, ReadTool } from "./types";

/** The planner tools' error codes (spec 02). */
export type PlannerToolCode =
  | "integration_not_connected" | "no_team_selected" | "not_found" | "validation_error" | "user_not_found"
  | "project_not_found" | "label_not_found" | "no_active_cycle" | "rate_limited" | "token_expired"
  // Linear failed or did not answer (the code host's code for the same; the spec's planner list has none).
  | "unknown";

/** A decided failure of a planner tool, with its spec code. */
export class PlannerToolError extends Error {
  constructor(readonly code: PlannerToolCode, message: string) {
    super(message);
  }
}

type Failure = { success: false; error: string; error_code: PlannerToolCode; retry_after?: number };

/** Characters of a comment an approval preview shows (spec 02 create_planner_comment). */
export const COMMENT_PREVIEW_CHARS = 4000;

/** The spec's tool error of a failure, or rethrow a defect (the loop then says the tool failed). */
export function toolError(err: unknown): Failure {
  if (err instanceof PlannerToolError) return { success: false, error: err.message, error_code: err.code };
  if (err instanceof ProviderError) {
    switch (err.failure) {
      case "rate_limited":
        return { success: false, error: err.message, error_code: "rate_limited", retry_after: err.retryAfterSeconds ?? 60 };
      case "auth_expired":
        return { success: false, error: err.message, error_code: "token_expired" };
      case "not_found":
      case "forbidden":
        // Linear answers an entity outside the grant's reach as not found; the model's remedy is the same.
        return { success: false, error: err.message, error_code: "not_found" };
      case "validation":
        return { success: false, error: err.message, error_code: "validation_error" };
      default:
        return { success: false, error: `Linear failed: ${err.message}`, error_code: "unknown" };
    }
  }
  if (err instanceof AppError) {
    const code = ({
      PLANNER_TOKEN_ERROR: "token_expired", RATE_LIMITED: "rate_limited", NO_ACTIVE_INTEGRATION: "integration_not_connected",
      NO_TEAM_SELECTED: "no_team_selected", NOT_FOUND: "not_found", VALIDATION_ERROR: "validation_error",
    } as Partial<Record<ErrorCode, PlannerToolCode>>)[err.code];
    if (code) return { success: false, error: err.message, error_code: code, ...(code === "rate_limited" ? { retry_after: Number(err.extra.retry_after_seconds ?? 60) } : {}) };
  }
  throw err;
}

/** The AppError a gated tool throws for a decided failure (keeping the spec code in `error_code`). */
function asAppError(err: PlannerToolError): AppError {
  const code: ErrorCode = err.code === "no_team_selected" ? "NO_TEAM_SELECTED" : err.code === "validation_error" ? "VALIDATION_ERROR" : err.code === "integration_not_connected" ? "NO_ACTIVE_INTEGRATION" : "NOT_FOUND";
  return new AppError(code, err.message, { error_code: err.code, ...(code === "VALIDATION_ERROR" ? { errors: [] } : {}) });
}

/**
 * The planner integration, loaded when a planner tool first runs (./lazy.ts): `read` and `write` hand it to the tool's
 * body, and the others load it where they use it (a loaded module's import answers at once).
 */
type PlannerModule = Awaited<ReturnType<typeof plannerModule>>;

/** The selected team and the workspace's planner; provider failures stay ProviderErrors (the callers translate). */
async function inTeam<T>(ctx: { workspaceId: string }, fn: (planner: Planner, teamId: string, teamName: string) => Promise<T>): Promise<T> {
  const P = await plannerModule();
  const team = await P.selectedTeam(ctx.workspaceId);
  return P.withPlanner(ctx.workspaceId, (planner) => fn(planner, team.teamId, team.teamName), { raw: true });
}

/** Run a read tool's body with the planner integration, answering failures as the spec's tool errors. */
async function read<T>(fn: (P: PlannerModule) => Promise<T>): Promise<T | Failure> {
  try {
    return await fn(await plannerModule());
  } catch (err) {
    return toolError(err);
  }
}

/**
 * Run a gated tool's execution with the planner integration: decided failures become AppErrors, provider failures
 * their HTTP errors (429 defers).
 */
async function write<T>(fn: (P: PlannerModule) => Promise<T>): Promise<T> {
  try {
    return await fn(await plannerModule());
  } catch (err) {
    throw err instanceof PlannerToolError ? asAppError(err) : toAppError("planner", err);
  }
}

/**
 * Run a gated tool's preview with the planner integration: a refusal (not connected, no team, an issue or name that
 * resolves to nothing, a provider failure) is thrown as the AppError it is over HTTP, carrying the spec's tool failure
 * of `toolError`, which the agent loop answers the model with; nothing is queued. A defect is rethrown as it is.
 */
async function check<T>(fn: (P: PlannerModule) => Promise<T>): Promise<T> {
  try {
    return await fn(await plannerModule());
  } catch (err) {
    throw refusal(err instanceof PlannerToolError ? asAppError(err) : toAppError("planner", err), toolError(err));
  }
}

/**
 * One of `items` named by `name`: an exact (case-insensitive) match of any of its names wins, else the only one whose
 * names contain it (substring, as spec 02 resolves assignee, project and label).
 * @throws PlannerToolError `missing` when none matches; validation_error naming the candidates when several do
 */
export function resolveByName<T>(items: readonly T[], name: string, namesOf: (t: T) => string[], missing: PlannerToolCode, what: string): T {
  const needle = name.trim().toLowerCase();
  const names = (t: T) => namesOf(t).filter(Boolean).map((n) => n.toLowerCase());
  const exact = items.filter((t) => names(t).includes(needle));
  if (exact.length === 1) return exact[0]!;
  const partial = exact.length > 1 ? exact : items.filter((t) => names(t).some((n) => n.includes(needle)));
  if (partial.length === 1) return partial[0]!;
  const known = items.slice(0, 20).map((t) => namesOf(t)[0]).join(", ");
  if (partial.length === 0) throw new PlannerToolError(missing, `No ${what} matches "${name}"${known ? `; known: ${known}` : ""}`);
  throw new PlannerToolError("validation_error", `"${name}" matches several ${what}s: ${partial.slice(0, 10).map((t) => namesOf(t)[0]).join(", ")}; be more specific`);
}

async function teamOf(planner: Planner, teamId: string): Promise<PlannerTeam> {
  const team = await planner.team(teamId);
  if (!team) throw new PlannerToolError("no_team_selected", "The selected Linear team is no longer reachable; select a team again");
  return team;
}

async function userId(planner: Planner, name: string) {
  const users = await planner.users();
  return resolveByName(users, name, (u) => [u.display_name, u.name, u.email], "user_not_found", "user");
}

/** `cycle`: 'active' (the team's active cycle, or no_active_cycle), 'none' (unset: null) or a cycle id. */
async function cycleId(planner: Planner, teamId: string, cycle: string): Promise<{ id: string | null; number?: number }> {
  if (cycle === "none") return { id: null };
  if (cycle !== "active") return { id: cycle };
  const active = await planner.activeCycle(teamId);
  if (!active) throw new PlannerToolError("no_active_cycle", "The selected team has no active cycle");
  return { id: active.id, number: active.number };
}

async function issueOf(planner: Planner, identifier: string): Promise<PlannerIssue> {
  const issue = await planner.getIssue(identifier.trim());
  if (!issue) throw new PlannerToolError("not_found", `Linear issue ${identifier} was not found`);
  return issue;
}

/** An issue as the tools return it. */
export const issueView = (i: PlannerIssue) => ({
  id: i.id, identifier: i.identifier, title: i.title, url: i.url, state: i.state?.name ?? null, state_type: i.state?.type ?? null,
  priority: i.priority, priority_label: i.priority_label, assignee: i.assignee?.name ?? null, project: i.project?.name ?? null,
  cycle: i.cycle, labels: i.labels.map((l) => l.name), due_date: i.due_date, updated_at: i.updated_at,
});

const clamp = (lo: number, hi: number, fallback: number) => z.coerce.number().int().optional().transform((v) => Math.min(hi, Math.max(lo, v ?? fallback)));
const Priority = z.int().min(0).max(4).describe("0 none, 1 urgent, 2 high, 3 medium, 4 low");
const Identifier = z.string().trim().min(1).max(100).describe("the issue's identifier (ENG-12) or id");
const StateType = z.enum(["backlog", "unstarted", "started", "completed", "cancelled", "triage"]);
const DueDate = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "YYYY-MM-DD").refine((d) => !Number.isNaN(Date.parse(`${d}T00:00:00Z`)) && new Date(`${d}T00:00:00Z`).toISOString().startsWith(d), "not a calendar date");

type CreateInput = { title?: string; description?: string; recommendation_id?: string; priority?: number };

export const createPlannerIssue: GatedTool<CreateInput> = {
  name: "create_planner_issue",
  description: "Create a Linear issue in the selected team (needs a member's approval). With recommendation_id, title and description default to the recommendation's and the issue is linked to it. priority 0 none, 1 urgent, 2 high, 3 medium, 4 low.",
  cues: ["linear issue", "create a linear", "planner issue", "add to linear", "file in linear"],
  gated: true,
  input: z
    .object({ title: z.string().trim().min(1).max(255).optional(), description: z.string().max(100_000).optional(), recommendation_id: z.uuid().optional(), priority: Priority.optional() })
    .strict()
    .refine((i) => i.title || i.recommendation_id, { message: "title is required without a recommendation_id", path: ["title"] }) as unknown as z.ZodType<CreateInput>,
  preview: (ctx, input) =>
    check(async (P): Promise<Preview> => {
      const team = await P.selectedTeam(ctx.workspaceId);
      return {
        summary: `Create a Linear issue${input.title ? ` '${input.title}'` : ""} in team ${team.teamName}`,
        target: "planner_issue", operation: "create",
        fields: { ...input, team: team.teamName, ...(team.projectName ? { project: team.projectName } : {}) },
      };
    }),
  execute: (ctx, input) =>
    write(async (P) => {
      // Ids derived from the action: a replay finds the issue (and link) its first run created.
      const issueId = P.v4From(idFor(ctx.actionId, "planner-issue"));
      if (input.recommendation_id) {
        const res = await P.createIssue(ctx.userId, {
          workspace_id: ctx.workspaceId, recommendation_id: input.recommendation_id, title: input.title, body: input.description, label_ids: [],
          ...(input.priority !== undefined ? { priority: input.priority } : {}),
        }, { issueId, linkId: idFor(ctx.actionId, "planner-link"), pendingActionId: ctx.actionId });
        return { issue_id: res.issue.id, issue_identifier: res.issue_identifier, issue_url: res.issue_url, title: res.issue.title, linked_recommendation: input.recommendation_id };
      }
      const team = await P.selectedTeam(ctx.workspaceId);
      const issue = await P.withPlanner(ctx.workspaceId, (planner) =>
        P.createOrFind(planner, {
          id: issueId, teamId: team.teamId, title: input.title!, description: input.description ?? "",
          ...(team.projectId ? { projectId: team.projectId } : {}), ...(input.priority !== undefined ? { priority: input.priority } : {}),
        }), { raw: true });
      return { issue_id: issue.id, issue_identifier: issue.identifier, issue_url: issue.url, title: issue.title, linked_recommendation: null };
    }),
};

type QueryInput = { state_type?: string; assignee_name?: string; project_name?: string; cycle?: string; label?: string; limit: number; include_completed: boolean };

export const queryPlannerIssues: ReadTool<QueryInput> = {
  name: "query_planner_issues",
  description: "Query the selected Linear team's issues by state type, assignee, project, cycle ('active' or a cycle id) and label (names matched by substring); completed and cancelled issues only with include_completed or that state_type. limit 1 to 100, default 30.",
  cues: ["linear issues", "sprint issues", "assigned to", "in the backlog", "current cycle", "issues in project"],
  gated: false,
  input: z
    .object({
      state_type: StateType.optional(), assignee_name: z.string().trim().min(1).max(200).optional(), project_name: z.string().trim().min(1).max(200).optional(),
      cycle: z.union([z.literal("active"), z.uuid()]).optional(), label: z.string().trim().min(1).max(200).optional(), limit: clamp(1, 100, 30),
      include_completed: z.boolean().default(false),
    })
    .strict() as unknown as z.ZodType<QueryInput>,
  run: (ctx, input) =>
    read(() =>
      inTeam(ctx, async (planner, teamId, teamName) => {
        const filters: Record<string, unknown> = { team: teamName, limit: input.limit, include_completed: input.include_completed };
        let cycle: string | undefined;
        if (input.cycle === "active") {
          const active = await planner.activeCycle(teamId);
          if (!active) return { issues: [], count: 0, filters_applied: { ...filters, cycle: "active" }, message: `Team ${teamName} has no active cycle` };
          cycle = active.id;
          filters.cycle = { id: active.id, number: active.number, name: active.name };
        } else if (input.cycle) {
          cycle = input.cycle;
          filters.cycle = { id: input.cycle };
        }
        const team = input.project_name || input.label ? await teamOf(planner, teamId) : undefined;
        const project = input.project_name ? resolveByName(team!.projects, input.project_name, (p) => [p.name], "project_not_found", "project") : undefined;
        const label = input.label ? resolveByName(team!.labels, input.label, (l) => [l.name], "label_not_found", "label") : undefined;
        const assignee = input.assignee_name ? await userId(planner, input.assignee_name) : undefined;
        if (project) filters.project = project.name;
        if (label) filters.label = label.name;
        if (assignee) filters.assignee = assignee.display_name || assignee.name;
        const stateTypes = input.state_type ? { in: [input.state_type] } : input.include_completed ? undefined : { nin: [...CLOSED_STATE_TYPES] };
        if (input.state_type) filters.state_type = input.state_type;
        else if (stateTypes) filters.excluded_state_types = [...CLOSED_STATE_TYPES];
        const issues = await planner.queryIssues({
          teamId, ...(stateTypes ? { stateTypes } : {}), ...(assignee ? { assigneeId: assignee.id } : {}), ...(project ? { projectId: project.id } : {}),
          ...(label ? { labelId: label.id } : {}), ...(cycle ? { cycleId: cycle } : {}),
        }, input.limit);
        return { issues: issues.slice(0, input.limit).map(issueView), count: Math.min(issues.length, input.limit), filters_applied: filters };
      }),
    ),
};

export const searchPlannerIssues: ReadTool<{ query: string; limit: number; team_scope: boolean }> = {
  name: "search_planner_issues",
  description: "Full-text search of Linear issues: in the selected team (team_scope true, default) or the whole organization (team_scope false). limit 1 to 50, default 10.",
  cues: ["search linear", "find issue", "linear search", "issue about"],
  gated: false,
  input: z.object({ query: z.string().trim().min(1).max(256), limit: clamp(1, 50, 10), team_scope: z.boolean().default(true) }).strict() as unknown as z.ZodType<{ query: string; limit: number; team_scope: boolean }>,
  run: (ctx, input) =>
    read(async (P) => {
      const search = (planner: Planner, teamId?: string) => planner.searchIssues(input.query, { first: input.limit, ...(teamId ? { teamId } : {}) });
      const found = input.team_scope
        ? await inTeam(ctx, (planner, teamId) => search(planner, teamId))
        : await P.withPlanner(ctx.workspaceId, (planner) => search(planner), { raw: true });
      const results = found.slice(0, input.limit).map(issueView);
      return { results, count: results.length, query: input.query, team_scope: input.team_scope };
    }),
};

export const getPlannerCycle: ReadTool<{ cycle_id?: string }> = {
  name: "get_planner_cycle",
  description: "A Linear cycle (sprint) with its issues and progress; without cycle_id, the selected team's active cycle.",
  cues: ["sprint", "cycle", "current sprint", "sprint progress"],
  gated: false,
  input: z.object({ cycle_id: z.uuid().optional() }).strict(),
  run: (ctx, input) =>
    read(() =>
      inTeam(ctx, async (planner, teamId) => {
        const id = input.cycle_id ?? (await cycleId(planner, teamId, "active")).id!;
        const found = await planner.cycle(id);
        if (!found) throw new PlannerToolError("not_found", `Cycle ${id} was not found`);
        const count = (type: string) => found.issues.filter((i) => i.state?.type === type).length;
        const total = found.issues.length;
        const done = count("completed");
        return {
          cycle: found.cycle,
          issues: found.issues.map(issueView),
          progress: {
            total_issues: total, completed_issues: done, cancelled_issues: count("cancelled"), started_issues: count("started"),
            remaining_issues: total - done - count("cancelled"), percent_complete: Math.round(found.cycle.progress * 100),
          },
        };
      }),
    ),
};

export const getPlannerProject: ReadTool<{ project_id?: string }> = {
  name: "get_planner_project",
  description: "Without project_id, the selected team's Linear projects; with it, the project with its milestones and issues.",
  cues: ["linear project", "project status", "milestones", "roadmap"],
  gated: false,
  input: z.object({ project_id: z.string().trim().min(1).max(100).optional() }).strict(),
  run: (ctx, input) =>
    read(() =>
      inTeam(ctx, async (planner, teamId) => {
        if (!input.project_id) {
          const projects = await planner.projects(teamId);
          return { projects, count: projects.length };
        }
        const found = await planner.project(input.project_id);
        if (!found) throw new PlannerToolError("project_not_found", `Project ${input.project_id} was not found`);
        return { project: found.project, milestones: found.milestones, issues: found.issues.map(issueView) };
      }),
    ),
};

export const getPlannerIssue: ReadTool<{ identifier: string }> = {
  name: "get_planner_issue",
  description: "One Linear issue by identifier (ENG-12), read from Linear; a linked issue's link (and its recommendation's status) is synced too.",
  cues: ["linear issue status", "issue eng-", "what is the status of"],
  gated: false,
  input: z.object({ identifier: Identifier }).strict(),
  run: (ctx, input) =>
    read(async (P) => {
      const issue = await P.withPlanner(ctx.workspaceId, (planner) => issueOf(planner, input.identifier), { raw: true });
      const link = (await P.allLinks(ctx.workspaceId)).find((l) => l.issue_id === issue.id);
      if (link) await P.applyIssue(ctx.userId, link, issue);
      return { issue: issueView(issue), synced: Boolean(link), assignee: issue.assignee?.name ?? null, priority: issue.priority, labels: issue.labels.map((l) => l.name) };
    }),
};

export const listPlannerIssues: ReadTool<{ status: "all" | "open" | "closed"; limit: number }> = {
  name: "list_planner_issues",
  description: "The Linear issues linked to the workspace's recommendations (as last synced): all, open or closed (state type completed or cancelled). limit 1 to 200.",
  cues: ["linked linear issues", "issues we created in linear", "tracked in linear"],
  gated: false,
  input: z.object({ status: z.enum(["all", "open", "closed"]).default("all"), limit: clamp(1, 200, 50) }).strict() as unknown as z.ZodType<{ status: "all" | "open" | "closed"; limit: number }>,
  async run(ctx, input) {
    const closed = (t?: string | null) => Boolean(t && CLOSED_STATE_TYPES.includes(t));
    const P = await plannerModule();
    const links = (await P.allLinks(ctx.workspaceId))
      .filter((l) => input.status === "all" || (input.status === "closed") === closed(l.state_type))
      .sort((a, b) => b.created_at.localeCompare(a.created_at));
    const issues = links.slice(0, input.limit).map(P.toLinkView);
    return { issues, count: issues.length, total: links.length, filter: { status: input.status, limit: input.limit } };
  },
};

type UpdateInput = { identifier: string; state?: string; assignee_name?: string; priority?: number; title?: string; description?: string; due_date?: string; cycle?: string };

/** The update an input asks for, every name resolved in the selected team; and the changes to preview. */
async function resolveUpdate(ctx: { workspaceId: string }, input: UpdateInput) {
  return inTeam(ctx, async (planner, teamId) => {
    const issue = await issueOf(planner, input.identifier);
    const changes: { field: string; before: unknown; after: unknown }[] = [];
    const update: Parameters<Planner["updateIssue"]>[1] = {};
    if (input.state) {
      const team = await teamOf(planner, teamId);
      const state = resolveByName(team.states, input.state, (s) => [s.name], "validation_error", "workflow state");
      update.stateId = state.id;
      changes.push({ field: "state", before: issue.state?.name ?? null, after: state.name });
    }
    if (input.assignee_name) {
      const user = await userId(planner, input.assignee_name);
      update.assigneeId = user.id;
      changes.push({ field: "assignee", before: issue.assignee?.name ?? null, after: user.display_name || user.name });
    }
    if (input.cycle) {
      const cycle = await cycleId(planner, teamId, input.cycle);
      update.cycleId = cycle.id;
      changes.push({ field: "cycle", before: issue.cycle?.id ?? null, after: cycle.id });
    }
    if (input.priority !== undefined) (update.priority = input.priority), changes.push({ field: "priority", before: issue.priority, after: input.priority });
    if (input.title !== undefined) (update.title = input.title), changes.push({ field: "title", before: issue.title, after: input.title });
    if (input.description !== undefined) (update.description = input.description), changes.push({ field: "description", before: issue.description, after: input.description });
    if (input.due_date !== undefined) (update.dueDate = input.due_date), changes.push({ field: "due_date", before: issue.due_date, after: input.due_date });
    return { issue, update, changes };
  });
}

export const updatePlannerIssue: GatedTool<UpdateInput> = {
  name: "update_planner_issue",
  description: "Update a Linear issue (needs a member's approval): state (a workflow state's name), assignee_name, priority 0 to 4, title, description, due_date YYYY-MM-DD, cycle ('active', 'none' to unset, or a cycle id). Names are resolved in the selected team.",
  cues: ["update linear issue", "move issue to", "assign issue", "change priority", "set due date", "add to sprint"],
  gated: true,
  input: z
    .object({
      identifier: Identifier, state: z.string().trim().min(1).max(100).optional(), assignee_name: z.string().trim().min(1).max(200).optional(), priority: Priority.optional(),
      title: z.string().trim().min(1).max(255).optional(), description: z.string().max(100_000).optional(), due_date: DueDate.optional(),
      cycle: z.union([z.literal("active"), z.literal("none"), z.uuid()]).optional(),
    })
    .strict()
    .refine((i) => Object.keys(i).some((k) => k !== "identifier"), { message: "name at least one field to change", path: ["identifier"] }) as unknown as z.ZodType<UpdateInput>,
  preview: (ctx, input) =>
    check(async (): Promise<Preview> => {
      const { issue, changes } = await resolveUpdate(ctx, input);
      return { summary: `Update Linear issue ${issue.identifier} '${issue.title}'`, target: "planner_issue", operation: "update", changes };
    }),
  execute: (ctx, input) =>
    write(async (P) => {
      // Setting the same values again changes nothing: a replayed update is harmless.
      const { issue, update, changes } = await resolveUpdate(ctx, input);
      const updated = await P.withPlanner(ctx.workspaceId, (planner) => planner.updateIssue(issue.id, update), { raw: true });
      const link = (await P.allLinks(ctx.workspaceId)).find((l) => l.issue_id === updated.id);
      if (link) await P.applyIssue(ctx.userId, link, updated);
      return { issue: issueView(updated), message: `Updated ${updated.identifier}: ${changes.map((c) => `${c.field} → ${String(c.after ?? "none")}`).join(", ")}` };
    }),
};

export const createPlannerComment: GatedTool<{ identifier: string; body: string }> = {
  name: "create_planner_comment",
  description: "Comment on a Linear issue (Markdown; needs a member's approval).",
  cues: ["comment on linear", "add a comment", "reply on the issue"],
  gated: true,
  input: z.object({ identifier: Identifier, body: z.string().trim().min(1).max(100_000) }).strict(),
  preview: (ctx, input) =>
    check(async (P): Promise<Preview> => {
      const issue = await P.withPlanner(ctx.workspaceId, (planner) => issueOf(planner, input.identifier), { raw: true });
      const cut = input.body.length > COMMENT_PREVIEW_CHARS;
      return {
        summary: `Comment on Linear issue ${issue.identifier} '${issue.title}'`, target: "planner_comment", operation: "create",
        fields: { identifier: issue.identifier, body: cut ? `${input.body.slice(0, COMMENT_PREVIEW_CHARS)}…` : input.body, body_truncated: cut, body_length: input.body.length },
      };
    }),
  execute: (ctx, input) =>
    write(async (P) => {
      const id = P.v4From(idFor(ctx.actionId, "planner-comment"));
      return P.withPlanner(ctx.workspaceId, async (planner) => {
        const issue = await issueOf(planner, input.identifier);
        // The comment's id comes from the action: a replay finds it instead of commenting twice.
        const comment = (await planner.getComment(id)) ?? (await planner.createComment({ id, issueId: issue.id, body: input.body }));
        return { comment_id: comment.id, issue_identifier: issue.identifier, url: comment.url };
      }, { raw: true });
    }),
};

/** The planner tools, registered with the others in ./index.ts. */
export const PLANNER_TOOLS: readonly (ReadTool | GatedTool)[] = [
  queryPlannerIssues, searchPlannerIssues, getPlannerCycle, getPlannerProject, getPlannerIssue, listPlannerIssues,
  createPlannerIssue, updatePlannerIssue, createPlannerComment,
];
