import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  Annotation,
  AnnotationList,
  AnnotationParam,
  Block,
  BlockList,
  BlockParam,
  CreateAnnotationInput,
  CreateBlockInput,
  DocumentIdParam,
  ExtractInput,
  ExtractResult,
  IntentInput,
  IntentResult,
  ReorderInput,
  UpdateBlockInput,
} from "../../../core/document/schema";

/** Blocks, block extraction, intent parsing and annotations (spec 01; DESIGN.md section 5 annotations). */
export const blocksRoutes = defineRoutes({
  "blocks.list": {
    method: "GET", path: "/api/documents/{document_id}/blocks", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "All blocks ordered by position",
    params: DocumentIdParam,
    responses: { 200: BlockList },
  },
  "blocks.create": {
    method: "POST", path: "/api/documents/{document_id}/blocks", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "Add a typed block (content validated per block_type)",
    params: DocumentIdParam,
    body: CreateBlockInput,
    responses: { 201: Block },
  },
  "blocks.reorder": {
    method: "PATCH", path: "/api/documents/{document_id}/blocks/reorder", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "Bulk reorder: block_ids is a permutation of the document's blocks",
    params: DocumentIdParam,
    body: ReorderInput,
    responses: { 200: BlockList },
  },
  "blocks.update": {
    method: "PATCH", path: "/api/documents/{document_id}/blocks/{block_id}", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "Change a block's title, content or position",
    params: BlockParam,
    body: UpdateBlockInput,
    responses: { 200: Block },
  },
  "blocks.delete": {
    method: "DELETE", path: "/api/documents/{document_id}/blocks/{block_id}", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "Delete a block",
    params: BlockParam,
    responses: { 204: null },
  },
  "blocks.extract": {
    method: "POST", path: "/api/blocks/extract", group: "blocks", access: "user", workspaceScope: "body",
    summary: "Replace a document's blocks with typed blocks extracted from its Markdown sections",
    body: ExtractInput,
    responses: { 200: ExtractResult },
  },
  "blocks.intent": {
    method: "POST", path: "/api/intent/parse", group: "blocks", access: "user",
    summary: "Decompose free text into a block skeleton (not stored)",
    body: IntentInput,
    responses: { 200: IntentResult },
  },
  "blocks.listAnnotations": {
    method: "GET", path: "/api/documents/{document_id}/blocks/{block_id}/annotations", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "Annotations on a block, oldest first",
    params: BlockParam,
    responses: { 200: AnnotationList },
  },
  "blocks.createAnnotation": {
    method: "POST", path: "/api/documents/{document_id}/blocks/{block_id}/annotations", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "Annotate a block (comment, question, suggestion, approval)",
    params: BlockParam,
    body: CreateAnnotationInput,
    responses: { 201: Annotation },
  },
  "blocks.deleteAnnotation": {
    method: "DELETE", path: "/api/documents/{document_id}/blocks/{block_id}/annotations/{annotation_id}", group: "blocks", access: "user", workspaceScope: "resource",
    summary: "Delete an annotation (its author, or an owner or admin)",
    params: AnnotationParam,
    responses: { 204: null },
  },
} satisfies Record<string, RouteSpec>);
