import { httpGroup } from "../lib/http";
import { observabilityRoutes } from "./routes/observability";
import { ok } from "../lib/route";

// Loaded when a route first needs them (chunks of their own): the entropy scanner brings wink-nlp and its 3.6 MB model.
const Observability = () => import("../../core/observability");
const Entropy = () => import("../../core/entropy");

/** Admin observability: agent runs, quality dashboards and the entropy scanner (spec 02; issue #21). */
export const handler = httpGroup(observabilityRoutes, {
  "observability.agentRuns": async ({ user, query }) => ok(await (await Observability()).listRuns(user.id, query)),
  "observability.agentRunStats": async ({ user, query }) => ok(await (await Observability()).runStats(user.id, query)),
  "observability.rqs": async ({ user, query }) => ok(await (await Observability()).rqsDashboard(user.id, query)),
  "observability.feedback": async ({ user, query }) => ok(await (await Observability()).feedbackDashboard(user.id, query)),
  "observability.entropy": async ({ user, query }) => ok(await (await Observability()).entropyDashboard(user.id, query)),
  "observability.entropyIssues": async ({ user, query }) => ok(await (await Entropy()).activeIssues(user.id, query)),
  "observability.entropyScan": async ({ user, body }) => ok(await (await Entropy()).scanOnDemand(user.id, body)),
});
