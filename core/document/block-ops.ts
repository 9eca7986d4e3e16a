import { randomUUID } from "node:crypto";
import type { EntityItem } from "electrodb";
import { AppError, Errors, type FieldError } from "../error";
import { createWriteTransaction } from "electrodb";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { conflictPause } from "../db/transact";
import { dynamoClient } from "../db/client";
import { UpdateCommand } from "@aws-sdk/lib-dynamodb";
import { fitResponse } from "../response-size";
import { writeAll } from "../db/bulk";
import { partitionOf, requireMember, requireResourceMember } from "../workspace";
import { deleteKeys, partitionKeys } from "../db/partition";
import { emptyBlockContent, validateBlockContent, DEFAULT_TITLES, MAX_BLOCKS_PER_DOCUMENT, type BlockContent, type BlockDraft, type BlockType } from "./blocks";
import { reload, requireDocument, withContent, type DocumentItem } from "./index";
import { asWrite, commitWrites, tagOf, type AgentWrite, type WriteItem } from "../db/agent-write";
import type { AnnotationEntity, BlockEntity } from "./document.entity";
import type { Block as BlockView, CreateBlockInput, ListAnnotationsQuery, ListBlocksQuery, UpdateBlockInput } from "./schema";

export type BlockItem = EntityItem<BlockEntity>;
type AnnotationItem = EntityItem<AnnotationEntity>;

export const blockView = (b: BlockItem): BlockView => ({
  id: b.id,
  document_id: b.document_id,
  block_type: b.block_type,
  title: b.title ?? "",
  content: (b.content as Record<string, unknown>) ?? {},
  position: b.position,
  created_at: b.created_at,
  updated_at: b.updated_at,
});

/** The document's blocks ordered by position (strongly consistent). */
export async function blocksOf(doc: Pick<DocumentItem, "workspace_id" | "id">): Promise<BlockItem[]> {
  const { data } = await db()
    .entities.block.query.byDocument({ workspace_id: doc.workspace_id, document_id: doc.id })
    .go({ pages: "all", consistent: true });
  return data.sort((a, b) => a.position - b.position || a.created_at.localeCompare(b.created_at));
}

/**
 * Write new positions for the blocks whose position changed (transactions of up to 100 items), each conditioned on
 * the position read: a concurrent insert, delete or reorder makes this one fail whole instead of leaving an order
 * nobody asked for, with two blocks at one position.
 * @throws AppError CONFLICT (409) when the blocks changed meanwhile: an id of `order` is no longer among `blocks`
 *   (replaced by an extraction, deleted), or a patched block is gone or moved when the transaction runs.
 */
async function writePositions(blocks: BlockItem[], order: string[]): Promise<void> {
  const byId = new Map(blocks.map((b) => [b.id, b]));
  if (order.some((id) => !byId.has(id))) throw new AppError("CONFLICT", "Blocks changed meanwhile; reload and retry");
  const changes = order
    .map((id, position) => ({ block: byId.get(id)!, position }))
    .filter(({ block, position }) => block.position !== position);
  for (let i = 0; i < changes.length; i += 100) {
    const chunk = changes.slice(i, i + 100);
    const result = await createWriteTransaction(db().pick("block"), ({ block }) =>
      chunk.map(({ block: b, position }) =>
        block
          .patch({ workspace_id: b.workspace_id, document_id: b.document_id, id: b.id })
          .set({ position })
          .where((attr, op) => op.eq(attr.position, b.position))
          .commit(),
      ),
    ).go();
    if (result.canceled) throw new AppError("CONFLICT", "Blocks changed meanwhile; reload and retry");
  }
}

/**
 * Every block of the document ordered by position, for in-process callers (the copilot's tools look blocks up in
 * it). Not an HTTP answer: a document's blocks may weigh more than one Lambda answer holds (see listBlocksPage).
 */
