import { httpGroup } from "../lib/http";
import { blocksRoutes } from "./routes/blocks";
import { created, noContent, ok } from "../lib/route";
import * as Blocks from "../../core/document/block-ops";

/** Typed blocks, extraction, intent parsing, annotations (spec 01 Documents and blocks). */
export const handler = httpGroup(blocksRoutes, {
  "blocks.list": async ({ user, params, query }) => ok(await Blocks.listBlocksPage(user.id, params.document_id, query)),
  "blocks.create": async ({ user, params, body }) => created(await Blocks.createBlock(user.id, params.document_id, body)),
  "blocks.reorder": async ({ user, params, body }) => ok(await Blocks.reorderBlocks(user.id, params.document_id, body.block_ids)),
  "blocks.update": async ({ user, params, body }) =>
    ok(await Blocks.updateBlock(user.id, params.document_id, params.block_id, body)),
  "blocks.delete": async ({ user, params }) => {
    await Blocks.deleteBlock(user.id, params.document_id, params.block_id);
    return noContent();
  },
  "blocks.extract": async ({ user, body }) => ok(await Blocks.extractFromContent(user.id, body.workspace_id, body.document_id)),
  "blocks.intent": async ({ user, body }) => ok(await Blocks.intent(user.id, body.raw_input, body.workspace_id)),
  "blocks.listAnnotations": async ({ user, params, query }) =>
    ok(await Blocks.listAnnotations(user.id, params.document_id, params.block_id, query)),
  "blocks.createAnnotation": async ({ user, params, body }) =>
    created(await Blocks.createAnnotation(user.id, params.document_id, params.block_id, body)),
  "blocks.deleteAnnotation": async ({ user, params }) => {
    await Blocks.deleteAnnotation(user.id, params.document_id, params.block_id, params.annotation_id);
    return noContent();
  },
});
