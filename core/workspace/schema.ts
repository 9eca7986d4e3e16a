import * as z from "zod";

export const Role = z.enum(["owner", "admin", "member"]);
export type Role = z.infer<typeof Role>;

const optionalText = (max: number) => z.string().trim().max(max).optional();

/** Body of `POST /api/workspaces` (spec 01). */
export const CreateWorkspaceInput = z
  .object({
    name: z.string().trim().min(1).max(200),
    product_name: optionalText(200),
    product_description: optionalText(5000),
    target_users: optionalText(2000),
    current_stage: optionalText(200),
  })
  .strict()
  .meta({ id: "CreateWorkspaceInput" });
export type CreateWorkspaceInput = z.infer<typeof CreateWorkspaceInput>;

/** Body of `PATCH /api/workspaces/{workspace_id}`: only the provided fields change. */
export const UpdateWorkspaceInput = CreateWorkspaceInput.partial().strict().meta({ id: "UpdateWorkspaceInput" });
export type UpdateWorkspaceInput = z.infer<typeof UpdateWorkspaceInput>;

export const Workspace = z
  .object({
    id: z.uuid(),
    name: z.string(),
    product_name: z.string().nullable(),
    product_description: z.string().nullable(),
    target_users: z.string().nullable(),
    current_stage: z.string().nullable(),
    owner_id: z.uuid(),
    role: Role.describe("the caller's role in this workspace"),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: "Workspace" });
export type Workspace = z.infer<typeof Workspace>;

export const WorkspaceList = z.object({ workspaces: z.array(Workspace), total: z.int() }).meta({ id: "WorkspaceList" });

/** A research program: what overnight research cycles work towards (needed to enable them). */
export const ResearchProgram = z.object({ goals: z.array(z.string().trim().min(1).max(500)).max(20) });

/** Workspace settings, camelCase on the wire (spec 01). */
export const WorkspaceSettings = z
  .object({
    researchCycleEnabled: z.boolean(),
    overnightCycleNotifyEmail: z.boolean(),
    researchProgram: ResearchProgram.nullable(),
  })
  .meta({ id: "WorkspaceSettings" });
export type WorkspaceSettings = z.infer<typeof WorkspaceSettings>;

export const UpdateSettingsInput = z
  .object({
    researchCycleEnabled: z.boolean().optional(),
    overnightCycleNotifyEmail: z.boolean().optional(),
    researchProgram: ResearchProgram.nullable().optional(),
  })
  .strict()
  .meta({ id: "UpdateSettingsInput" });
export type UpdateSettingsInput = z.infer<typeof UpdateSettingsInput>;

export const AgentIntro = z
  .object({
    intro: z.string(),
    state: z.enum(["empty", "has_sources", "has_insights", "rich"]),
    source_count: z.int(),
    insight_count: z.int(),
    recommendation_count: z.int(),
    document_count: z.int(),
  })
  .meta({ id: "AgentIntro" });
export type AgentIntro = z.infer<typeof AgentIntro>;

export const Member = z
  .object({
    user_id: z.uuid(),
    email: z.string(),
    name: z.string(),
    role: Role,
    created_at: z.string(),
  })
  .meta({ id: "Member" });
export type Member = z.infer<typeof Member>;

export const MemberList = z.object({ members: z.array(Member), total: z.int() }).meta({ id: "MemberList" });

export const AddMemberInput = z
  .object({ email: z.email().transform((e) => e.toLowerCase()), role: z.enum(["admin", "member"]).default("member") })
  .strict()
  .meta({ id: "AddMemberInput" });
export type AddMemberInput = z.infer<typeof AddMemberInput>;

export const UpdateMemberInput = z.object({ role: z.enum(["admin", "member"]) }).strict().meta({ id: "UpdateMemberInput" });
export type UpdateMemberInput = z.infer<typeof UpdateMemberInput>;

export const WorkspaceIdParam = z.object({ workspace_id: z.uuid() });
export const MemberParam = z.object({ workspace_id: z.uuid(), user_id: z.uuid() });