export async function listBlocks(userId: string, documentId: string) {
  const doc = await requireDocument(userId, documentId);
  const blocks = (await blocksOf(doc)).map(blockView);
  return { blocks, total: blocks.length };
}

/**
 * `GET /api/documents/{id}/blocks`: the blocks ordered by position, every one from `offset` by default (spec 01), at
 * most `limit`. A page ends early, after at least one block, before LIST_RESPONSE_BYTES (`fitResponse`, as the other
 * lists do): a block's content may hold 256 KiB, so about 24 of them pass Lambda's 6 MB answer. `total` counts every
 * block; the next page starts at `offset` plus the blocks given.
 */
export async function listBlocksPage(userId: string, documentId: string, q: ListBlocksQuery = { offset: 0 }) {
  const doc = await requireDocument(userId, documentId);
  const all = await blocksOf(doc);
  const page = all.slice(q.offset, q.limit === undefined ? undefined : q.offset + q.limit);
  return { blocks: fitResponse(page.map(blockView)), total: all.length };
}

async function requireBlockOf(doc: DocumentItem, blockId: string): Promise<BlockItem> {
  const { data } = await db().entities.block.get({ workspace_id: doc.workspace_id, document_id: doc.id, id: blockId }).go({ consistent: true });
  if (!data) throw Errors.notFound("Block");
  return data;
}

/**
 * Resolve a block fetched by id alone (block actions) with its document, checking membership.
 * @throws AppError NOT_FOUND, FORBIDDEN.
 */
export async function requireBlock(userId: string, blockId: string): Promise<{ doc: DocumentItem; block: BlockItem }> {
  const { data } = await db().entities.block.query.byId({ id: blockId }).go({ limit: 1 });
  const found = data[0];
  if (!found) throw Errors.notFound("Block");
  // The block names its workspace and document: one membership check, then direct reads.
  await requireResourceMember(userId, found.workspace_id, "Block");
  const doc = await reload(found.workspace_id, found.document_id);
  return { doc, block: await requireBlockOf(doc, blockId) };
}

/**
 * A request's block `content` checked against the contract of `type`, with defaults applied. Its 422 names
 * `["body", "content", ...]`, as the body schema's do (POST checks the contract in its schema already; a PATCH's
 * type is the stored block's, so it is checked here).
 */
function requestContent<K extends BlockType>(type: K, content: unknown): BlockContent<K> {
  try {
    return validateBlockContent(type, content);
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== "VALIDATION_ERROR" || !Array.isArray(err.extra.errors)) throw err;
    const errors = (err.extra.errors as FieldError[]).map((e) => ({ ...e, loc: ["body", ...e.loc] }));
    throw new AppError("VALIDATION_ERROR", err.message, { ...err.extra, errors });
  }
}

/** 422 VALIDATION_ERROR (`too_many_blocks` at `loc`) when a document would hold more than MAX_BLOCKS_PER_DOCUMENT blocks. */
function assertBlockCount(count: number, loc: string[] = ["body", "document_id"]): void {
  if (count <= MAX_BLOCKS_PER_DOCUMENT) return;
  throw new AppError("VALIDATION_ERROR", `A document holds at most ${MAX_BLOCKS_PER_DOCUMENT} blocks`, {
    errors: [{ loc, msg: `a document holds at most ${MAX_BLOCKS_PER_DOCUMENT} blocks (this would make ${count})`, type: "too_many_blocks" }],
  });
}

/** How many times a block create reads the blocks again after losing its slot to a concurrent create. */
const CREATE_TRIES = 5;

/** The table and key of an item, as ElectroDB addresses it (a get's params). */
function itemKey(chain: { params(): unknown }): { TableName: string; Key: Record<string, string> } {
  const { TableName, Key } = chain.params() as { TableName: string; Key: Record<string, string> };
  return { TableName, Key };
}

