import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  ListSourcesQuery,
  ResearchSource,
  ResearchSourceDetail,
  SourceIdParam,
  SourceList,
  UploadBody,
  UploadUrlInput,
  UploadUrlResponse,
} from "../../../core/research/schema";
import { MULTIPART_MAX_BYTES } from "../../../core/research/limits";

/** Research sources (spec 01 Research sources and synthesis; DESIGN.md section 5 upload-url). */
export const researchRoutes = defineRoutes({
  "research.upload": {
    method: "POST", path: "/api/research/upload", group: "research", access: "user", workspaceScope: "body",
    summary: "Upload a research file (multipart: file, workspace_id, source_type, title); extraction starts in the background",
    body: UploadBody,
    bodyType: "multipart",
    bodyLimitHint: `files over ${MULTIPART_MAX_BYTES / 1024 / 1024} MB go through POST /api/research/upload-url (up to 100 MB)`,
    usage: "research_sources",
    errors: ["EMPTY_FILE", "BLOCKED_FILE_TYPE", "FILE_TYPE_MISMATCH", "UNSUPPORTED_MEDIA_TYPE", "SUBSCRIPTION_REQUIRED", "USAGE_LIMIT_EXCEEDED"],
    responses: { 201: ResearchSource },
  },
  "research.uploadUrl": {
    method: "POST", path: "/api/research/upload-url", group: "research", access: "user", workspaceScope: "body",
    summary: "A presigned S3 POST for files above the gateway's payload limit (up to 100 MB)",
    body: UploadUrlInput,
    usage: "research_sources",
    errors: ["EMPTY_FILE", "BLOCKED_FILE_TYPE", "UNSUPPORTED_MEDIA_TYPE", "SUBSCRIPTION_REQUIRED", "USAGE_LIMIT_EXCEEDED"],
    responses: { 201: UploadUrlResponse },
  },
  "research.list": {
    method: "GET", path: "/api/research/sources", group: "research", access: "user", workspaceScope: "query",
    summary: "Research sources of a workspace, newest first",
    query: ListSourcesQuery,
    responses: { 200: SourceList },
  },
  "research.get": {
    method: "GET", path: "/api/research/sources/{source_id}", group: "research", access: "user", workspaceScope: "resource",
    summary: "One source with its extracted text and transcript",
    params: SourceIdParam,
    responses: { 200: ResearchSourceDetail },
  },
  "research.delete": {
    method: "DELETE", path: "/api/research/sources/{source_id}", group: "research", access: "user", workspaceScope: "resource",
    summary: "Delete a source and its stored file",
    params: SourceIdParam,
    responses: { 204: null },
  },
  "research.reprocess": {
    method: "POST", path: "/api/research/sources/{source_id}/reprocess", group: "research", access: "user", workspaceScope: "resource",
    summary: "Run extraction again for a pending or failed source (completed: 422 ALREADY_PROCESSED)",
    params: SourceIdParam,
    errors: ["ALREADY_PROCESSED", "CONFLICT"],
    responses: { 200: ResearchSource },
  },
} satisfies Record<string, RouteSpec>);
