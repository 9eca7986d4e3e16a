/**
 * A stand-in Google (OAuth 2.0 with PKCE and offline access, and the Drive v3 endpoints the file store uses) as `msw`
 * handlers at addresses of its own, so GOOGLE_AUTH_URL / GOOGLE_TOKEN_URL / GOOGLE_API_URL are what reaches it. Bodies
 * are typed by `@googleapis/drive`'s own types (Google ships no machine-readable schema in the package). It reads
 * Drive's query language as far as the adapter writes it (name/fullText contains, `in parents`, appProperties has,
 * trashed), and refuses anything else, so an adapter query it does not understand fails the test; like Drive, it
 * refuses an orderBy on a query with a fullText term (403 forbidden) and answers such a query by relevance.
 */
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect } from "vitest";
import { http, HttpResponse } from "msw";
import { StandIn } from "./standins";
import type { drive_v3 } from "@googleapis/drive";
import { call } from "./api";

export const GOOGLE_AUTH = "https://accounts.google.test";
export const GOOGLE_TOKEN = "https://oauth2.google.test";
export const GOOGLE_API = "https://www.googleapis.test";

export interface StoredFile {
  id: string;
  name: string;
  mimeType: string;
  parents: string[];
  content: string;
  modifiedTime: string;
  trashed: boolean;
  appProperties: Record<string, string>;
}

export interface DriveFailure {
  /** Matches `METHOD /path` (under GOOGLE_API, without the query). */
  match: RegExp;
  status: number;
  headers?: Record<string, string>;
  reason?: string;
  times?: number;
  /** The connection drops before any answer (no status). */
  lost?: boolean;
}

const FOLDER = "application/vnd.google-apps.folder";
const EXPORTS: Record<string, string[]> = {
  "application/vnd.google-apps.document": ["text/plain", "text/html", "application/pdf"],
  "application/vnd.google-apps.spreadsheet": ["text/csv", "application/pdf"],
  "application/vnd.google-apps.presentation": ["text/plain", "application/pdf"],
};

/** Drive's query literal, unescaped. */
const literal = (s: string) => s.replace(/\\(.)/g, "$1");
const LIT = String.raw`'((?:[^'\\]|\\.)*)'`;

export class DriveStandIn extends StandIn<DriveFailure> {
  readonly clientId = "g-client-id.apps.googleusercontent.test";
  readonly clientSecret = "g-client-secret";
  readonly email = "ada@example.com";
  readonly files = new Map<string, StoredFile>();
  /** Token endpoint calls by grant type. */
  readonly tokenCalls = { authorization_code: 0, refresh_token: 0 };
  readonly requests: { method: string; path: string; status: number }[] = [];
  /** Bytes past which an export is refused (Drive: 10 MB). */
  exportLimit = 10 * 1024 * 1024;
  accessTtlSeconds = 3599;
  private readonly codes = new Map<string, { challenge: string; redirectUri: string }>();
  private readonly access = new Map<string, number>();
  private readonly refresh = new Set<string>();

  /** Revoke every token issued so far (the user removing the app's access). */
  revokeAll(): void {
    this.access.clear();
    this.refresh.clear();
  }

  /** Put a file (or folder) in the drive; returns its id. */
  put(input: Partial<StoredFile> & { name: string }): string {
    const id = input.id ?? `f${randomBytes(8).toString("hex")}`;
    this.files.set(id, {
      id, mimeType: "text/plain", parents: ["root"], content: "", modifiedTime: new Date(Date.UTC(2026, 0, 1 + this.files.size)).toISOString(),
      trashed: false, appProperties: {}, ...input,
    });
    return id;
  }

  /** What the browser does with an auth_url: check it as Google does and come back with a code and the state. */
  authorize(authUrl: string): { code: string; state: string } {
    const url = new URL(authUrl);
    const p = url.searchParams;
    if (`${url.origin}${url.pathname}` !== `${GOOGLE_AUTH}/o/oauth2/v2/auth`) throw new Error(`unexpected authorize URL ${authUrl}`);
    if (p.get("client_id") !== this.clientId) throw new Error("unknown client_id");
    if (p.get("access_type") !== "offline") throw new Error("offline access expected (else no refresh token)");
    if (p.get("code_challenge_method") !== "S256") throw new Error("PKCE S256 expected");
    if (!(p.get("scope") ?? "").split(" ").includes("https://www.googleapis.com/auth/drive")) throw new Error("drive scope expected");
    const code = `4/${randomBytes(10).toString("hex")}`;
    this.codes.set(code, { challenge: p.get("code_challenge")!, redirectUri: p.get("redirect_uri")! });
    return { code, state: p.get("state")! };
  }