/**
 * The document item's write in a block create's transaction: the document exists and no DELETE has started removing it
 * (`deleting_at`, set before that DELETE reads the child keys it deletes), so no block is written after the delete
 * listed the children; and its `blocks_rev` moves from the value read with the blocks to the next (a raw update:
 * ElectroDB's would move `updated_at` too).
 */
function documentGuard(doc: DocumentItem): WriteItem {
  const { TableName, Key } = itemKey(db().entities.document.get({ workspace_id: doc.workspace_id, id: doc.id }));
  const rev = doc.blocks_rev ?? 0;
  return {
    Update: {
      TableName,
      Key,
      UpdateExpression: "SET #rev = :next",
      // Not while an extraction replaces the blocks (`extracting_until` not yet past): it moved `blocks_rev` when it
      // set the mark, and moves it again when it clears it, so a create that read the blocks before is refused too.
      ConditionExpression:
        `attribute_exists(#key) AND attribute_not_exists(#deleting) AND ${rev ? "#rev = :rev" : "attribute_not_exists(#rev)"}` +
        " AND (attribute_not_exists(#extracting) OR #extracting < :now)",
      ExpressionAttributeNames: { "#key": Object.keys(Key)[0]!, "#deleting": "deleting_at", "#rev": "blocks_rev", "#extracting": "extracting_until" },
      ExpressionAttributeValues: { ":next": rev + 1, ":now": Date.now(), ...(rev ? { ":rev": rev } : {}) },
    },
  };
}

/**
 * Set or clear an extraction's mark on the document (`extracting_until`), moving `blocks_rev` in the same write
 * (raw, leaving `updated_at` as it is). Setting is conditioned on the document existing, not being deleted, its
 * `blocks_rev` being the value read and no other mark being live; clearing, on the mark being this one.
 * @returns false when the condition refused the write
 */
async function markExtraction(doc: DocumentItem, mark: { set: number } | { clear: number }): Promise<boolean> {
  const { TableName, Key } = itemKey(db().entities.document.get({ workspace_id: doc.workspace_id, id: doc.id }));
  const rev = doc.blocks_rev ?? 0;
  const names = { "#key": Object.keys(Key)[0]!, "#deleting": "deleting_at", "#rev": "blocks_rev", "#extracting": "extracting_until" };
  const command =
    "set" in mark
      ? new UpdateCommand({
          TableName,
          Key,
          UpdateExpression: "SET #rev = :next, #extracting = :until",
          ConditionExpression:
            `attribute_exists(#key) AND attribute_not_exists(#deleting) AND ${rev ? "#rev = :rev" : "attribute_not_exists(#rev)"}` +
            " AND (attribute_not_exists(#extracting) OR #extracting < :now)",
          ExpressionAttributeNames: names,
          ExpressionAttributeValues: { ":next": rev + 1, ":until": mark.set, ":now": Date.now(), ...(rev ? { ":rev": rev } : {}) },
        })
      : new UpdateCommand({
          TableName,
          Key,
          UpdateExpression: "SET #rev = if_not_exists(#rev, :zero) + :one REMOVE #extracting",
          ConditionExpression: "#extracting = :until",
          ExpressionAttributeNames: { "#rev": "blocks_rev", "#extracting": "extracting_until" },
          ExpressionAttributeValues: { ":zero": 0, ":one": 1, ":until": mark.clear },
        });
  try {
    await dynamoClient().send(command);
    return true;
  } catch (err) {
    if (isConditionalFailure(err)) return false;
    throw err;
  }
}

/** `doc` read again for a child create: NOT_FOUND when it is gone or being deleted. */
async function liveDocument(doc: DocumentItem): Promise<DocumentItem> {
  const fresh = await reload(doc.workspace_id, doc.id);
  if (fresh.deleting_at) throw Errors.notFound("Document");
  return fresh;
}

