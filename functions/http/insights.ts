import { httpGroup } from "../lib/http";
import { insightsRoutes } from "./routes/insights";
import { created, noContent, ok } from "../lib/route";
import * as Insight from "../../core/insight";

/** Search (its lexical index and vector snapshot) loads on the first search, not for every insight read. */
const Search = () => import("../../core/insight/search");

/** Insights: CRUD, list, batch archive (spec 01 Insights). */
export const handler = httpGroup(insightsRoutes, {
  "insights.create": async ({ user, body }) => created(await Insight.create(user.id, body)),
  "insights.list": async ({ user, query }) => ok(await Insight.list(user.id, query)),
  "insights.batch": async ({ user, body }) => ok(await Insight.batch(user.id, body)),
  "insights.search": async ({ user, body }) => ok(await (await Search()).search(user.id, body)),
  "insights.get": async ({ user, params }) => ok(await Insight.get(user.id, params.insight_id)),
  "insights.update": async ({ user, params, body }) => ok(await Insight.update(user.id, params.insight_id, body)),
  "insights.delete": async ({ user, params }) => {
    await Insight.remove(user.id, params.insight_id);
    return noContent();
  },
});
