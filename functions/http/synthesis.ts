import { httpGroup } from "../lib/http";
import { synthesisRoutes } from "./routes/synthesis";
import { ok } from "../lib/route";
import { synthesize } from "../../core/insight/synthesis";

/** `POST /api/research/synthesize`: its own Lambda, because it blocks for up to a minute (spec 01). */
export const handler = httpGroup(synthesisRoutes, {
  "synthesis.synthesize": async ({ user, body }) => ok(await synthesize(user.id, body)),
});
