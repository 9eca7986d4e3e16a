import { httpGroup } from "../lib/http";
import { documentsRoutes } from "./routes/documents";
import { created, noContent, ok } from "../lib/route";
import * as Document from "../../core/document";

/** Documents, revisions, diff, restore, status (spec 01 Documents and blocks). */
export const handler = httpGroup(documentsRoutes, {
  "documents.create": async ({ user, body }) => created(await Document.create(user.id, body)),
  "documents.list": async ({ user, query }) => ok(await Document.list(user.id, query)),
  "documents.get": async ({ user, params }) => ok(await Document.get(user.id, params.document_id)),
  "documents.update": async ({ user, params, body }) => ok(await Document.update(user.id, params.document_id, body)),
  "documents.delete": async ({ user, params }) => {
    await Document.remove(user.id, params.document_id);
    return noContent();
  },
  "documents.saveVersion": async ({ user, params, body }) =>
    created(await Document.saveRevision(user.id, params.document_id, body.change_summary)),
  "documents.listVersions": async ({ user, params, query }) =>
    ok(await Document.listRevisions(user.id, params.document_id, query.limit)),
  "documents.getVersion": async ({ user, params }) => ok(await Document.getRevision(user.id, params.document_id, params.revision_id)),
  "documents.diff": async ({ user, params, query }) =>
    ok(await Document.diff(user.id, params.document_id, query.from_revision, query.to_revision)),
  "documents.restore": async ({ user, params, body }) =>
    ok(await Document.restore(user.id, params.document_id, params.revision_id, body.change_summary)),
  "documents.status": async ({ user, params, body }) => ok(await Document.changeStatus(user.id, params.document_id, body)),
});
