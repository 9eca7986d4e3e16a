/**
 * The copilot's file-store tools (spec 02 "File-store integration": filestore_search, filestore_read,
 * filestore_write, filestore_list_folder), over the `FileStore` port (Google Drive). Search, read and list run at
 * once; write is gated through a pending action and replay-safe (core/integration/filestore `writeFile`). A failure is
 * the spec's `{success: false, error, error_code}`, never a thrown error the model cannot read.
 */
import * as z from "zod";
import { AppError } from "../../error";
import { ProviderError } from "../../integration/errors";
import { MAX_WRITE_BYTES } from "../../integration/filestore/port";
import type { FileStore } from "../../integration/filestore/port";
import { filestore as filestoreModule } from "./lazy";
import { MAX_TOOL_RESULT_CHARS, type GatedTool, type ReadTool, type ToolContext } from "./types";

type Failure = { success: false; error: string; error_code: string; retry_after?: number };

/** Characters of the content an approval preview shows. */
export const PREVIEW_CHARS = 4000;
/**
 * Characters of JSON a filestore_read result takes at most: the agent loop's MAX_TOOL_RESULT_CHARS, past which the loop
 * hands the model a clipped preview of the JSON instead of the result.
 */
export const READ_RESULT_CHARS = MAX_TOOL_RESULT_CHARS;
/** MIME types a write may store (text the copilot produces). */
export const WRITE_TYPES = ["text/plain", "text/markdown", "text/csv", "text/html", "application/json"] as const;

/**
 * The file-store integration, loaded when a file-store tool first runs (./lazy.ts): `onStore` hands it to the tool's
 * body, and `execute` loads it (a loaded module's import answers at once).
 */
type FilestoreModule = Awaited<ReturnType<typeof filestoreModule>>;

/**
 * The spec's tool error of a failure, or rethrow a defect.
 * @param F the integration, when it loaded (its UnsupportedType is the `unsupported_type` error)
 */
function toolError(err: unknown, F: FilestoreModule | undefined): Failure {
  if (F && err instanceof F.UnsupportedType) return { success: false, error: err.message, error_code: "unsupported_type" };
  if (err instanceof ProviderError) {
    const code = err.failure === "auth_expired" ? "token_expired" : err.failure === "validation" ? "validation_error" : err.failure;
    return { success: false, error: err.message, error_code: code, ...(err.retryAfterSeconds !== undefined ? { retry_after: err.retryAfterSeconds } : {}) };
  }
  if (err instanceof AppError) {
    switch (err.code) {
      case "FILESTORE_TOKEN_ERROR":
        return { success: false, error: err.message, error_code: "token_expired" };
      case "NO_ACTIVE_INTEGRATION":
        return { success: false, error: err.message, error_code: "integration_not_connected" };
      case "RATE_LIMITED":
        return { success: false, error: err.message, error_code: "rate_limited", retry_after: Number(err.extra.retry_after_seconds ?? 60) };
      default:
        return { success: false, error: err.message, error_code: "unknown" };
    }
  }
  throw err;
}

/** Run `fn` with the workspace's file store and the file-store integration, answering failures as tool errors. */
async function onStore<T>(ctx: { workspaceId: string }, fn: (store: FileStore, F: FilestoreModule) => Promise<T>): Promise<T | Failure> {
  let F: FilestoreModule | undefined;
  try {
    const loaded = (F = await filestoreModule());
    return await loaded.withFileStore(ctx.workspaceId, (store) => fn(store, loaded), { raw: true });
  } catch (err) {
    return toolError(err, F);
  }
}

/** The longest start of `text` whose JSON string (without its quotes) takes at most `budget` characters; whole characters only. */
function fitJson(text: string, budget: number): string {
  let used = 0;
  let end = 0;
  for (const ch of text) {
    const plain = ch.length === 2 || (ch >= " " && ch !== '"' && ch !== "\\" && !(ch >= "\uD800" && ch <= "\uDFFF"));
    const cost = plain ? ch.length : JSON.stringify(ch).length - 2;
    if (used + cost > budget) break;
    used += cost;
    end += ch.length;
  }
  return text.slice(0, end);
}

const clamp = (lo: number, hi: number, fallback: number) => z.coerce.number().int().optional().transform((v) => Math.min(hi, Math.max(lo, v ?? fallback)));
const FileId = z.string().trim().min(1).max(200).regex(/^[\w-]+$/, "a Drive file id");

export const filestoreSearch: ReadTool<{ query: string; limit: number }> = {
  name: "filestore_search",
  description: "Search the connected Google Drive for files whose name or content matches a query (1 to 50 results, default 10), most relevant first.",
  cues: ["google drive", "drive files", "find the doc", "search drive", "shared doc", "spreadsheet"],
  gated: false,
  input: z.object({ query: z.string().trim().min(1).max(200), limit: clamp(1, 50, 10) }).strict() as unknown as z.ZodType<{ query: string; limit: number }>,
  run: (ctx: ToolContext, input) =>
    onStore(ctx, async (store) => {
      const res = await store.search(input.query, input.limit);
      return { files: res.files, count: res.files.length, query: input.query, truncated: res.hasMore };
    }),
};