  private fileJson(f: StoredFile): drive_v3.Schema$File {
    const native = f.mimeType.startsWith("application/vnd.google-apps.");
    return {
      id: f.id, name: f.name, mimeType: f.mimeType, parents: f.parents, modifiedTime: f.modifiedTime,
      webViewLink: `https://docs.google.test/${native ? "document" : "file"}/d/${f.id}/view`,
      ...(native ? {} : { size: String(Buffer.byteLength(f.content)) }),
    };
  }

  /** The files a Drive query selects, or null when the query is not one the stand-in reads. */
  private select(q: string): StoredFile[] | null {
    const all = [...this.files.values()];
    let rest = q.trim();
    let hits = all;
    const take = (re: RegExp) => {
      const m = re.exec(rest);
      if (m) rest = (rest.slice(0, m.index) + rest.slice(m.index + m[0].length)).trim();
      return m;
    };
    const trashed = take(/\s*(and\s+)?trashed\s*=\s*false/);
    if (trashed) hits = hits.filter((f) => !f.trashed);
    const search = take(new RegExp(String.raw`^\(name contains ${LIT} or fullText contains ${LIT}\)`));
    if (search) {
      const term = literal(search[1]!).toLowerCase();
      const inName = (f: StoredFile) => f.name.toLowerCase().includes(term);
      // Drive answers a full-text query in descending relevance; here, name matches before content-only matches.
      hits = hits.filter((f) => f.mimeType !== FOLDER && (inName(f) || f.content.toLowerCase().includes(term)));
      hits = [...hits.filter(inName), ...hits.filter((f) => !inName(f))];
    }
    const parent = take(new RegExp(String.raw`^${LIT} in parents`));
    if (parent) hits = hits.filter((f) => f.parents.includes(literal(parent[1]!)));
    const marker = take(new RegExp(String.raw`^appProperties has \{ key=${LIT} and value=${LIT} \}`));
    if (marker) hits = hits.filter((f) => f.appProperties[literal(marker[1]!)] === literal(marker[2]!));
    return rest === "" ? hits : null;
  }