/**
 * `POST /api/documents/{id}/blocks`: content is validated against the block type's schema (an empty skeleton when
 * omitted); inserting at a position shifts the blocks at and after it.
 *
 * The block is written after the last block read, in one transaction with the document's `blocks_rev` moving from
 * the value read with the blocks (and with the document existing, not being deleted): of two creates at once one
 * commits and the other reads the blocks again (up to CREATE_TRIES times, then 409), so two appends, or an append
 * and an insert, never take one position. An insert then moves the block into place with the others (`writePositions`).
 * @throws AppError VALIDATION_ERROR (422) for content that does not fit the type, or (`too_many_blocks`) when the
 *   document holds MAX_BLOCKS_PER_DOCUMENT blocks already; NOT_FOUND (404) when the document is deleted meanwhile;
 *   CONFLICT (409) when the blocks changed meanwhile, also while an extraction replaces them.
 */
export async function createBlock(userId: string, documentId: string, input: CreateBlockInput): Promise<BlockView> {
  let doc = await requireDocument(userId, documentId);
  if (doc.deleting_at) throw Errors.notFound("Document");
  const content = requestContent(input.block_type, input.content ?? emptyBlockContent(input.block_type));
  const id = randomUUID();
  for (let attempt = 1; ; attempt++) {
    const existing = await blocksOf(doc);
    assertBlockCount(existing.length + 1, ["body"]);
    // After the last block: a gap left by a delete whose shift lost must not put two blocks at one position.
    const slot = existing.length ? Math.max(existing.length, existing[existing.length - 1]!.position + 1) : 0;
    const create = db().entities.block.create({
      id,
      workspace_id: doc.workspace_id,
      document_id: doc.id,
      block_type: input.block_type,
      title: input.title ?? DEFAULT_TITLES[input.block_type],
      content,
      position: slot, // appended first, then moved into place with the others
    });
    const result = await createWriteTransaction(db().pick("document", "block"), () => [documentGuard(doc), asWrite(create)] as never).go();
    if (!result.canceled) {
      const position = Math.min(input.position ?? existing.length, existing.length);
      // writePositions patches by the full key, so the new block needs its workspace and document ids too.
      const all = [...existing, { id, workspace_id: doc.workspace_id, document_id: doc.id, position: slot } as BlockItem];
      const order = existing.map((b) => b.id);
      order.splice(position, 0, id);
      try {
        await writePositions(all, order);
      } catch (err) {
        // The blocks changed meanwhile: the answer is 409, so the new block must not stay (at the end) either.
        await db().entities.block.delete({ workspace_id: doc.workspace_id, document_id: doc.id, id }).go();
        throw err;
      }
      return blockView(await requireBlockOf(doc, id));
    }
    // Another create took the slot (blocks_rev moved), the document is gone or being deleted, or the transaction
    // collided with a concurrent one: read again (404 when the document is gone).
    doc = await liveDocument(doc);
    if (attempt >= CREATE_TRIES) throw new AppError("CONFLICT", "Blocks changed meanwhile; reload and retry");
    await conflictPause(attempt);
  }
}

/** What a block write hands its settlement (AgentWrite.settle): the block as written. */
export interface BlockWritten {
  id: string;
  block_type: BlockItem["block_type"];
  title: string;
}

/**
 * `PATCH /api/documents/{id}/blocks/{block_id}`: title, content (validated for the block's type) or position. For an
 * approved pending action (`opts`, DESIGN.md 6.2) the title and content change carries the action's id in the same
 * write, and commits together with `opts.settle` (a position change is not among what the agent's tool may do).
 * A position change is written first, then the title and content: a position refused with 409 (the blocks changed
 * meanwhile) leaves the block as it was, not half-changed. The title and content write is conditioned on the block
 * existing (ElectroDB's patch), so a block deleted meanwhile answers 404.
 * @throws AppError NOT_FOUND (404) for the document or block, also when the block is deleted meanwhile;
 *   VALIDATION_ERROR (422) for content that does not fit the block's type; CONFLICT (409) when blocks changed
 *   meanwhile; SettlementRefused when the executor lost the action.
 */
