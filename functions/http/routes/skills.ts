import * as z from "zod";
import { defineRoutes, MULTIPART_FRAMING_BYTES, type RouteSpec } from "../../lib/route";
import {
  CreateCustomInput,
  FeedbackInput,
  IMPORT_MAX_BYTES,
  ImportBody,
  ImportResult,
  InstalledSkill,
  InstallInput,
  OptionalWorkspaceQuery,
  RemovedSkill,
  SkillArchive,
  SkillDetail,
  SkillFeedback,
  SkillSlugParams,
  SkillSummary,
  UpdateCustomInput,
  UpdateInstallInput,
  WorkspaceQuery,
} from "../../../core/skill/schema";

/**
 * Skills (spec 01 "Skills"; spec 02 Limits: Plans rule 5, has_skills and has_custom_skills): the official library,
 * installations, custom skills and feedback, plus export and import of Agent Skills folders (our own routes,
 * docs/decisions.md "Skills"). Membership of the named workspace is checked in core/skill; a custom skill of another
 * workspace is invisible (404) except to the edit and delete routes, which answer 403 to a workspace that is not its
 * author (spec 01: "must be the author").
 */
export const skillsRoutes = defineRoutes({
  "skills.library": {
    method: "GET", path: "/api/skills/library", group: "skills", access: "user", workspaceScope: "query",
    summary: "The official skills, with is_installed for the workspace named by workspace_id (optional)",
    query: OptionalWorkspaceQuery,
    responses: { 200: z.array(SkillSummary) },
  },
  "skills.libraryDetail": {
    method: "GET", path: "/api/skills/library/{slug}", group: "skills", access: "user", workspaceScope: "query",
    summary: "One skill in full: an official skill, or the named workspace's custom skill of that slug",
    params: SkillSlugParams, query: OptionalWorkspaceQuery,
    responses: { 200: SkillDetail },
  },
  "skills.workspace": {
    method: "GET", path: "/api/skills/workspace", group: "skills", access: "user", workspaceScope: "query",
    summary: "The skills installed in a workspace, oldest installation first",
    query: WorkspaceQuery,
    responses: { 200: z.array(InstalledSkill) },
  },
  "skills.install": {
    method: "POST", path: "/api/skills/install/{slug}", group: "skills", access: "user", workspaceScope: "body",
    summary: "Install an official skill (or re-install the workspace's own custom skill); installing it again answers the existing installation",
    params: SkillSlugParams, body: InstallInput,
    feature: "has_skills",
    responses: { 200: InstalledSkill },
    errors: ["CONFLICT"],
  },
  "skills.uninstall": {
    method: "DELETE", path: "/api/skills/install/{slug}", group: "skills", access: "user", workspaceScope: "query",
    summary: "Uninstall a skill from a workspace (a custom skill stays authored)",
    params: SkillSlugParams, query: WorkspaceQuery,
    responses: { 200: RemovedSkill },
  },
  "skills.updateInstall": {
    method: "PATCH", path: "/api/skills/install/{slug}", group: "skills", access: "user", workspaceScope: "body",
    summary: "Enable, disable or configure an installed skill",
    params: SkillSlugParams, body: UpdateInstallInput,
    responses: { 200: InstalledSkill },
  },
  "skills.createCustom": {
    method: "POST", path: "/api/skills/custom", group: "skills", access: "user", workspaceScope: "body",
    summary: "Author a custom skill (version 1.0.0), installed in the authoring workspace; counted against the plan's custom skills",
    body: CreateCustomInput,
    feature: "has_custom_skills", usage: "custom_skills",
    errors: ["CONFLICT"],
    responses: { 200: SkillDetail },
  },
  "skills.updateCustom": {
    method: "PUT", path: "/api/skills/custom/{slug}", group: "skills", access: "user", workspaceScope: "body",
    summary: "Edit a custom skill (author workspace only); its semantic version is bumped: major for the template, minor for instructions or sample, patch for the rest",
    params: SkillSlugParams, body: UpdateCustomInput,
    errors: ["CONFLICT"],
    responses: { 200: SkillDetail },
  },
  "skills.deleteCustom": {
    method: "DELETE", path: "/api/skills/custom/{slug}", group: "skills", access: "user", workspaceScope: "query",
    summary: "Delete a custom skill (author workspace only), its installation and its feedback",
    params: SkillSlugParams, query: WorkspaceQuery,
    errors: ["CONFLICT"],
    responses: { 200: RemovedSkill },
  },
  "skills.feedback": {
    method: "POST", path: "/api/skills/{slug}/feedback", group: "skills", access: "user", workspaceScope: "body",
    summary: "Rate a skill 1 to 5, once per user and workspace (a second rating replaces the first)",
    params: SkillSlugParams, body: FeedbackInput,
    responses: { 200: SkillFeedback },
    errors: ["CONFLICT"],
  },
  "skills.export": {
    method: "GET", path: "/api/skills/{slug}/export", group: "skills", access: "user", workspaceScope: "query",
    summary: "Download a skill as a zip of its Agent Skills folder (SKILL.md and assets/)",
    params: SkillSlugParams, query: OptionalWorkspaceQuery,
    produces: "application/zip",
    responses: { 200: SkillArchive },
  },
  "skills.import": {
    method: "POST", path: "/api/skills/import", group: "skills", access: "user", workspaceScope: "body",
    summary: "Import an Agent Skills folder (a zip, or a lone SKILL.md) as a custom skill of the workspace, validated by the format's rules",
    body: ImportBody, bodyType: "multipart",
    bodyLimit: IMPORT_MAX_BYTES + MULTIPART_FRAMING_BYTES,
    // The same gates as a create, checked by the operation itself (an import is a create).
    errors: ["USAGE_LIMIT_EXCEEDED", "CONFLICT"],
    responses: { 200: ImportResult },
  },
} satisfies Record<string, RouteSpec>);
