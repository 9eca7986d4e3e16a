import { createHash, randomUUID } from "node:crypto";
import { AppError } from "../error";
import { deleteObject, getObject, putObject } from "../storage";

/*
 * Large document texts live beside their items (issue #10 point 3; docs/decisions.md "Large document content").
 *
 * Spec 01 allows 1,000,000 characters of content (up to ~3 MB of UTF-8), a DynamoDB item at most 400 KB. So a
 * document's or a revision's text larger than INLINE_CONTENT_MAX_BYTES goes to the uploads bucket, as a research
 * source's extracted text already does (core/research extraction.json), and the item keeps a pointer: key, size and
 * SHA-256. Smaller texts stay inline, so the usual PRD is still one read.
 *
 * Ownership and ordering: every object belongs to exactly one item (the document's current text, or one revision) and
 * its key carries a fresh UUID, so writers never overwrite each other. The object is written before the item that
 * points at it, and an object is deleted only after the item stopped pointing at it (a committed edit) or after the
 * items are gone (document delete). A crash or a refused write therefore leaves at worst an unreferenced object under
 * the document's prefix — removed with the document or the workspace — and never an item pointing at nothing.
 */

/** Largest text kept inside its item, in UTF-8 bytes (64 KiB). Larger texts are stored beside the item. */
export const INLINE_CONTENT_MAX_BYTES = 64 * 1024;

/** Pointer to a text stored beside its item. */
export interface ContentRef {
  /** Object key in the uploads bucket. */
  key: string;
  /** Size of the text in UTF-8 bytes. */
  bytes: number;
  /** Hex SHA-256 of the text's UTF-8 bytes (checked on every read). */
  sha256: string;
}

/** The content attributes of an item: the text itself, or "" and a pointer. */
export type StoredContent = { content: string; content_ref?: ContentRef };

/** Object-key prefix of everything a document stores in the bucket (under the workspace's, so workspace delete takes it). */
export const documentPrefix = (workspaceId: string, documentId: string) => `workspaces/${workspaceId}/documents/${documentId}/`;
/** A fresh key for a document's current text. */
export const documentContentKey = (workspaceId: string, documentId: string) => `${documentPrefix(workspaceId, documentId)}content/${randomUUID()}.md`;
/** The key of one revision's text (the revision id is fresh per attempt). */
export const revisionContentKey = (workspaceId: string, documentId: string, revisionId: string) =>
  `${documentPrefix(workspaceId, documentId)}revisions/${revisionId}.md`;

const sha256 = (buf: Buffer) => createHash("sha256").update(buf).digest("hex");

/**
 * The content attributes for `text`: inline when it fits, else the text is uploaded to `key` first and the pointer
 * returned. Call before writing the item (see the ordering above).
 */
export async function storeContent(key: string, text: string): Promise<StoredContent> {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= INLINE_CONTENT_MAX_BYTES) return { content: text };
  const body = Buffer.from(text, "utf8");
  await putObject(key, body, "text/markdown; charset=utf-8");
  return { content: "", content_ref: { key, bytes, sha256: sha256(body) } };
}

/**
 * Read a stored text back.
 * @returns the text, or null when the object does not exist (a concurrent edit may have replaced it)
 * @throws AppError INVARIANT_VIOLATION (500) when the object's size or hash differ from the pointer's.
 */
export async function readContent(ref: ContentRef): Promise<string | null> {
  const body = await getObject(ref.key);
  if (!body) return null;
  if (body.length !== ref.bytes || sha256(body) !== ref.sha256) {
    throw new AppError("INVARIANT_VIOLATION", `Stored text ${ref.key} does not match its pointer`);
  }
  return body.toString("utf8");
}

/** Whether an item's content equals `text`, without reading a stored text (size and hash decide). */
export function sameContent(item: StoredContent & { content_ref?: ContentRef | null }, text: string): boolean {
  if (!item.content_ref) return item.content === text;
  const body = Buffer.from(text, "utf8");
  return body.length === item.content_ref.bytes && sha256(body) === item.content_ref.sha256;
}

/**
 * Delete objects no item points at any more (after a committed replace, or a refused write). Best effort: a failure
 * leaves an unreferenced object under the document's prefix, removed with the document, so it must not fail a
 * request whose write already committed.
 */
export async function discardContent(...refs: (ContentRef | undefined | null)[]): Promise<void> {
  await Promise.all(refs.filter((r): r is ContentRef => !!r).map((r) => deleteObject(r.key).catch(() => undefined)));
}
