/**
 * The file-store integration (spec 02 "File-store integration", prefix /api/integrations/filestore): connect (PKCE
 * S256, offline access for a refresh token), callback (the account's e-mail, name and picture for status),
 * disconnect (hard), status; and the reads and writes behind the copilot's four file-store tools
 * (core/agent/tools/filestore.ts). Google Drive through the `FileStore` port (./drive.ts).
 */
import { requireMember } from "../../workspace";
import * as OAuth from "../oauth";
import { ProviderError, toAppError, tokenError } from "../errors";
import { logProviderFailure } from "../log";
import type { CallbackQuery, ConnectResult } from "../schema";
import { capBytes } from "../codehost/text";
import { googleDrive } from "./drive";
import type { FileInfo, FileStore } from "./port";
import type { FilestoreStatus } from "./schema";

export type { FileStore, FileInfo } from "./port";

/** Bytes of text a read returns at most (as the code host's reads), cut at a character boundary. */
export const MAX_READ_BYTES = 50_000;
/** A stored file larger than this is not downloaded to be read (`too_large`): a read returns MAX_READ_BYTES from its offset. */
export const MAX_DOWNLOAD_BYTES = 10 * 1024 * 1024;
export { MAX_WRITE_BYTES } from "./port";

/** Native Google documents and the text format each is exported to (Drive's export formats). */
export const EXPORT_FORMATS: Readonly<Record<string, string>> = {
  "application/vnd.google-apps.document": "text/plain",
  "application/vnd.google-apps.spreadsheet": "text/csv",
  "application/vnd.google-apps.presentation": "text/plain",
};

/** Stored files read as text: text/* and these. Anything else (PDF, images, archives) is `unsupported_type`. */
const TEXT_TYPES = new Set(["application/json", "application/xml", "application/javascript", "application/x-yaml", "application/yaml", "application/sql", "application/x-sh", "application/csv"]);
export const isText = (mime: string): boolean => mime.startsWith("text/") || TEXT_TYPES.has(mime) || mime.endsWith("+json") || mime.endsWith("+xml");

/**
 * Run `fn` with the workspace's file store. A refused grant marks the integration for reconnection and answers
 * FILESTORE_TOKEN_ERROR (424); other provider failures become their HTTP errors unless `raw` asks for the
 * ProviderError itself (the tools answer it as `{success: false, ...}`).
 * @throws AppError NO_ACTIVE_INTEGRATION (404), FILESTORE_TOKEN_ERROR (424), RATE_LIMITED (429), ...
 */
export async function withFileStore<T>(workspaceId: string, fn: (store: FileStore) => Promise<T>, opts: { raw?: boolean } = {}): Promise<T> {
  const grant = await OAuth.grantOf(workspaceId, "filestore");
  try {
    return await fn(googleDrive(grant.accessToken));
  } catch (err) {
    logProviderFailure("filestore", workspaceId, err);
    if (err instanceof ProviderError && err.failure === "auth_expired") {
      await OAuth.markNeedsReconnect(grant.integration);
      throw tokenError("filestore");
    }
    throw opts.raw ? err : toAppError("filestore", err);
  }
}

/** `POST /connect` (spec 02). @throws AppError SERVICE_UNAVAILABLE (503) naming GOOGLE_CLIENT_ID/_SECRET when unset */
export const connect = (userId: string, workspaceId: string): Promise<ConnectResult> => OAuth.connect(userId, "filestore", workspaceId);

/** `GET /callback`: exchange (PKCE), store the access and refresh tokens encrypted, read the account for status. */
export const callback = (query: CallbackQuery) =>
  OAuth.callback("filestore", query, async (token) => {
    const me = await googleDrive(token).about();
    return { account: { email: me.email, name: me.name, avatar_url: me.avatar_url } };
  });

/** `DELETE /disconnect`: the integration row is removed (hard, spec 02); the stored tokens go with it. */
export const disconnect = (userId: string, workspaceId: string) => OAuth.disconnect(userId, "filestore", workspaceId);

/** `GET /status` (spec 02 status fields of the file store). */
export async function status(userId: string, workspaceId: string): Promise<FilestoreStatus> {
  await requireMember(userId, workspaceId);
  const row = await OAuth.findIntegration(workspaceId, "filestore");
  const account = (row?.account ?? {}) as { email?: string | null; name?: string | null; avatar_url?: string | null };
  return {
    connected: Boolean(row?.is_active && row.token_ciphertext && !row.needs_reconnect),
    needs_reconnect: Boolean(row?.needs_reconnect),
    account_email: account.email ?? null,
    account_name: account.name ?? null,
    account_avatar_url: account.avatar_url ?? null,
    last_synced_at: row?.last_synced_at ?? null,
  };
}

