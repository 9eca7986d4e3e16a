/**
 * The `FileStore` port on Google Drive v3 (DESIGN.md 6.4): `@googleapis/drive` (not the whole `googleapis`), its root
 * URL from GOOGLE_API_URL so stand-ins and proxies are reached, the access token as a bearer header (its refresh is
 * the OAuth framework's, one writer at a time). Rate limits are never waited out here: gaxios retries only a 5xx once,
 * and a 429 (or Drive's 403 `rateLimitExceeded` / `userRateLimitExceeded`) comes back as a `ProviderError`
 * `rate_limited` with Google's `Retry-After` when it sends one.
 */
import type { drive_v3 } from "@googleapis/drive";
import { Config } from "../../config";
import { isTransportFailure, noAnswer, ProviderError } from "../errors";
import type { FileInfo, FileStore } from "./port";

// The Drive client and Google's auth library load with the first Drive call, not with every Lambda that reaches this
// port (issue #24 cold starts).
const GoogleDrive = () => import("@googleapis/drive");

export const FOLDER_MIME = "application/vnd.google-apps.folder";
/** The `appProperties` key that carries a pending action's id on the file it created (replay-safe writes). */
export const MARKER_KEY = "r2d_action";
const FILE_FIELDS = "id,name,mimeType,size,modifiedTime,webViewLink,parents";

interface GaxiosLikeError {
  status?: number;
  message?: string;
  response?: { status?: number; headers?: Headers; data?: unknown };
}

/** Drive's first error reason (`rateLimitExceeded`, `exportSizeLimitExceeded`, ...), from its JSON error body. */
const reasonOf = (data: unknown): string | undefined =>
  (data as { error?: { errors?: { reason?: string }[] } } | undefined)?.error?.errors?.[0]?.reason;

const RATE_REASONS = new Set(["rateLimitExceeded", "userRateLimitExceeded", "sharingRateLimitExceeded"]);

/**
 * Translate a gaxios error into the port's terms. A request that got no answer (a dropped connection, a timeout:
 * gaxios passes fetch's failure through) is `unknown`, as GitHub's, Jira's and Linear's are (503 over HTTP); anything
 * else without an HTTP status is a defect and passes unchanged.
 */
export function translate(err: unknown): unknown {
  const e = err as GaxiosLikeError;
  const status = e?.response?.status ?? e?.status;
  if (typeof status !== "number") {
    return isTransportFailure(err) ? noAnswer(err, "Google Drive did not answer") : err;
  }
  const reason = reasonOf(e.response?.data);
  const message = (e.response?.data as { error?: { message?: string } } | undefined)?.error?.message ?? e.message ?? `Google Drive answered ${status}`;
  if (status === 429 || (status === 403 && reason && RATE_REASONS.has(reason))) {
    const after = Number(e.response?.headers?.get?.("retry-after"));
    return new ProviderError("rate_limited", message, Number.isFinite(after) && after > 0 ? Math.ceil(after) : 60);
  }
  if (status === 401) return new ProviderError("auth_expired", message);
  if (status === 403 && reason === "exportSizeLimitExceeded") return new ProviderError("too_large", message);
  if (status === 403) return new ProviderError("forbidden", message);
  if (status === 404) return new ProviderError("not_found", message);
  if (status === 400) return new ProviderError("validation", message);
  return new ProviderError("unknown", message);
}

async function call<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    throw translate(err);
  }
}

/** A Drive query literal: backslashes and single quotes escaped, as the search syntax asks. */
export const quote = (value: string): string => `'${value.replace(/\\/g, "\\\\").replace(/'/g, "\\'")}'`;

const toInfo = (f: drive_v3.Schema$File): FileInfo => ({
  id: f.id ?? "",
  name: f.name ?? "",
  mime_type: f.mimeType ?? "application/octet-stream",
  is_folder: f.mimeType === FOLDER_MIME,
  size: f.size === undefined || f.size === null ? null : Number(f.size),
  modified_time: f.modifiedTime ?? null,
  web_view_link: f.webViewLink ?? null,
  parents: f.parents ?? [],
});

/** GOOGLE_API_URL as the Drive client's root URL. */
const rootUrl = () => `${Config.googleApiUrl()}/`;

