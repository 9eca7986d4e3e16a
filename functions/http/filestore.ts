import { httpGroup } from "../lib/http";
import { filestoreRoutes } from "./routes/filestore";
import { ok, type Reply } from "../lib/route";
import * as Filestore from "../../core/integration/filestore";

/** The browser goes back to the frontend's settings page with the outcome in its query. */
const redirect = ({ location }: { location: string }): Reply => ({ status: 302, headers: { location }, contentType: "text/plain", body: "" });

/** Integrations: the file store, Google Drive (spec 02 "File-store integration"). */
export const handler = httpGroup(filestoreRoutes, {
  "filestore.connect": async ({ user, body }) => ok(await Filestore.connect(user.id, body.workspace_id)),
  "filestore.callback": async ({ query }) => redirect(await Filestore.callback(query)),
  "filestore.disconnect": async ({ user, query }) => ok(await Filestore.disconnect(user.id, query.workspace_id)),
  "filestore.status": async ({ user, query }) => ok(await Filestore.status(user.id, query.workspace_id)),
});
