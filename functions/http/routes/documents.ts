import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  CreateDocumentInput,
  DiffQuery,
  DiffResult,
  Document,
  DocumentIdParam,
  DocumentList,
  ListDocumentsQuery,
  ListVersionsQuery,
  RestoreResult,
  Revision,
  RevisionList,
  RevisionParam,
  SaveVersionInput,
  StatusInput,
  UpdateDocumentInput,
} from "../../../core/document/schema";

/** Documents, revisions and status (spec 01 Documents and blocks). */
export const documentsRoutes = defineRoutes({
  "documents.create": {
    method: "POST", path: "/api/documents", group: "documents", access: "user", workspaceScope: "body",
    summary: "Create a document (status draft) with its first revision",
    body: CreateDocumentInput,
    responses: { 201: Document },
  },
  "documents.list": {
    method: "GET", path: "/api/documents", group: "documents", access: "user", workspaceScope: "query",
    summary: "Documents of a workspace, most recently updated first",
    query: ListDocumentsQuery,
    responses: { 200: DocumentList },
  },
  "documents.get": {
    method: "GET", path: "/api/documents/{document_id}", group: "documents", access: "user", workspaceScope: "resource",
    summary: "One document",
    params: DocumentIdParam,
    responses: { 200: Document },
  },
  "documents.update": {
    method: "PATCH", path: "/api/documents/{document_id}", group: "documents", access: "user", workspaceScope: "resource",
    summary: "Change content, title or metadata (published documents stay editable)",
    params: DocumentIdParam,
    body: UpdateDocumentInput,
    responses: { 200: Document },
  },
  "documents.delete": {
    method: "DELETE", path: "/api/documents/{document_id}", group: "documents", access: "user", workspaceScope: "resource",
    summary: "Delete a document with its blocks, revisions and annotations",
    params: DocumentIdParam,
    responses: { 204: null },
  },
  "documents.saveVersion": {
    method: "POST", path: "/api/documents/{document_id}/versions", group: "documents", access: "user", workspaceScope: "resource",
    summary: "Save the current content as the next immutable revision (manual_save)",
    params: DocumentIdParam,
    body: SaveVersionInput,
    responses: { 201: Revision },
  },
  "documents.listVersions": {
    method: "GET", path: "/api/documents/{document_id}/versions", group: "documents", access: "user", workspaceScope: "resource",
    summary: "Revisions, newest first (limit default 50, max 100)",
    params: DocumentIdParam,
    query: ListVersionsQuery,
    responses: { 200: RevisionList },
  },
  "documents.getVersion": {
    method: "GET", path: "/api/documents/{document_id}/versions/{revision_id}", group: "documents", access: "user", workspaceScope: "resource",
    summary: "One revision with its full content",
    params: RevisionParam,
    responses: { 200: Revision },
  },
  "documents.diff": {
    method: "GET", path: "/api/documents/{document_id}/diff", group: "documents", access: "user", workspaceScope: "resource",
    summary: "Line-level diff between two revision numbers",
    params: DocumentIdParam,
    query: DiffQuery,
    responses: { 200: DiffResult },
  },
  "documents.restore": {
    method: "POST", path: "/api/documents/{document_id}/versions/{revision_id}/restore", group: "documents", access: "user", workspaceScope: "resource",
    summary: "Restore a revision; snapshots are saved before and after",
    params: RevisionParam,
    body: SaveVersionInput,
    responses: { 200: RestoreResult },
  },
  "documents.status": {
    method: "POST", path: "/api/documents/{document_id}/status", group: "documents", access: "user", workspaceScope: "resource",
    summary: "Move status by the document table (invalid: 422 INVALID_TRANSITION)",
    params: DocumentIdParam,
    body: StatusInput,
    responses: { 200: Document },
  },
} satisfies Record<string, RouteSpec>);