  protected handlers() {
    const error = (status: number, reason: string, message: string, headers?: Record<string, string>) =>
      HttpResponse.json({ error: { code: status, message, errors: [{ domain: "global", reason, message }] } }, { status, headers });
    const api = (method: "get" | "post" | "patch", template: string, answer: (ctx: { url: URL; params: Record<string, string>; request: Request }) => Promise<Response> | Response) =>
      http[method](`${GOOGLE_API}${template}`, async ({ request, params }) => {
        const url = new URL(request.url);
        const key = `${method.toUpperCase()} ${url.pathname}`;
        const log = (status: number) => this.requests.push({ method: method.toUpperCase(), path: url.pathname + url.search, status });
        const failure = this.takeFailure((f) => f.match.test(key));
        if (failure) {
          log(failure.status);
          if (failure.lost) return HttpResponse.error();
          return error(failure.status, failure.reason ?? "backendError", `failure ${failure.status}`, failure.headers);
        }
        const token = request.headers.get("authorization")?.replace(/^Bearer /, "") ?? "";
        if ((this.access.get(token) ?? 0) < Date.now()) {
          log(401);
          return error(401, "authError", "Invalid Credentials");
        }
        const res = await answer({ url, params: params as Record<string, string>, request });
        log(res.status);
        return res;
      });
    const fileOr404 = (id: string) => {
      const f = this.files.get(id);
      return f && !f.trashed ? f : undefined;
    };
    /** The metadata and content parts of a multipart/related upload (or the content alone of a media upload). */
    const upload = async (request: Request): Promise<{ meta: drive_v3.Schema$File; content: string; contentType: string }> => {
      const type = request.headers.get("content-type") ?? "";
      const body = await request.text();
      const boundary = /boundary=([^;]+)/.exec(type)?.[1];
      if (!type.startsWith("multipart/related") || !boundary) return { meta: {}, content: body, contentType: type };
      const parts = body.split(`--${boundary}`).slice(1, -1).map((p) => {
        const [head, ...rest] = p.replace(/^\r\n/, "").split("\r\n\r\n");
        return { type: /content-type: ([^\r\n]+)/i.exec(head!)?.[1] ?? "", body: rest.join("\r\n\r\n").replace(/\r\n$/, "") };
      });
      return { meta: JSON.parse(parts[0]!.body) as drive_v3.Schema$File, content: parts[1]?.body ?? "", contentType: parts[1]?.type ?? "" };
    };

    return [
      http.post(`${GOOGLE_TOKEN}/token`, async ({ request }) => {
        const form = new URLSearchParams(await request.text());
        if (form.get("client_id") !== this.clientId || form.get("client_secret") !== this.clientSecret) {
          return HttpResponse.json({ error: "invalid_client", error_description: "The OAuth client was not found." }, { status: 401 });
        }
        const issue = () => {
          const access_token = `ya29.${randomBytes(16).toString("hex")}`;
          this.access.set(access_token, Date.now() + this.accessTtlSeconds * 1000);
          return access_token;
        };
        if (form.get("grant_type") === "authorization_code") {
          this.tokenCalls.authorization_code++;
          const grant = this.codes.get(form.get("code") ?? "");
          const challenge = createHash("sha256").update(form.get("code_verifier") ?? "").digest("base64url");
          if (!grant || grant.redirectUri !== form.get("redirect_uri") || grant.challenge !== challenge) {
            return HttpResponse.json({ error: "invalid_grant", error_description: "Bad Request" }, { status: 400 });
          }
          this.codes.delete(form.get("code")!);
          const refresh_token = `1//${randomBytes(16).toString("hex")}`;
          this.refresh.add(refresh_token);
          return HttpResponse.json({ access_token: issue(), expires_in: this.accessTtlSeconds, refresh_token, scope: "https://www.googleapis.com/auth/drive openid", token_type: "Bearer" });
        }
        if (form.get("grant_type") === "refresh_token") {
          this.tokenCalls.refresh_token++;
          if (!this.refresh.has(form.get("refresh_token") ?? "")) return HttpResponse.json({ error: "invalid_grant", error_description: "Token has been expired or revoked." }, { status: 400 });
          // Google's refresh tokens are long-lived: a refresh answers a new access token only.
          return HttpResponse.json({ access_token: issue(), expires_in: this.accessTtlSeconds, scope: "https://www.googleapis.com/auth/drive", token_type: "Bearer" });
        }
        return HttpResponse.json({ error: "unsupported_grant_type" }, { status: 400 });
      }),
      api("get", "/drive/v3/about", () =>
        HttpResponse.json({ user: { kind: "drive#user", displayName: "Ada Lovelace", emailAddress: this.email, photoLink: "https://lh3.googleusercontent.test/a/ada=s64", me: true, permissionId: "0123" } } satisfies drive_v3.Schema$About)),
      api("get", "/drive/v3/files", ({ url }) => {
        const q = url.searchParams.get("q") ?? "";
        const order = url.searchParams.get("orderBy");
        if (order && /\bfullText contains /.test(q)) {
          // As Drive answers any orderBy on a query with a fullText term.
          const message = "Sorting is not supported for queries with fullText terms. Results are always in descending relevance order.";
          return HttpResponse.json(
            { error: { code: 403, message, errors: [{ domain: "global", reason: "forbidden", message, locationType: "parameter", location: "orderBy" }] } },
            { status: 403 },
          );
        }
        const hits = this.select(q);
        if (!hits) return error(400, "invalid", "Invalid Value");
        if (order === "modifiedTime desc") hits.sort((a, b) => b.modifiedTime.localeCompare(a.modifiedTime));
        else if (order === "folder,name") hits.sort((a, b) => Number(b.mimeType === FOLDER) - Number(a.mimeType === FOLDER) || a.name.localeCompare(b.name));
        const size = Number(url.searchParams.get("pageSize") ?? 100);
        const start = Number(url.searchParams.get("pageToken") ?? 0);
        const page = hits.slice(start, start + size);
        const list: drive_v3.Schema$FileList = { files: page.map((f) => this.fileJson(f)), ...(start + size < hits.length ? { nextPageToken: String(start + size) } : {}) };
        return HttpResponse.json(list);
      }),
      api("get", "/drive/v3/files/:id", ({ url, params }) => {
        const f = fileOr404(params.id!);
        if (!f) return error(404, "notFound", `File not found: ${params.id}.`);
        if (url.searchParams.get("alt") === "media") {
          if (f.mimeType.startsWith("application/vnd.google-apps.")) return error(403, "fileNotDownloadable", "Only files with binary content can be downloaded. Use Export with Docs Editors files.");
          return new HttpResponse(Buffer.from(f.content), { headers: { "content-type": f.mimeType } });
        }
        return HttpResponse.json(this.fileJson(f));
      }),
      api("get", "/drive/v3/files/:id/export", ({ url, params }) => {
        const f = fileOr404(params.id!);
        if (!f) return error(404, "notFound", `File not found: ${params.id}.`);
        const mime = url.searchParams.get("mimeType") ?? "";
        if (!EXPORTS[f.mimeType]?.includes(mime)) return error(400, "badRequest", "The requested conversion is not supported.");
        if (Buffer.byteLength(f.content) > this.exportLimit) return error(403, "exportSizeLimitExceeded", "This file is too large to be exported.");
        // Docs' plain-text export starts with a byte-order mark.
        return new HttpResponse(Buffer.concat([Buffer.from(mime === "text/plain" ? "\uFEFF" : ""), Buffer.from(f.content)]), { headers: { "content-type": `${mime}; charset=utf-8` } });
      }),
      api("post", "/upload/drive/v3/files", async ({ request }) => {
        const { meta, content } = await upload(request);
        const id = this.put({ name: meta.name ?? "Untitled", mimeType: meta.mimeType ?? "text/plain", parents: meta.parents ?? ["root"], content, appProperties: (meta.appProperties ?? {}) as Record<string, string>, modifiedTime: new Date().toISOString() });
        return HttpResponse.json(this.fileJson(this.files.get(id)!));
      }),
      api("patch", "/upload/drive/v3/files/:id", async ({ request, params }) => {
        const f = fileOr404(params.id!);
        if (!f) return error(404, "notFound", `File not found: ${params.id}.`);
        const { meta, content } = await upload(request);
        Object.assign(f, { content, modifiedTime: new Date().toISOString(), ...(meta.name ? { name: meta.name } : {}) });
        return HttpResponse.json(this.fileJson(f));
      }),
    ];
  }
}