export const filestoreRead: ReadTool<{ file_id: string; offset: number }> = {
  name: "filestore_read",
  description:
    "Read a Google Drive file as text: Google Docs and Slides are exported to plain text, Sheets to CSV; stored text files are read as they are. " +
    "About 20,000 characters a call: when truncated is true, call again with offset set to next_offset for the rest.",
  cues: ["read the doc", "open the file", "drive document", "contents of"],
  gated: false,
  input: z
    .object({ file_id: FileId, offset: z.coerce.number().int().min(0).optional().transform((v) => v ?? 0) })
    .strict() as unknown as z.ZodType<{ file_id: string; offset: number }>,
  run: (ctx, input) =>
    onStore(ctx, async (store, F) => {
      const read = await F.readText(store, input.file_id, input.offset);
      // The content is cut so the whole result fits the loop's limit (READ_RESULT_CHARS), the fields before it.
      // The name is cut to 500 characters: a long one (Drive takes 32 KB) must leave room for content, or a read
      // would give none and point at the same offset again forever.
      const head = { file_id: read.file.id, name: fitJson(read.file.name, 500), mime_type: read.file.mime_type, web_view_link: read.file.web_view_link, total_bytes: read.total_bytes };
      const room = READ_RESULT_CHARS - JSON.stringify({ ...head, truncated: false, exported_as: read.exported_as, offset: read.offset, next_offset: Number.MAX_SAFE_INTEGER, content: "" }).length;
      const content = fitJson(read.content, room);
      const more = read.truncated || content.length < read.content.length;
      return { ...head, truncated: more, exported_as: read.exported_as, offset: read.offset, next_offset: more ? read.offset + content.length : null, content };
    }),
};

export const filestoreListFolder: ReadTool<{ folder_id: string; limit: number; page_token?: string }> = {
  name: "filestore_list_folder",
  description: "List a Google Drive folder (default the top folder, \"root\"): folders first, then files by name; 1 to 100 entries (default 50), next_page_token for more.",
  cues: ["list folder", "drive folder", "what's in the folder", "files in"],
  gated: false,
  input: z
    .object({ folder_id: z.union([z.literal("root"), FileId]).default("root"), limit: clamp(1, 100, 50), page_token: z.string().max(1000).optional() })
    .strict() as unknown as z.ZodType<{ folder_id: string; limit: number; page_token?: string }>,
  run: (ctx, input) =>
    onStore(ctx, async (store) => {
      const res = await store.listFolder(input.folder_id, input.limit, input.page_token);
      return { folder_id: input.folder_id, files: res.files, count: res.files.length, next_page_token: res.nextPageToken };
    }),
};

type WriteInput = { file_id?: string; name?: string; content: string; mime_type: (typeof WRITE_TYPES)[number]; folder_id?: string };

export const filestoreWrite: GatedTool<WriteInput> = {
  name: "filestore_write",
  description: `Write a file to Google Drive (needs a member's approval): with file_id, replace that text file's content; otherwise create \`name\` in folder_id (default the top folder). Text content, at most ${MAX_WRITE_BYTES.toLocaleString("en-US")} bytes as JSON (quotes and escapes count).`,
  cues: ["save to drive", "write a file", "update the file", "upload to drive"],
  gated: true,
  input: z
    .object({
      file_id: FileId.optional(),
      name: z.string().trim().min(1).max(255).optional(),
      // Measured as JSON: the input is held in a pending action, which stores at most 64 KiB of it (see MAX_WRITE_BYTES).
      content: z.string().refine((c) => Buffer.byteLength(JSON.stringify(c)) <= MAX_WRITE_BYTES, {
        message: `at most ${MAX_WRITE_BYTES} bytes of content as JSON (quotes and escapes count): shorten it or write it as several files`,
      }),
      mime_type: z.enum(WRITE_TYPES).default("text/plain"),
      folder_id: FileId.optional(),
    })
    .strict()
    .refine((i) => i.file_id || i.name, { message: "name is required to create a file (or give file_id to update one)", path: ["name"] }) as unknown as z.ZodType<WriteInput>,
  async preview(ctx, input) {
    const shown = input.content.length > PREVIEW_CHARS ? `${input.content.slice(0, PREVIEW_CHARS)}…` : input.content;
    // The file's current name, for the approver (the id alone says nothing); without it when the lookup fails: the
    // write checks the file again when it runs.
    const current = input.file_id ? await onStore(ctx, (store) => store.metadata(input.file_id!)).catch(() => undefined) : undefined;
    const named = current && !("success" in current) ? `'${current.name}' (${input.file_id})` : input.file_id;
    return input.file_id
      ? { summary: `Replace the content of Google Drive file ${named}${input.name ? ` (renaming it '${input.name}')` : ""}`, target: "filestore_file", operation: "update", fields: { ...input, content: shown } }
      : { summary: `Create '${input.name}' in Google Drive${input.folder_id ? ` (folder ${input.folder_id})` : ""}`, target: "filestore_file", operation: "create", fields: { ...input, content: shown } };
  },
  async execute(ctx, input) {
    // Failures are thrown as AppErrors (not answered): the pending-action executor retries a transient one (a rate
    // limit after its Retry-After) and ends a decided one failed.
    const Store = await filestoreModule();
    const res = await Store.withFileStore(ctx.workspaceId, (store) =>
      Store.writeFile(store, { fileId: input.file_id, name: input.name, content: input.content, mimeType: input.mime_type, folderId: input.folder_id }, ctx.actionId),
    ).catch((err: unknown) => {
      throw err instanceof Store.UnsupportedType ? new AppError("VALIDATION_ERROR", err.message, { errors: [] }) : err;
    });
    return { file_id: res.file.id, name: res.file.name, mime_type: res.file.mime_type, web_view_link: res.file.web_view_link, created: res.created, bytes_written: Buffer.byteLength(input.content) };
  },
};

/** The file-store tools, registered with the others in ./index.ts. */
export const FILESTORE_TOOLS: readonly (ReadTool | GatedTool)[] = [filestoreSearch, filestoreRead, filestoreListFolder, filestoreWrite];
