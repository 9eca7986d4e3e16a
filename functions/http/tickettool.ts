import { httpGroup } from "../lib/http";
import { tickettoolRoutes } from "./routes/tickettool";
import { ok, type Reply } from "../lib/route";
import * as Tickets from "../../core/integration/tickets";

/** The browser goes back to the frontend's settings page with the outcome in its query. */
const redirect = ({ location }: { location: string }): Reply => ({ status: 302, headers: { location }, contentType: "text/plain", body: "" });

/** Integrations: the ticket tool, Jira Cloud (spec 02 "Ticket-tool integration"). */
export const handler = httpGroup(tickettoolRoutes, {
  "tickettool.connect": async ({ user, body }) => ok(await Tickets.connect(user.id, body.workspace_id)),
  "tickettool.callback": async ({ query }) => redirect(await Tickets.callback(query)),
  "tickettool.disconnect": async ({ user, body }) => ok(await Tickets.disconnect(user.id, body.workspace_id)),
  "tickettool.status": async ({ user, query }) => ok(await Tickets.status(user.id, query.workspace_id)),
  "tickettool.projects": async ({ user, query }) => ok(await Tickets.projects(user.id, query)),
});
