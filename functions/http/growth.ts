import { httpGroup } from "../lib/http";
import { growthRoutes } from "./routes/growth";
import { ok } from "../lib/route";
import * as Growth from "../../core/growth";

/** Admin growth and the public waitlist (spec 02 "Admin growth"; DESIGN.md section 5). */
export const handler = httpGroup(growthRoutes, {
  "growth.joinWaitlist": async ({ body, event }) => ({ status: 202, body: await Growth.joinWaitlist(body, event.requestContext.http.sourceIp) }),
  "growth.waitlist": async ({ query }) => ok(await Growth.listWaitlist(query)),
  "growth.approve": async ({ body }) => ok(await Growth.approveWaitlist(body)),
  "growth.generateCodes": async ({ body }) => ok(await Growth.generateCodes(body)),
  "growth.codes": async ({ query }) => ok(await Growth.listCodes(query)),
  "growth.syncSheets": async () => ok(await Growth.syncSheets()),
  "growth.stats": async () => ok(await Growth.stats()),
  "growth.revokeAccess": async ({ params }) => ok(await Growth.revokeAccess(params.user_id)),
});