export async function updateBlock(userId: string, documentId: string, blockId: string, input: UpdateBlockInput, opts: AgentWrite<BlockWritten> = {}): Promise<BlockView> {
  const doc = await requireDocument(userId, documentId);
  const block = await requireBlockOf(doc, blockId);
  const content = input.content !== undefined ? requestContent(block.block_type as BlockType, input.content) : undefined;
  if (input.position !== undefined && input.position !== block.position) {
    const all = await blocksOf(doc);
    if (!all.some((b) => b.id === blockId)) throw Errors.notFound("Block");
    const order = all.map((b) => b.id).filter((id) => id !== blockId);
    order.splice(Math.min(input.position, order.length), 0, blockId);
    try {
      await writePositions(all, order);
    } catch (err) {
      // The block itself deleted meanwhile is a 404, as for the title and content write below.
      if (err instanceof AppError && err.code === "CONFLICT") await requireBlockOf(doc, blockId);
      throw err;
    }
  }
  if (input.title !== undefined || content !== undefined) {
    const write = db()
      .entities.block.patch({ workspace_id: doc.workspace_id, document_id: doc.id, id: blockId })
      .set({ ...(input.title !== undefined ? { title: input.title } : {}), ...(content !== undefined ? { content } : {}), ...tagOf(opts) });
    if (opts.settle) {
      const settlement = opts.settle({ id: block.id, block_type: block.block_type, title: input.title ?? block.title ?? "" });
      // The patch's only condition: the block still exists.
      if (await commitWrites(["block"], [asWrite(write)], settlement)) throw Errors.notFound("Block");
    } else {
      try {
        await write.go();
      } catch (err) {
        // The patch's only condition: the block still exists (deleted since it was read).
        if (isConditionalFailure(err)) throw Errors.notFound("Block");
        throw err;
      }
    }
  }
  return blockView(await requireBlockOf(doc, blockId));
}

/** `DELETE /api/documents/{id}/blocks/{block_id}`: the block and its annotations; later blocks move up. */
export async function deleteBlock(userId: string, documentId: string, blockId: string): Promise<void> {
  const doc = await requireDocument(userId, documentId);
  await requireBlockOf(doc, blockId);
  const deleteNotes = async () => {
    const notes = await annotationsOf(doc, blockId);
    await writeAll(
      notes.map((n) => ({ workspace_id: n.workspace_id, document_id: n.document_id, block_id: n.block_id, id: n.id })),
      (keys) => db().entities.annotation.delete(keys).go(),
      (k: { id: string }) => k.id,
    );
  };
  // The annotations before the block, so a DELETE that dies part-way leaves a block a retry still finds; and again
  // after it (strongly consistent): an annotation create is conditioned on its block existing, so one that committed
  // between the first pass and the block's delete is read then, and none commits after.
  await deleteNotes();
  await db().entities.block.delete({ workspace_id: doc.workspace_id, document_id: doc.id, id: blockId }).go();
  await deleteNotes();
  const rest = (await blocksOf(doc)).filter((b) => b.id !== blockId);
  try {
    await writePositions(rest, rest.map((b) => b.id));
  } catch (err) {
    // The block is deleted; a concurrent change rewrote the others' positions meanwhile (a gap is harmless: blocks
    // are listed by position). The delete is what was asked: it answers 204, not 409.
    if (!(err instanceof AppError) || err.code !== "CONFLICT") throw err;
  }
}

/**
 * `PATCH /api/documents/{id}/blocks/reorder`: `block_ids` must be a permutation of the document's blocks;
 * positions become 0..n-1 in that order.
 * @throws AppError VALIDATION_ERROR naming missing, unknown or repeated ids.
 */
