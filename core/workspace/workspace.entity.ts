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
    /**
     * Set on the owner's membership when the workspace's deletion starts (core/workspace/deletion.ts): every membership
     * check refuses it from then on; the deletion, run again, goes on.
     */
    deleting_at: { type: "string" },
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

/** Value of `cycle_index` while a workspace's research cycles are enabled. */
export const CYCLES_ON = "on" as const;

/** Workspace settings (camelCase on the wire, spec 01 Workspace). */
export const buildWorkspaceSettingsEntity = () => new Entity({
  model: { entity: "workspace_settings", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    researchCycleEnabled: { type: "boolean", required: true, default: false },
    overnightCycleNotifyEmail: { type: "boolean", required: true, default: false },
    researchProgram: { type: "any" },
    /** `CYCLES_ON` while researchCycleEnabled (the sparse index's partition), absent otherwise. */
    cycle_index: { type: [CYCLES_ON] as const },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString(), set: () => new Date().toISOString(), watch: "*" },
  },
  indexes: {
    byWorkspace: {
      pk: { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
      sk: { field: "sk", composite: [], template: "settings", casing: "none" },
    },
    /**
     * SPARSE (gsi2): only workspaces with research cycles enabled, in one partition `cycles#on`, so the nightly
     * schedule finds them with a Query (core/cycle), never a Scan. Enabling sets `cycle_index` with the flag;
     * disabling removes it, which removes the keys.
     */
    cyclesEnabled: {
      index: "gsi2",
      condition: (attr) => attr.researchCycleEnabled === true && attr.cycle_index === CYCLES_ON,
      pk: { field: "gsi2pk", composite: ["cycle_index"], template: "cycles#${cycle_index}", casing: "none" },
      // No composite from the item's own key: a write that names only the workspace (every settings write) must not
      // touch this index; `cycle_index` alone moves it. The items are told apart by their workspace_id.
      sk: { field: "gsi2sk", composite: ["cycle_index"], template: "settings#${cycle_index}", casing: "none" },
    },
  },
});
export type WorkspaceSettingsEntity = ReturnType<typeof buildWorkspaceSettingsEntity>;

