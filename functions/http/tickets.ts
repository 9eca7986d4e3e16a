import { httpGroup } from "../lib/http";
import { ticketsRoutes } from "./routes/tickets";
import { ok } from "../lib/route";
import * as Tickets from "../../core/ticket";

/** Execution tickets (spec 02 "Execution tickets"): generate, list, review, push, sync. */
export const handler = httpGroup(ticketsRoutes, {
  "tickets.generate": async ({ user, body }) => ok(await Tickets.generate(user.id, body)),
  "tickets.list": async ({ user, params, query }) => ok(await Tickets.list(user.id, params.document_id, query)),
  "tickets.review": async ({ user, params, body }) => ok(await Tickets.review(user.id, params.ticket_id, body)),
  "tickets.push": async ({ user, body }) => ok(await Tickets.push(user.id, body)),
  "tickets.sync": async ({ user, body }) => ok(await Tickets.sync(user.id, body)),
});