/** A Drive v3 client for one access token, rooted at GOOGLE_API_URL. */
export async function driveClient(accessToken: string): Promise<drive_v3.Drive> {
  const { drive } = await GoogleDrive();
  return drive({
    version: "v3",
    rootUrl: rootUrl(),
    headers: { authorization: `Bearer ${accessToken}` },
    // One quick retry of a 5xx or a dropped connection; never of a 429 (gaxios' default would sleep through it).
    retryConfig: { retry: 1, noResponseRetries: 1, retryDelay: 200, statusCodesToRetry: [[500, 599]] },
  });
}

/** The `FileStore` port over one Google access token. */
export function googleDrive(accessToken: string): FileStore {
  // Made by the first call, which loads the Drive client.
  let made: Promise<drive_v3.Drive> | undefined;
  const d = () => (made ??= driveClient(accessToken));
  const bytes = (data: unknown): Buffer => Buffer.from(data as ArrayBuffer);
  // The upload address (`/upload/drive/v3/...`) is built from the call's own options, not the client's: without
  // this, uploads would go to www.googleapis.com whatever GOOGLE_API_URL says.
  const UPLOAD = { rootUrl: rootUrl() };
  return {
    async about() {
      const { data } = await call(async () => (await d()).about.get({ fields: "user(displayName,emailAddress,photoLink)" }));
      return { email: data.user?.emailAddress ?? null, name: data.user?.displayName ?? null, avatar_url: data.user?.photoLink ?? null };
    },

    async search(query, limit) {
      const q = `(name contains ${quote(query)} or fullText contains ${quote(query)}) and trashed = false`;
      // No orderBy: Drive refuses any sort on a query with a fullText term (403 "Sorting is not supported for queries
      // with fullText terms"); such results come in descending relevance.
      const { data } = await call(async () => (await d()).files.list({ q, pageSize: limit, fields: `nextPageToken,files(${FILE_FIELDS})`, spaces: "drive" }));
      return { files: (data.files ?? []).map(toInfo), hasMore: Boolean(data.nextPageToken) };
    },

    async listFolder(folderId, limit, pageToken) {
      const q = `${quote(folderId)} in parents and trashed = false`;
      const { data } = await call(async () =>
        (await d()).files.list({ q, pageSize: limit, orderBy: "folder,name", fields: `nextPageToken,files(${FILE_FIELDS})`, ...(pageToken ? { pageToken } : {}) }),
      );
      return { files: (data.files ?? []).map(toInfo), nextPageToken: data.nextPageToken ?? null };
    },

    async metadata(fileId) {
      const { data } = await call(async () => (await d()).files.get({ fileId, fields: FILE_FIELDS }));
      return toInfo(data);
    },

    async download(fileId) {
      const res = await call(async () => (await d()).files.get({ fileId, alt: "media" }, { responseType: "arraybuffer" }));
      return bytes(res.data);
    },

    async export(fileId, mimeType) {
      const res = await call(async () => (await d()).files.export({ fileId, mimeType }, { responseType: "arraybuffer" }));
      return bytes(res.data);
    },

    async findByMarker(marker) {
      const q = `appProperties has { key=${quote(MARKER_KEY)} and value=${quote(marker)} } and trashed = false`;
      const { data } = await call(async () => (await d()).files.list({ q, pageSize: 1, fields: `files(${FILE_FIELDS})` }));
      const hit = data.files?.[0];
      return hit ? toInfo(hit) : null;
    },

    async create({ name, content, mimeType, folderId, marker }) {
      const { data } = await call(async () =>
        (await d()).files.create({
          requestBody: { name, mimeType, ...(folderId ? { parents: [folderId] } : {}), appProperties: { [MARKER_KEY]: marker } },
          media: { mimeType, body: content },
          fields: FILE_FIELDS,
        }, UPLOAD),
      );
      return toInfo(data);
    },

    async update(fileId, { content, mimeType, name }) {
      const { data } = await call(async () =>
        (await d()).files.update({ fileId, ...(name ? { requestBody: { name } } : {}), media: { mimeType, body: content }, fields: FILE_FIELDS }, UPLOAD),
      );
      return toInfo(data);
    },
  } satisfies FileStore;
}
