import { httpGroup } from "../lib/http";
import { observabilityRoutes } from "./routes/observability";
import { ok } from "../lib/route";
import * as Observability from "../../core/observability";
import * as Entropy from "../../core/entropy";

/** Admin observability: agent runs, quality dashboards and the entropy scanner (spec 02; issue #21). */
export const handler = httpGroup(observabilityRoutes, {
  "observability.agentRuns": async ({ user, query }) => ok(await Observability.listRuns(user.id, query)),
  "observability.agentRunStats": async ({ user, query }) => ok(await Observability.runStats(user.id, query)),
  "observability.rqs": async ({ user, query }) => ok(await Observability.rqsDashboard(user.id, query)),
  "observability.feedback": async ({ user, query }) => ok(await Observability.feedbackDashboard(user.id, query)),
  "observability.entropy": async ({ user, query }) => ok(await Observability.entropyDashboard(user.id, query)),
  "observability.entropyIssues": async ({ user, query }) => ok(await Entropy.activeIssues(user.id, query)),
  "observability.entropyScan": async ({ user, body }) => ok(await Entropy.scanOnDemand(user.id, body)),
});