export async function reorderBlocks(userId: string, documentId: string, blockIds: string[]) {
  const doc = await requireDocument(userId, documentId);
  const all = await blocksOf(doc);
  const known = new Set(all.map((b) => b.id));
  const seen = new Set<string>();
  const repeated = blockIds.filter((id) => (seen.has(id) ? true : (seen.add(id), false)));
  const unknown = blockIds.filter((id) => !known.has(id));
  const missing = all.map((b) => b.id).filter((id) => !seen.has(id));
  if (repeated.length || unknown.length || missing.length) {
    const errors = [
      ...repeated.map((id) => ({ loc: ["body", "block_ids"], msg: `block ${id} appears more than once`, type: "duplicate" })),
      ...unknown.map((id) => ({ loc: ["body", "block_ids"], msg: `block ${id} is not in this document`, type: "unknown_id" })),
      ...missing.map((id) => ({ loc: ["body", "block_ids"], msg: `block ${id} is missing`, type: "missing" })),
    ];
    throw new AppError("VALIDATION_ERROR", "block_ids must list every block of the document exactly once", { errors });
  }
  await writePositions(all, blockIds);
  // The answer is the listing's first page (`listBlocksPage`): every block up to 5 MB of JSON, `total` counting all.
  const blocks = (await blocksOf(doc)).map(blockView);
  return { blocks: fitResponse(blocks), total: blocks.length };
}

/**
 * `POST /api/blocks/extract`: replace the document's blocks with typed blocks extracted from the Markdown sections
 * of its content (content is the source of truth; see docs/decisions.md).
 * @throws AppError CONFLICT (409) while another extraction of the document runs, or when block creates kept moving
 *   its `blocks_rev`; VALIDATION_ERROR (422 `too_many_blocks`, nothing deleted) when the content would make more than
 *   MAX_BLOCKS_PER_DOCUMENT blocks.
 */
export async function extractFromContent(userId: string, workspaceId: string, documentId: string) {
  // The route names its workspace in the body: a non-member gets that workspace's 403 (spec 01 Authorization 4).
  await requireMember(userId, workspaceId);
  const found = await requireDocument(userId, documentId);
  if (found.workspace_id !== workspaceId) throw Errors.notFound("Document");
  // One extraction of a document at a time: two at once (a double click, a client's retry) each read the old blocks,
  // deleted them and put their own, and the document ended with every block twice. The second is refused (409).
  // The lock (core/agent) loads with this route only.
  const { tryLock } = await import("../agent");
  const release = await tryLock(`ws#${found.workspace_id}`, `extract#${found.id}`, EXTRACT_LOCK_SECONDS);
  if (!release) throw new AppError("CONFLICT", "Blocks are being extracted from this document already; reload when it is done");
  try {
    return await extractLocked(found);
  } finally {
    await release();
  }
}

/** The longest an extraction holds its document's lock, s (a crash frees it then; an extraction takes well under 1 s). */
const EXTRACT_LOCK_SECONDS = 60;

/**
 * `extractFromContent` once it holds the document's extraction lock. Before reading the old blocks it moves the
 * document's `blocks_rev` and marks it `extracting_until` (one conditional write): a block create that read the
 * blocks before is refused by the moved counter, and one after by the mark (`documentGuard`; they read again and
 * answer 409 if the extraction still runs), so no create lands between the deletes and the puts, at a position the
 * new blocks take, nor survives the replace. When the puts are done the mark is cleared and the counter moved again;
 * a crashed extraction's mark lapses after EXTRACT_LOCK_SECONDS, as its lock does.
 */
async function extractLocked(found: DocumentItem) {
  let { doc, content } = await withContent(found);
  // The Markdown parser loads with the two routes that parse, not with every block route (bench/cold.ts).
  const { extractBlocks } = await import("./markdown");
  let drafts = extractBlocks(content);
  const until = Date.now() + EXTRACT_LOCK_SECONDS * 1000;
  for (let attempt = 1; ; attempt++) {
    assertBlockCount(drafts.length);
    if (await markExtraction(doc, { set: until })) break;
    // A create moved `blocks_rev` meanwhile, or the document is gone or being deleted (404): read it again.
    if (attempt >= CREATE_TRIES) throw new AppError("CONFLICT", "Blocks changed meanwhile; reload and retry");
    await conflictPause(attempt);
    ({ doc, content } = await withContent(await liveDocument(doc)));
    drafts = extractBlocks(content);
  }
  try {
    return await replaceBlocks(doc, drafts);
  } finally {
    await markExtraction(doc, { clear: until });
  }
}

