/**
 * The `FileStore` port (DESIGN.md 6.4): what the file-store endpoints and the copilot's four file-store tools need
 * from a cloud file store (Google Drive). Failures are `ProviderError`s (core/integration/errors.ts).
 */

/**
 * Bytes of content a write sends at most, measured as JSON (the string with its quotes and escapes), here beside the
 * port so the tools' input schema needs no more of it. A write is held as a pending action whose whole tool input is at
 * most MAX_JSON_BYTES (64 KiB, core/pending-action/schema.ts) of JSON: this leaves room for the name, ids and type.
 */
export const MAX_WRITE_BYTES = 60_000;

/** A file or folder as the tools show it. */
export interface FileInfo {
  id: string;
  name: string;
  mime_type: string;
  is_folder: boolean;
  /** Bytes of stored content; null for the provider's native documents, which have none until exported. */
  size: number | null;
  modified_time: string | null;
  web_view_link: string | null;
  parents: string[];
}

export interface FileStoreAccount {
  email: string | null;
  name: string | null;
  avatar_url: string | null;
}

export interface FileStore {
  /** The connected account (status shows it). */
  about(): Promise<FileStoreAccount>;
  /** Files (not in the trash) whose name or content matches `query`, most relevant first (Drive sorts no full-text search otherwise). */
  search(query: string, limit: number): Promise<{ files: FileInfo[]; hasMore: boolean }>;
  /** The children of a folder ("root": the account's top folder), folders first, then by name. */
  listFolder(folderId: string, limit: number, pageToken?: string): Promise<{ files: FileInfo[]; nextPageToken: string | null }>;
  metadata(fileId: string): Promise<FileInfo>;
  /** The stored bytes of a file. */
  download(fileId: string): Promise<Buffer>;
  /** A native document converted to `mimeType` (text/plain, text/csv). */
  export(fileId: string, mimeType: string): Promise<Buffer>;
  /** The file (not in the trash) tagged with `marker` at its creation, or null: how a replayed write finds its first run's file. */
  findByMarker(marker: string): Promise<FileInfo | null>;
  create(input: { name: string; content: string; mimeType: string; folderId?: string; marker: string }): Promise<FileInfo>;
  /** Replace a file's content (and its name when given). */
  update(fileId: string, input: { content: string; mimeType: string; name?: string }): Promise<FileInfo>;
}
