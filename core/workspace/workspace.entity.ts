import { Entity } from "electrodb";

/** Every workspace item lives in the partition `ws#<workspace id>` (DESIGN.md section 4.3). */
export const buildWorkspaceEntity = () => new Entity({
  model: { entity: "workspace", version: "1", service: "r2d" },
  attributes: {
    id: { type: "string", required: true },
    name: { type: "string", required: true },
    product_name: { type: "string" },
    product_description: { type: "string" },
    target_users: { type: "string" },
    current_stage: { type: "string" },
    owner_id: { type: "string", required: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byId: {
      pk: { field: "pk", composite: ["id"], template: "ws#${id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "workspace", casing: "none" },
    },
  },
});
export type WorkspaceEntity = ReturnType<typeof buildWorkspaceEntity>;

/** A user's role in a workspace; the gsi2 index lists a user's workspaces. */
export const buildMembershipEntity = () => new Entity({
  model: { entity: "membership", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    user_id: { type: "string", required: true },
    role: { type: ["owner", "admin", "member"] as const, required: true },
    added_by: { type: "string" },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: ["user_id"], template: "member#${user_id}", casing: "none" },
    },
    byUser: {
      index: "gsi2",
      pk: { field: "gsi2pk", composite: ["user_id"], template: "user#${user_id}", casing: "none" },
      sk: { field: "gsi2sk", composite: ["workspace_id"], template: "member#${workspace_id}", casing: "none" },
    },
  },
});
export type MembershipEntity = ReturnType<typeof buildMembershipEntity>;

/** Workspace settings (camelCase on the wire, spec 01 Workspace). */
export const buildWorkspaceSettingsEntity = () => new Entity({
  model: { entity: "workspace_settings", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    researchCycleEnabled: { type: "boolean", required: true, default: false },
    overnightCycleNotifyEmail: { type: "boolean", required: true, default: false },
    researchProgram: { type: "any" },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "settings", casing: "none" },
    },
  },
});
export type WorkspaceSettingsEntity = ReturnType<typeof buildWorkspaceSettingsEntity>;