/** Where the API and the frontend live in these tests (exact redirect URIs and settings pages). */
export const API_URL = "https://api.r2d.test";
export const APP_URL = "https://app.r2d.test";

/** Point the Google settings at the stand-in and give tokens a key file of their own (a fresh temp dir). */
export function useDriveSettings(drive: DriveStandIn): void {
  Object.assign(process.env, {
    GOOGLE_AUTH_URL: GOOGLE_AUTH,
    GOOGLE_TOKEN_URL: GOOGLE_TOKEN,
    GOOGLE_API_URL: GOOGLE_API,
    GOOGLE_CLIENT_ID: drive.clientId,
    GOOGLE_CLIENT_SECRET: drive.clientSecret,
    API_URL,
    APP_URL,
    TOKEN_KEY_FILE: join(mkdtempSync(join(tmpdir(), "r2d-keys-")), "integration-tokens.key"),
  });
}

/** Connect Google Drive through the public API as a browser would: connect, authorize at the stand-in, callback. */
export async function connectDrive(drive: DriveStandIn, token: string, workspaceId: string) {
  const connect = await call("POST", "/api/integrations/filestore/connect", { token, body: { workspace_id: workspaceId } });
  expect(connect.status, connect.text).toBe(200);
  const { code, state } = drive.authorize(connect.body.auth_url);
  const cb = await call("GET", "/api/integrations/filestore/callback", { query: { code, state } });
  expect(cb.status, cb.text).toBe(302);
  expect(cb.headers.location).toBe(`${APP_URL}/settings/integrations?filestore=connected`);
  return { code, state };
}
