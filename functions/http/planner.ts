import { httpGroup } from "../lib/http";
import { plannerRoutes } from "./routes/planner";
import { ok, type Reply } from "../lib/route";
import * as Planner from "../../core/integration/planner";

/** The browser goes back to the frontend's settings page with the outcome in its query. */
const redirect = ({ location }: { location: string }): Reply => ({ status: 302, headers: { location }, contentType: "text/plain", body: "" });

/** Integrations: the planner (spec 02 "Planner integration"), Linear. */
export const handler = httpGroup(plannerRoutes, {
  "planner.connect": async ({ user, body }) => ok(await Planner.connect(user.id, body.workspace_id)),
  "planner.callback": async ({ query }) => redirect(await Planner.callback(query)),
  "planner.disconnect": async ({ user, query }) => ok(await Planner.disconnect(user.id, query.workspace_id)),
  "planner.status": async ({ user, query }) => ok(await Planner.status(user.id, query)),
  "planner.teams": async ({ user, query }) => ok(await Planner.teams(user.id, query)),
  "planner.selectTeam": async ({ user, body }) => ok(await Planner.selectTeam(user.id, body)),
  "planner.createIssue": async ({ user, body }) => {
    const { issue_url, issue_identifier, link_id } = await Planner.createIssue(user.id, body);
    return ok({ issue_url, issue_identifier, link_id });
  },
  "planner.links": async ({ user, query }) => ok(await Planner.links(user.id, query)),
  "planner.sync": async ({ user, body }) => ok(await Planner.sync(user.id, body.workspace_id)),
});
