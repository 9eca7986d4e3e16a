import { Entity } from "electrodb";

/**
 * Skills in the table (DESIGN.md 6.6: official skills are files; custom skills are items). Everything a workspace owns
 * lives in its partition (`ws#<id>`), so deleting the workspace deletes its skills, installations, feedback and
 * counter; only the slug claim, which makes a custom slug unique across workspaces, lives outside it.
 */
const wsKey = { field: "pk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" } as const;

/** A custom skill (spec 01 Skill, `is_official` false), authored by one workspace. */
export const buildCustomSkillEntity = () => new Entity({
  model: { entity: "custom_skill", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    slug: { type: "string", required: true },
    id: { type: "string", required: true },
    name: { type: "string", required: true },
    description: { type: "string", required: true },
    category: { type: "string" },
    icon: { type: "string" },
    trigger_keywords: { type: "list", items: { type: "string" }, required: true, default: () => [] },
    version: { type: "string", required: true },
    instructions_md: { type: "string", required: true },
    sample_output_md: { type: "string", default: "" },
    output_template_md: { type: "string", default: "" },
    /** The Agent Skills fields an imported skill came with, kept for its export. */
    license: { type: "string" },
    compatibility: { type: "string" },
    /** `allowed-tools` as JSON text (a string or a list of strings in SKILL.md). */
    allowed_tools: { type: "string" },
    extra_metadata: { type: "any", default: () => ({}) },
    created_by: { type: "string", required: true },
    created_at: { type: "string", required: true, readOnly: true, default: () => new Date().toISOString() },
    updated_at: { type: "string", required: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byWorkspace: { pk: wsKey, sk: { field: "sk", composite: ["slug"], template: "skill#custom#${slug}", casing: "none" } },
  },
});
export type CustomSkillEntity = ReturnType<typeof buildCustomSkillEntity>;

/**
 * The claim on a custom slug: created in the custom skill's create transaction if absent, so two workspaces cannot
 * author the same slug; it names the author workspace (edits and deletion only by the author, spec 01).
 */
export const buildSkillSlugEntity = () => new Entity({
  model: { entity: "skill_slug", version: "1", service: "r2d" },
  attributes: {
    slug: { type: "string", required: true },
    workspace_id: { type: "string", required: true },
    created_at: { type: "string", required: true, default: () => new Date().toISOString() },
  },
  indexes: {
    bySlug: {
      pk: { field: "pk", composite: ["slug"], template: "skillslug#${slug}", casing: "none" },
      sk: { field: "sk", composite: [], template: "claim", casing: "none" },
    },
  },
});
export type SkillSlugEntity = ReturnType<typeof buildSkillSlugEntity>;

/**
 * A skill installed in a workspace (spec 01 Installed skill). Indexed by slug across workspaces (gsi2), so a skill's
 * `usage_count` (installations across workspaces) is a count of that index's partition.
 */
export const buildSkillInstallEntity = () => new Entity({
  model: { entity: "skill_install", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    slug: { type: "string", required: true },
    id: { type: "string", required: true },
    is_official: { type: "boolean", required: true },
    is_enabled: { type: "boolean", required: true, default: true },
    config: { type: "any", default: () => ({}) },
    installed_by: { type: "string", required: true },
    installed_at: { type: "string", required: true, default: () => new Date().toISOString() },
    last_used_at: { type: "string" },
    /** Copilot runs that loaded the skill (core/skill/hook.ts). */
    activation_count: { type: "number", default: 0 },
  },
  indexes: {
    byWorkspace: { pk: wsKey, sk: { field: "sk", composite: ["slug"], template: "skill#install#${slug}", casing: "none" } },
    bySlug: {
      index: "gsi2",
      pk: { field: "gsi2pk", composite: ["slug"], template: "skillinstalls#${slug}", casing: "none" },
      sk: { field: "gsi2sk", composite: ["workspace_id"], template: "ws#${workspace_id}", casing: "none" },
    },
  },
});
export type SkillInstallEntity = ReturnType<typeof buildSkillInstallEntity>;

/** Spec 01 Skill feedback: one per user, workspace and skill; a second rating replaces the first and keeps its id. */
export const buildSkillFeedbackEntity = () => new Entity({
  model: { entity: "skill_feedback", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    slug: { type: "string", required: true },
    user_id: { type: "string", required: true },
    id: { type: "string", required: true },
    rating: { type: "number", required: true },
    feedback_text: { type: "string" },
    created_at: { type: "string", required: true },
  },
  indexes: {
    byWorkspace: { pk: wsKey, sk: { field: "sk", composite: ["slug", "user_id"], template: "skillfb#${slug}#${user_id}", casing: "none" } },
  },
});
export type SkillFeedbackEntity = ReturnType<typeof buildSkillFeedbackEntity>;

/** An official skill suggested to a user in a workspace (`skill_suggestion`, once: core/skill/hook.ts). */
export const buildSkillSuggestionEntity = () => new Entity({
  model: { entity: "skill_suggestion", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    user_id: { type: "string", required: true },
    slug: { type: "string", required: true },
    conversation_id: { type: "string", required: true },
    suggested_at: { type: "string", required: true, default: () => new Date().toISOString() },
  },
  indexes: {
    byWorkspace: { pk: wsKey, sk: { field: "sk", composite: ["user_id", "slug"], template: "skillsug#${user_id}#${slug}", casing: "none" } },
  },
});
export type SkillSuggestionEntity = ReturnType<typeof buildSkillSuggestionEntity>;

/**
 * The workspace's custom-skills counter (spec 02 Limits: Plans, custom skills 3 / 5 / unlimited): changed in the same
 * transaction as the custom skill it counts, with a condition on the plan's limit (core/billing/counters.ts pattern).
 */
export const buildSkillCounterEntity = () => new Entity({
  model: { entity: "skill_counter", version: "1", service: "r2d" },
  attributes: {
    workspace_id: { type: "string", required: true },
    custom_skills: { type: "number" },
  },
  indexes: {
    byWorkspace: { pk: wsKey, sk: { field: "sk", composite: [], template: "skillcount", casing: "none" } },
  },
});
export type SkillCounterEntity = ReturnType<typeof buildSkillCounterEntity>;
