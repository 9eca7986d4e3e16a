import { httpGroup } from "../lib/http";
import { multipartBodyParser } from "../lib/multipart";
import { researchRoutes } from "./routes/research";
import { created, noContent, ok } from "../lib/route";
import * as Research from "../../core/research";

/** Research sources: upload, presigned upload, list, get, delete, reprocess (spec 01). */
export const handler = httpGroup(researchRoutes, {
  "research.upload": async ({ user, body }) => created(await Research.upload(user.id, body)),
  "research.uploadUrl": async ({ user, body }) => created(await Research.createUploadUrl(user.id, body)),
  "research.list": async ({ user, query }) => ok(await Research.list(user.id, query)),
  "research.get": async ({ user, params }) => ok(await Research.get(user.id, params.source_id)),
  "research.delete": async ({ user, params }) => {
    await Research.remove(user.id, params.source_id);
    return noContent();
  },
  "research.reprocess": async ({ user, params }) => ok(await Research.reprocess(user.id, params.source_id)),
}, { multipart: multipartBodyParser() });
