import * as z from "zod";

/** The planner's status answer (spec 02 Integration status fields of the planner). */
export const PlannerStatus = z
  .object({
    connected: z.boolean(),
    needs_reconnect: z.boolean().describe("the grant expired or was revoked: connect again"),
    planner_user_name: z.string().nullable(),
    planner_org_name: z.string().nullable(),
    planner_org_logo_url: z.string().nullable(),
    selected_team_id: z.string().nullable(),
    selected_team_name: z.string().nullable(),
    selected_project_id: z.string().nullable(),
    selected_project_name: z.string().nullable(),
    last_synced_at: z.string().nullable(),
  })
  .meta({ id: "PlannerStatus" });
export type PlannerStatus = z.infer<typeof PlannerStatus>;

const PlannerTeamView = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  selected: z.boolean(),
  projects: z.array(z.object({ id: z.string(), name: z.string(), state: z.string() })),
  states: z.array(z.object({ id: z.string(), name: z.string(), type: z.string(), position: z.number(), color: z.string() })).describe("sorted by position"),
  labels: z.array(z.object({ id: z.string(), name: z.string(), color: z.string() })),
});

export const PlannerTeamList = z.object({ teams: z.array(PlannerTeamView) }).meta({ id: "PlannerTeamList" });
export type PlannerTeamList = z.infer<typeof PlannerTeamList>;

/** `POST /teams/select` body (spec 02): the team, and optionally a project of it. */
export const SelectTeamBody = z
  .object({
    workspace_id: z.uuid(),
    team_id: z.string().trim().min(1).max(100),
    team_name: z.string().trim().min(1).max(200),
    project_id: z.string().trim().min(1).max(100).optional(),
    project_name: z.string().trim().min(1).max(200).optional(),
  })
  .refine((b) => !b.project_name || b.project_id, { message: "project_name needs project_id", path: ["project_id"] });
export type SelectTeamBody = z.infer<typeof SelectTeamBody>;

export const SelectTeamResult = z
  .object({ selected_team_id: z.string(), selected_team_name: z.string(), selected_project_id: z.string().nullable(), selected_project_name: z.string().nullable() })
  .meta({ id: "PlannerSelection" });

/** Issue priority (spec 02): 0 none, 1 urgent, 2 high, 3 medium, 4 low. */
export const Priority = z.int().min(0).max(4).describe("0 none, 1 urgent, 2 high, 3 medium, 4 low");

/**
 * `POST /issues` body (spec 02). The team defaults to the selected one (none selected: NO_TEAM_SELECTED), the project
 * to the selected project; title and body default to the recommendation's title and description.
 */
export const CreatePlannerIssueBody = z.object({
  workspace_id: z.uuid(),
  recommendation_id: z.uuid(),
  team_id: z.string().trim().min(1).max(100).optional(),
  title: z.string().trim().min(1).max(255).optional(),
  body: z.string().max(100_000).optional(),
  project_id: z.string().trim().min(1).max(100).optional(),
  label_ids: z.array(z.string().min(1).max(100)).max(20).default([]),
  state_id: z.string().trim().min(1).max(100).optional(),
  priority: Priority.optional(),
});
export type CreatePlannerIssueBody = z.infer<typeof CreatePlannerIssueBody>;

export const CreatePlannerIssueResult = z
  .object({ issue_url: z.string(), issue_identifier: z.string(), link_id: z.string() })
  .meta({ id: "CreatePlannerIssueResult" });

export const PlannerLinkView = z
  .object({
    id: z.string(),
    recommendation_id: z.string(),
    issue_id: z.string(),
    identifier: z.string(),
    issue_url: z.string(),
    title: z.string(),
    state: z.string().describe("the workflow state's name"),
    state_type: z.string().nullable().describe("the state's category: triage, backlog, unstarted, started, completed, cancelled"),
    last_synced_at: z.string().nullable(),
    created_at: z.string(),
  })
  .meta({ id: "PlannerLink" });
export type PlannerLinkView = z.infer<typeof PlannerLinkView>;
export const PlannerLinkList = z.object({ links: z.array(PlannerLinkView) });