/** `extractLocked`'s replace, once the document is marked. */
async function replaceBlocks(doc: DocumentItem, drafts: BlockDraft[]) {
  const old = await blocksOf(doc);
  if (old.length) {
    await writeAll(
      old.map((b) => ({ workspace_id: b.workspace_id, document_id: b.document_id, id: b.id })),
      (keys) => db().entities.block.delete(keys).go(),
      (k: { id: string }) => k.id,
    );
    // The replaced blocks' annotations go with them (as on DELETE of a block), rather than being left orphaned.
    await deleteKeys(await partitionKeys(partitionOf(doc.workspace_id), `document#${doc.id}#note#`));
  }
  const written = drafts.map((d, i) => ({
    id: randomUUID(),
    workspace_id: doc.workspace_id,
    document_id: doc.id,
    block_type: d.block_type,
    title: d.title ?? DEFAULT_TITLES[d.block_type],
    content: d.content as Record<string, unknown>,
    position: i,
  }));
  await writeAll(written, (items) => db().entities.block.put(items).go(), (k: { id: string }) => k.id);
  // A batch put takes no condition: a DELETE of the document that began meanwhile (its mark, `deleting_at`) may have
  // listed the children before these were written, so they go again here rather than outlive it.
  const { data: now } = await db().entities.document.get({ workspace_id: doc.workspace_id, id: doc.id }).go({ consistent: true });
  if (!now || now.deleting_at) {
    await writeAll(written.map(({ workspace_id, document_id, id }) => ({ workspace_id, document_id, id })), (keys) => db().entities.block.delete(keys).go(), (k: { id: string }) => k.id);
    throw Errors.notFound("Document");
  }
  const blocks = (await blocksOf(doc)).map(blockView);
  // The first page of the listing (`listBlocksPage`): every block up to 5 MB of JSON; `count` counts them all.
  return { document_id: doc.id, blocks: fitResponse(blocks), count: blocks.length, replaced: old.length };
}

/** `POST /api/intent/parse`: a block skeleton decomposed from free text (nothing is stored). */
export async function intent(userId: string, rawInput: string, workspaceId?: string) {
  if (workspaceId) await requireMember(userId, workspaceId);
  const { parseIntent } = await import("./markdown");
  return {
    blocks: parseIntent(rawInput).map((d, i) => ({
      block_type: d.block_type,
      title: d.title ?? DEFAULT_TITLES[d.block_type],
      content: d.content as Record<string, unknown>,
      position: i,
    })),
  };
}

/** Up to 8 blocks nearest by position to `block` (spec 01: block actions use up to 8 surrounding blocks). */
export async function contextFor(doc: DocumentItem, block: BlockItem): Promise<BlockItem[]> {
  const others = (await blocksOf(doc)).filter((b) => b.id !== block.id);
  return others
    .sort((a, b) => Math.abs(a.position - block.position) - Math.abs(b.position - block.position) || a.position - b.position)
    .slice(0, 8)
    .sort((a, b) => a.position - b.position);
}

// ---- annotations (DESIGN.md section 5) ----

async function annotationsOf(doc: DocumentItem, blockId: string): Promise<AnnotationItem[]> {
  const { data } = await db()
    .entities.annotation.query.byBlock({ workspace_id: doc.workspace_id, document_id: doc.id, block_id: blockId })
    .go({ pages: "all", consistent: true });
  return data.sort((a, b) => a.created_at.localeCompare(b.created_at));
}

