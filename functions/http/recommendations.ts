import { httpGroup } from "../lib/http";
import { recommendationsRoutes } from "./routes/recommendations";
import { created, noContent, ok } from "../lib/route";
import * as Recommendation from "../../core/recommendation";

/** Recommendations: CRUD, status, batch status (spec 01 Recommendations). */
export const handler = httpGroup(recommendationsRoutes, {
  "recommendations.create": async ({ user, body }) => created(await Recommendation.create(user.id, body)),
  "recommendations.list": async ({ user, query }) => ok(await Recommendation.list(user.id, query)),
  "recommendations.batchStatus": async ({ user, body }) => ok(await Recommendation.batchStatus(user.id, body)),
  "recommendations.get": async ({ user, params }) => ok(await Recommendation.get(user.id, params.recommendation_id)),
  "recommendations.update": async ({ user, params, body }) =>
    ok(await Recommendation.update(user.id, params.recommendation_id, body)),
  "recommendations.delete": async ({ user, params }) => {
    await Recommendation.remove(user.id, params.recommendation_id);
    return noContent();
  },
  "recommendations.status": async ({ user, params, body }) =>
    ok(await Recommendation.changeStatus(user.id, params.recommendation_id, body)),
});
