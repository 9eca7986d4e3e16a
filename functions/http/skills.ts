import { httpGroup } from "../lib/http";
import { multipartBodyParser } from "../lib/multipart";
import { skillsRoutes } from "./routes/skills";
import { ok } from "../lib/route";
import * as Skill from "../../core/skill";

/** Skills: the official library, installations, custom skills, feedback, export and import (spec 01 "Skills"; DESIGN.md 6.6). */
export const handler = httpGroup(skillsRoutes, {
  "skills.library": async ({ user, query }) => ok(await Skill.library(user.id, query.workspace_id)),
  "skills.libraryDetail": async ({ user, params, query }) => ok(await Skill.libraryDetail(user.id, params.slug, query.workspace_id)),
  "skills.workspace": async ({ user, query }) => ok(await Skill.installed(user.id, query.workspace_id)),
  "skills.install": async ({ user, params, body }) => ok(await Skill.install(user.id, params.slug, body)),
  "skills.uninstall": async ({ user, params, query }) => ok(await Skill.uninstall(user.id, params.slug, query.workspace_id)),
  "skills.updateInstall": async ({ user, params, body }) => ok(await Skill.updateInstall(user.id, params.slug, body)),
  "skills.createCustom": async ({ user, body }) => ok(await Skill.createCustom(user.id, body)),
  "skills.updateCustom": async ({ user, params, body }) => ok(await Skill.updateCustom(user.id, params.slug, body)),
  "skills.deleteCustom": async ({ user, params, query }) => ok(await Skill.deleteCustom(user.id, params.slug, query.workspace_id)),
  "skills.feedback": async ({ user, params, body }) => ok(await Skill.rate(user.id, params.slug, body)),
  "skills.export": async ({ user, params, query }) => {
    const { filename, bytes } = await Skill.exportSkill(user.id, params.slug, query.workspace_id);
    return { status: 200, body: bytes, contentType: "application/zip", headers: { "content-disposition": `attachment; filename="${filename}"` } };
  },
  "skills.import": async ({ user, body }) => ok(await Skill.importSkill(user.id, body)),
}, { multipart: multipartBodyParser() });
