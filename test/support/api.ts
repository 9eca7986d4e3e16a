import { randomUUID } from "node:crypto";
import type { DevIdp } from "../../local/idp";
import { dispatch } from "../../local/apigw";

/** The dev identity provider of this test run (set up in test/support/setup.ts). */
export const idp = (): DevIdp => (globalThis as { __testIdp?: DevIdp }).__testIdp!;

export interface ApiResponse<T = any> {
  status: number;
  headers: Record<string, string>;
  body: T;
  text: string;
}

export interface CallOptions {
  token?: string;
  body?: unknown;
  /** Raw body bytes (multipart, webhooks) with its content type. */
  raw?: { data: Buffer | string; contentType: string };
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
}

/**
 * Call the API through the real route table and group handlers, with API Gateway v2 events, exactly as the
 * local gateway does (no HTTP socket, no mocks of our code).
 */
export async function call<T = any>(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: Buffer | undefined;
  if (opts.raw) {
    body = Buffer.isBuffer(opts.raw.data) ? opts.raw.data : Buffer.from(opts.raw.data);
    headers["content-type"] = opts.raw.contentType;
  } else if (opts.body !== undefined) {
    body = Buffer.from(JSON.stringify(opts.body));
    headers["content-type"] = "application/json";
  }
  const rawQuery = opts.query
    ? new URLSearchParams(
        Object.entries(opts.query).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, String(v)]])),
      ).toString()
    : "";
  const res = await dispatch({ method, path, rawQuery, headers, body });
  const text = res.body === undefined ? "" : Buffer.from(res.body, res.isBase64Encoded ? "base64" : "utf8").toString("utf8");
  const type = String((res.headers ?? {})["content-type"] ?? "");
  return {
    status: res.statusCode ?? 200,
    headers: (res.headers ?? {}) as Record<string, string>,
    body: type.includes("json") && text ? JSON.parse(text) : text,
    text,
  };
}

/** A fresh user: a token for a new e-mail (the user is created on first request). */
export async function newUser(opts: { name?: string; groups?: string[] } = {}) {
  const email = `user-${randomUUID().slice(0, 8)}@example.com`;
  const token = await idp().sign({ email, name: opts.name ?? "Test User", groups: opts.groups });
  const me = await call("GET", "/api/auth/me", { token });
  return { email, token, id: me.body.id as string, profile: me.body };
}

/** A fresh user who owns a fresh workspace. */
export async function newWorkspace(name = "Test workspace") {
  const owner = await newUser();
  const res = await call("POST", "/api/workspaces", { token: owner.token, body: { name } });
  if (res.status !== 201) throw new Error(`workspace create failed: ${res.status} ${res.text}`);
  return { owner, workspace: res.body as { id: string; name: string } };
}