/** What a read of a file answers: its text, capped, and how it was obtained. */
export interface FileText {
  file: FileInfo;
  content: string;
  /** Bytes of the whole text (exported or stored) before the cap. */
  total_bytes: number;
  truncated: boolean;
  /** The format a native document was exported to, or null for a stored file. */
  exported_as: string | null;
  /** Where `content` starts in the whole text (characters, UTF-16 code units). */
  offset: number;
}

/**
 * A file's text: a native Google document exported (Docs and Slides to text/plain, Sheets to text/csv), a stored text
 * file downloaded; from `offset` (characters, UTF-16 code units; default 0) at most MAX_READ_BYTES bytes, cut at a
 * character boundary (`truncated`: more follows).
 * @throws ProviderError validation (a folder), too_large (a stored file over 10 MiB, an export over Drive's limit);
 *   UnsupportedType (binary files and native types without a text export)
 */
export async function readText(store: FileStore, fileId: string, offset = 0): Promise<FileText> {
  const file = await store.metadata(fileId);
  if (file.is_folder) throw new ProviderError("validation", `${file.name} is a folder: list it instead`);
  const exportAs = EXPORT_FORMATS[file.mime_type];
  let raw: Buffer;
  if (exportAs) raw = await store.export(fileId, exportAs);
  else if (file.mime_type.startsWith("application/vnd.google-apps.") || !isText(file.mime_type)) throw unsupportedType(file);
  else if ((file.size ?? 0) > MAX_DOWNLOAD_BYTES) throw new ProviderError("too_large", `${file.name} is ${file.size} bytes; at most ${MAX_DOWNLOAD_BYTES} are read`);
  else raw = await store.download(fileId);
  // Google's text exports start with a byte-order mark; it is not content.
  const text = raw.toString("utf8").replace(/^\uFEFF/, "");
  // An offset inside a surrogate pair starts at the pair's next character, never half of one.
  let from = Math.min(Math.max(0, offset), text.length);
  if (from > 0 && from < text.length && /[\uDC00-\uDFFF]/.test(text[from]!) && /[\uD800-\uDBFF]/.test(text[from - 1]!)) from++;
  const capped = capBytes(text.slice(from), MAX_READ_BYTES);
  return { file, content: capped.text, total_bytes: Buffer.byteLength(text), truncated: capped.truncated, exported_as: exportAs ?? null, offset: from };
}

/** The tool error a file that has no text form answers with (`unsupported_type`). */
export class UnsupportedType extends Error {
  override name = "UnsupportedType";
}
const unsupportedType = (file: FileInfo) => new UnsupportedType(`${file.name} (${file.mime_type}) has no text form to read`);

/**
 * Write a file for an approved pending action (the copilot's filestore_write): with `fileId`, replace that file's
 * content (a replay writes the same content again: harmless); without it, create `name` (in `folderId`, else the top
 * folder) tagged with the action's id, after looking for a file so tagged, so a replay after a crash finds the file its
 * first run created instead of making a second one.
 * @throws ProviderError not_found, forbidden, ...; UnsupportedType (a folder, a native Google document or a stored
 *   binary file to overwrite)
 */
export async function writeFile(
  store: FileStore,
  input: { fileId?: string; name?: string; content: string; mimeType: string; folderId?: string },
  actionId: string,
): Promise<{ file: FileInfo; created: boolean }> {
  if (input.fileId) {
    const current = await store.metadata(input.fileId);
    // Uploading bytes over a folder or a native document would replace it with a stored file: refused, not guessed at.
    // Nor is a stored binary file (a PDF, an image) replaced by text: only a text file is overwritten.
    if (current.is_folder || current.mime_type.startsWith("application/vnd.google-apps.") || !isText(current.mime_type)) {
      throw new UnsupportedType(`${current.name} (${current.mime_type}) cannot be overwritten with ${input.mimeType} content: only a text file can`);
    }
    return { file: await store.update(input.fileId, { content: input.content, mimeType: input.mimeType, name: input.name }), created: false };
  }
  const found = await store.findByMarker(actionId);
  if (found) return { file: found, created: true };
  return { file: await store.create({ name: input.name!, content: input.content, mimeType: input.mimeType, folderId: input.folderId, marker: actionId }), created: true };
}
