import { httpGroup } from "../lib/http";
import { codehostRoutes } from "./routes/codehost";
import { ok, type Reply } from "../lib/route";
import * as Codehost from "../../core/integration/codehost";

/** The browser goes back to the frontend's settings page with the outcome in its query. */
const redirect = ({ location }: { location: string }): Reply => ({ status: 302, headers: { location }, contentType: "text/plain", body: "" });

/** Integrations: the code host (spec 02 "Code-host integration"). */
export const handler = httpGroup(codehostRoutes, {
  "codehost.connect": async ({ user, body }) => ok(await Codehost.connect(user.id, body.workspace_id)),
  "codehost.callback": async ({ query }) => redirect(await Codehost.callback(query)),
  "codehost.disconnect": async ({ user, query }) => ok(await Codehost.disconnect(user.id, query.workspace_id)),
  "codehost.status": async ({ user, query }) => ok(await Codehost.status(user.id, query)),
  "codehost.repos": async ({ user, query }) => ok(await Codehost.repos(user.id, query)),
  "codehost.selectRepos": async ({ user, body }) => ok(await Codehost.selectRepos(user.id, body)),
  "codehost.createIssue": async ({ user, body }) => ok(await Codehost.createIssue(user.id, body)),
  "codehost.links": async ({ user, query }) => ok(await Codehost.links(user.id, query)),
  "codehost.sync": async ({ user, body }) => ok(await Codehost.sync(user.id, body.workspace_id)),
});
