import { httpGroup } from "../lib/http";
import { workspacesRoutes } from "./routes/workspaces";
import { created, noContent, ok } from "../lib/route";
import * as Workspace from "../../core/workspace";

/** Workspaces, settings, agent intro and members (spec 01 Account and workspaces; DESIGN.md section 5 members). */
export const handler = httpGroup(workspacesRoutes, {
  "workspaces.create": async ({ user, body }) => created(await Workspace.create(user, body)),
  "workspaces.list": async ({ user }) => ok(await Workspace.list(user.id)),
  "workspaces.get": async ({ user, params }) => ok(await Workspace.get(user.id, params.workspace_id)),
  "workspaces.update": async ({ user, params, body }) => ok(await Workspace.update(user.id, params.workspace_id, body)),
  "workspaces.delete": async ({ user, params }) => {
    await Workspace.remove(user.id, params.workspace_id);
    return noContent();
  },
  "workspaces.getSettings": async ({ user, params }) => ok(await Workspace.getSettings(user.id, params.workspace_id)),
  "workspaces.updateSettings": async ({ user, params, body }) =>
    ok(await Workspace.updateSettings(user.id, params.workspace_id, body)),
  "workspaces.agentIntro": async ({ user, params }) => ok(await Workspace.agentIntro(user.id, params.workspace_id)),
  "workspaces.listMembers": async ({ user, params }) => ok(await Workspace.listMembers(user.id, params.workspace_id)),
  "workspaces.addMember": async ({ user, params, body }) => created(await Workspace.addMember(user.id, params.workspace_id, body)),
  "workspaces.updateMember": async ({ user, params, body }) =>
    ok(await Workspace.updateMember(user.id, params.workspace_id, params.user_id, body)),
  "workspaces.removeMember": async ({ user, params }) => {
    await Workspace.removeMember(user.id, params.workspace_id, params.user_id);
    return noContent();
  },
});
