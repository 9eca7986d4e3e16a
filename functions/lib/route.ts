import type { z } from "zod";
import type { APIGatewayProxyEventV2 } from "aws-lambda";
import type { User } from "../../core/user";
import type { TokenClaims } from "../../core/user/schema";

export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * Who may call a route: `user` (bearer JWT), `admin` (JWT of an admin, DESIGN.md section 5),
 * `public` (no token), `webhook` (no token; the handler verifies the provider's signature).
 */
export type Access = "user" | "admin" | "public" | "webhook";

/** Where a workspace-scoped route finds its workspace id (used by the membership tests and the docs). */
export type WorkspaceScope = "path" | "query" | "body" | "resource";

type AnyObject = z.ZodType<Record<string, unknown>>;

/** One row of the route table (functions/http/routes.ts). */
export interface RouteSpec {
  method: Method;
  /** API Gateway path with `{param}` segments. */
  path: string;
  /** Endpoint group: one Lambda per group (functions/http/<group>.ts). */
  group: string;
  summary: string;
  access: Access;
  /** How the workspace is found for the membership check, when the route is workspace-scoped. */
  workspaceScope?: WorkspaceScope;
  params?: AnyObject;
  query?: AnyObject;
  body?: z.ZodType;
  /** Body encoding: json (default when body is set), multipart (uploads), raw (signed webhooks). */
  bodyType?: "json" | "multipart" | "raw";
  /** Response schemas by status; `null` is a response without content (204). */
  responses: Record<number, z.ZodType | null>;
  /** Content type of a non-JSON success response (docs page, `text/event-stream`). */
  produces?: string;
  /**
   * A response-streaming route (SSE, DESIGN.md 6.1): its group is a streaming Lambda on a Function URL in
   * RESPONSE_STREAM mode (API Gateway cannot stream), served by the local gateway as it is produced.
   */
  streaming?: boolean;
}

type Out<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What a route implementation receives: validated inputs plus the caller. */
export interface RouteContext<R extends RouteSpec> {
  params: Out<R["params"]>;
  query: Out<R["query"]>;
  body: Out<R["body"]>;
  /** The caller; set for `user` and `admin` routes. */
  user: R["access"] extends "user" | "admin" ? User : undefined;
  claims: R["access"] extends "user" | "admin" ? TokenClaims : undefined;
  isAdmin: boolean;
  requestId: string;
  /** The raw request body as sent (signature checks). */
  rawBody: string;
  headers: Record<string, string | undefined>;
  event: APIGatewayProxyEventV2;
}

/** A route's reply: a status (default 200), a JSON body, or a non-JSON body with its content type. */
export interface Reply {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** Send `body` as-is (a string) with this content type instead of JSON. */
  contentType?: string;
}

export type RouteImpl<R extends RouteSpec> = (ctx: RouteContext<R>) => Promise<Reply> | Reply;

export const ok = (body: unknown): Reply => ({ status: 200, body });
export const created = (body: unknown): Reply => ({ status: 201, body });
export const noContent = (): Reply => ({ status: 204 });

/** Identity helper that keeps each route's literal types for inference. */
export const defineRoutes = <const T extends Record<string, RouteSpec>>(routes: T): T => routes;
