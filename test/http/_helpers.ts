import { randomUUID } from "node:crypto";
import { expect } from "vitest";
import { PutCommand, QueryCommand } from "@aws-sdk/lib-dynamodb";
import { dynamoClient } from "../../core/db/client";
import { Config } from "../../core/config";
import { CHILD_PREFIX } from "../../core/workspace";
import { documentListKeysOf } from "../../core/document/document.entity";
import { call, idp, type ApiResponse } from "../support/api";

/** Response headers with lower-cased names (middy adds some capitalised, our code adds some lower-case). */
export const headersOf = (res: ApiResponse): Record<string, string> =>
  Object.fromEntries(Object.entries(res.headers).filter(([, v]) => v !== undefined).map(([k, v]) => [k.toLowerCase(), String(v)]));

/**
 * Assert the one error envelope of DESIGN.md section 5: status, `{detail, code, request_id}` and the same
 * request id in the `x-request-id` header.
 */
export function expectEnvelope(res: ApiResponse, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body).toMatchObject({ code });
  expect(typeof res.body.detail).toBe("string");
  expect(res.body.detail.length).toBeGreaterThan(0);
  expect(typeof res.body.request_id).toBe("string");
  expect(headersOf(res)["x-request-id"]).toBe(res.body.request_id);
}

/** Replace every `{param}` of a route path with the given value or a random UUID. */
export const fillPath = (path: string, params: Record<string, string> = {}) =>
  path.replace(/\{([^/}]+)\}/g, (_, name: string) => encodeURIComponent(params[name] ?? randomUUID()));

/** Path parameter names of a route path. */
export const pathParams = (path: string) => [...path.matchAll(/\{([^/}]+)\}/g)].map((m) => m[1]!);

/** A user with a chosen e-mail (fresh by default), created on the first request. */
export async function userWithEmail(email = `user-${randomUUID().slice(0, 8)}@example.com`, name = "Test User") {
  const token = await idp().sign({ email, name });
  const me = await call("GET", "/api/auth/me", { token });
  if (me.status !== 200) throw new Error(`GET /me failed: ${me.status} ${me.text}`);
  return { email, token, id: me.body.id as string, profile: me.body };
}

/** Every item in a table partition (strongly consistent), as raw DynamoDB items. */
export async function partitionItems(pk: string) {
  const out = await dynamoClient().send(
    new QueryCommand({ TableName: Config.tableName(), KeyConditionExpression: "pk = :pk", ExpressionAttributeValues: { ":pk": pk }, ConsistentRead: true }),
  );
  return out.Items ?? [];
}

/** Put a bare item into a workspace partition. */
export const putRaw = (workspaceId: string, sk: string, extra: Record<string, unknown> = {}) =>
  dynamoClient().send(new PutCommand({ TableName: Config.tableName(), Item: { pk: `ws#${workspaceId}`, sk, ...extra } }));

/** ElectroDB entity name of each child kind the workspace counts (sort-key prefix + `__edb_e__`, core/workspace). */
const CHILD_ENTITY = { source: "research_source", insight: "insight", recommendation: "recommendation", document: "document" } as const;

/**
 * A stand-in child item (source, insight, recommendation, document) as the workspace's counts see it: the sort-key
 * prefix of core/workspace CHILD_PREFIX and the entity marker, without needing that area's code.
 */
export const putChild = (workspaceId: string, kind: keyof typeof CHILD_PREFIX) => {
  const id = randomUUID();
  // A document is listed from its sparse index (core/document/listing.ts): it carries that index's keys.
  const listed = kind === "document" ? documentListKeysOf(workspaceId, id) : {};
  return putRaw(workspaceId, `${CHILD_PREFIX[kind]}${id}`, { id, __edb_e__: CHILD_ENTITY[kind], __edb_v__: "1", ...listed });
};

/** Run `fn` with environment variables set, restoring the previous values afterwards. */
export async function withEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const apply = (v: Record<string, string | undefined>) => {
    for (const [k, val] of Object.entries(v)) {
      if (val === undefined) delete process.env[k];
      else process.env[k] = val;
    }
  };
  apply(vars);
  try {
    return await fn();
  } finally {
    apply(saved);
  }
}
