import { httpGroup } from "../lib/http";
import { pendingActionsRoutes } from "./routes/pending-actions";
import { ok } from "../lib/route";
import * as PendingAction from "../../core/pending-action";

/** Pending actions: list, get, approve, reject, batch approve (spec 01 Pending actions). */
export const handler = httpGroup(pendingActionsRoutes, {
  "pending-actions.list": async ({ user, query }) => ok(await PendingAction.list(user.id, query)),
  "pending-actions.get": async ({ user, params }) => ok(await PendingAction.get(user.id, params.pa_id)),
  "pending-actions.approve": async ({ user, params, body }) => ok(await PendingAction.approve(user.id, params.pa_id, body)),
  "pending-actions.reject": async ({ user, params }) => ok(await PendingAction.reject(user.id, params.pa_id)),
  "pending-actions.batchApprove": async ({ user, params, body }) =>
    ok(await PendingAction.batchApprove(user.id, params.batch_id, body)),
});