const annotationView = (a: AnnotationItem) => ({
  id: a.id,
  block_id: a.block_id,
  document_id: a.document_id,
  body: a.body,
  kind: a.kind,
  author_id: a.author_id,
  created_at: a.created_at,
});

/**
 * `GET .../blocks/{block_id}/annotations`: oldest first, every one from `offset` by default, at most `limit`. A page
 * ends early, after at least one annotation, before LIST_RESPONSE_BYTES (`fitResponse`, as the blocks list does): an
 * annotation's body may hold 5,000 characters, each control character 12 bytes of the Lambda answer, so about 175 of
 * them passed its 6 MB. `total` counts every annotation; the next page starts at `offset` plus the ones given.
 */
export async function listAnnotations(userId: string, documentId: string, blockId: string, q: ListAnnotationsQuery = { offset: 0 }) {
  const doc = await requireDocument(userId, documentId);
  await requireBlockOf(doc, blockId);
  const all = await annotationsOf(doc, blockId);
  const page = all.slice(q.offset, q.limit === undefined ? undefined : q.offset + q.limit);
  return { annotations: fitResponse(page.map(annotationView)), total: all.length };
}

/**
 * `POST .../blocks/{block_id}/annotations`: written in one transaction with checks that the document exists and is
 * not being deleted (`documentGuard`) and that the block exists, so a document or block deleted meanwhile answers 404
 * instead of leaving an annotation nobody deletes.
 * @throws AppError NOT_FOUND (404) for the document or block, also when deleted meanwhile; CONFLICT (409) when
 *   concurrent writes of the document kept colliding with it (CREATE_TRIES times).
 */
export async function createAnnotation(userId: string, documentId: string, blockId: string, input: { body: string; kind: AnnotationItem["kind"] }) {
  let doc = await requireDocument(userId, documentId);
  if (doc.deleting_at) throw Errors.notFound("Document");
  await requireBlockOf(doc, blockId);
  const id = randomUUID();
  for (let attempt = 1; ; attempt++) {
    const { workspace_id, id: document_id } = doc;
    // The document exists and is not being deleted (`deleting_at`), and so does the block: ElectroDB's condition checks.
    const result = await createWriteTransaction(db().pick("document", "block", "annotation"), ({ document, block, annotation }) => [
      document.check({ workspace_id, id: document_id }).where((a, op) => `${op.exists(a.id)} AND ${op.notExists(a.deleting_at)}`).commit(),
      block.check({ workspace_id, document_id, id: blockId }).where((a, op) => op.exists(a.id)).commit(),
      annotation.create({ id, workspace_id, document_id, block_id: blockId, body: input.body, kind: input.kind, author_id: userId }).commit(),
    ]).go();
    if (!result.canceled) break;
    // The document or the block is gone (404), or the transaction collided with a concurrent one: try again.
    doc = await liveDocument(doc);
    await requireBlockOf(doc, blockId);
    if (attempt >= CREATE_TRIES) throw new AppError("CONFLICT", "The document changed meanwhile; retry");
    await conflictPause(attempt);
  }
  const { data } = await db().entities.annotation.get({ workspace_id: doc.workspace_id, document_id: doc.id, block_id: blockId, id }).go({ consistent: true });
  if (!data) throw Errors.notFound("Annotation");
  return annotationView(data);
}

/** Delete an annotation: its author, or a workspace owner or admin. */
export async function deleteAnnotation(userId: string, documentId: string, blockId: string, annotationId: string): Promise<void> {
  const doc = await requireDocument(userId, documentId);
  const key = { workspace_id: doc.workspace_id, document_id: doc.id, block_id: blockId, id: annotationId };
  const { data } = await db().entities.annotation.get(key).go({ consistent: true });
  if (!data) throw Errors.notFound("Annotation");
  if (data.author_id !== userId) await requireMember(userId, doc.workspace_id, ["owner", "admin"]);
  await db().entities.annotation.delete(key).go();
}
