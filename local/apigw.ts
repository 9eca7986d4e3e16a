import type { ErrorCode } from "../core/error";
import { randomUUID } from "node:crypto";
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { allowedMethods, matchRoute, timeoutOf } from "../functions/http/routes";
import { CORS_ALLOW_HEADERS, type RouteSpec } from "../functions/lib/route";
import { securityHeadersFor } from "../functions/lib/http";
import { installAwsLambdaShim, isStreamingHandler, LocalResponseStream, type Prelude, type StreamingHandler, type StreamSink } from "./streaming";

// Streaming groups (SSE) are built with middy's streamifyResponse, which needs Lambda's `awslambda` global at import.
installAwsLambdaShim();

export interface HttpRequestLike {
  method: string;
  /** Path without the query string. */
  path: string;
  /** Raw query string without the leading '?'. */
  rawQuery?: string;
  headers: Record<string, string>;
  body?: Buffer;
}

const TEXTUAL = /^(application\/(json|[\w.+-]+\+json|x-www-form-urlencoded|xml)|text\/)/i;

/** Turn a plain HTTP request into the API Gateway HTTP API (payload 2.0) event the group Lambdas receive. */
export function toApiGatewayEvent(req: HttpRequestLike, pathParameters: Record<string, string>, routeKey: string): APIGatewayProxyEventV2 {
  const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k.toLowerCase(), v]));
  const query = new URLSearchParams(req.rawQuery ?? "");
  const queryStringParameters: Record<string, string> = {};
  // API Gateway joins repeated query parameters with commas.
  for (const key of new Set(query.keys())) queryStringParameters[key] = query.getAll(key).join(",");
  const textual = TEXTUAL.test(headers["content-type"] ?? "");
  const hasBody = req.body !== undefined && req.body.length > 0;
  const now = new Date();
  return {
    version: "2.0",
    routeKey,
    rawPath: req.path,
    rawQueryString: req.rawQuery ?? "",
    headers,
    queryStringParameters: Object.keys(queryStringParameters).length ? queryStringParameters : undefined,
    pathParameters: Object.keys(pathParameters).length ? pathParameters : undefined,
    requestContext: {
      accountId: "000000000000",
      apiId: "local",
      domainName: headers.host ?? "localhost",
      domainPrefix: "local",
      http: { method: req.method.toUpperCase(), path: req.path, protocol: "HTTP/1.1", sourceIp: "127.0.0.1", userAgent: headers["user-agent"] ?? "" },
      requestId: randomUUID(),
      routeKey,
      stage: "$default",
      time: now.toUTCString(),
      timeEpoch: now.getTime(),
    },
    body: hasBody ? (textual ? req.body!.toString("utf8") : req.body!.toString("base64")) : undefined,
    isBase64Encoded: hasBody && !textual,
  };
}

/** A Lambda context good enough for the handlers (they read the request id and remaining time). */
export function lambdaContext(functionName: string, timeoutSeconds = 30): Context {
  const deadline = Date.now() + timeoutSeconds * 1000;
  return {
    callbackWaitsForEmptyEventLoop: false,
    functionName,
    functionVersion: "$LATEST",
    invokedFunctionArn: `arn:aws:lambda:local:000000000000:function:${functionName}`,
    memoryLimitInMB: "1024",
    awsRequestId: randomUUID(),
    logGroupName: `/aws/lambda/${functionName}`,
    logStreamName: "local",
    getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
    done: () => undefined,
    fail: () => undefined,
    succeed: () => undefined,
  };
}

type GroupHandler = (event: APIGatewayProxyEventV2, context: Context) => Promise<APIGatewayProxyResultV2>;

const loaded = new Map<string, Promise<GroupHandler>>();

/** Load a group's Lambda module once, as a warm Lambda would keep it. */
export function groupHandler(group: string): Promise<GroupHandler> {
  let p = loaded.get(group);
  if (!p) {
    p = import(`../functions/http/${group}.ts`).then((m: { handler: GroupHandler }) => m.handler);
    loaded.set(group, p);
  }
  return p;
}

/**
 * CORS preflight, answered by the gateway itself as API Gateway's CORS configuration does in AWS
 * (stacks/Api.ts), with the same origins setting the handlers use.
 */
function preflight(req: HttpRequestLike): APIGatewayProxyStructuredResultV2 {
  const origins = (process.env.CORS_ORIGINS ?? "*").split(",").map((o) => o.trim());
  const origin = req.headers.origin ?? req.headers.Origin;
  const allow = origins.includes("*") ? "*" : origin && origins.includes(origin) ? origin : undefined;
  return {
    statusCode: 204,
    headers: {
      ...(allow ? { "access-control-allow-origin": allow } : {}),
      "access-control-allow-methods": "GET,POST,PUT,PATCH,DELETE,OPTIONS",
      "access-control-allow-headers": CORS_ALLOW_HEADERS.join(","),
      "access-control-max-age": "600",
      vary: "origin",
    },
  };
}

let securityHeaders: Promise<Record<string, string>> | undefined;

/**
 * An answer the gateway makes itself (no route, wrong method, body or headers too large): the service's error
 * envelope with a request id, and exactly the security headers a handler's answer carries, so a client sees the same
 * whichever layer answered. `code` is a core/error.ts code (REQUEST_HEADERS_TOO_LARGE and REQUEST_TIMEOUT are
 * answered by the gateway only).
 */
export async function gatewayAnswer(
  status: number,
  code: ErrorCode,
  detail: string,
  opts: { headers?: Record<string, string>; extra?: Record<string, unknown> } = {},
): Promise<APIGatewayProxyStructuredResultV2 & { body: string; headers: Record<string, string> }> {
  const request_id = randomUUID();
  return {
    statusCode: status,
    headers: { ...(await (securityHeaders ??= securityHeadersFor())), "content-type": "application/json", "x-request-id": request_id, ...opts.headers },
    body: JSON.stringify({ detail, code, request_id, ...opts.extra }),
  };
}

/**
 * What `bodyLimitOf` reads for a request: its route's limit fields, or none (GATEWAY_MAX_BODY_BYTES) for a path no route
 * serves, which is answered 404 or 405 once its body is in.
 */
export function bodyLimitSpec(method: string, path: string): Pick<RouteSpec, "bodyLimit" | "bodyType" | "bodyLimitHint"> {
  const match = matchRoute(method, path);
  return match && match !== "methodMismatch" ? match.spec : {};
}

/** A live response for streaming routes: where the bytes go as they are produced, and how to stop them. */
export interface LiveResponse {
  sink: StreamSink;
  /** Receives a function that destroys the response stream; call it when the client goes away. */
  onStream(destroy: () => void): void;
}

/**
 * Run a streaming (SSE) handler against `sink`. A client that goes away destroys the stream, which ends middy's
 * pipeline with a premature-close error: nothing is left to answer then, so that error is dropped.
 */
async function invokeStreaming(handler: StreamingHandler, event: APIGatewayProxyEventV2, context: Context, sink: StreamSink, onStream?: (destroy: () => void) => void) {
  const stream = new LocalResponseStream(sink);
  onStream?.(() => stream.destroy());
  try {
    await handler(event, stream, context);
  } catch (err) {
    if (!stream.destroyed) throw err;
  }
}

/**
 * Route a request as API Gateway would and invoke the group's handler. Unknown paths answer 404 and a known path
 * under another method 405 (with `Allow`), in the service's error envelope (`gatewayAnswer`). A streaming (SSE)
 * route writes to `live` as it produces when one is given (the gateway's socket, as a Function URL in
 * RESPONSE_STREAM mode would), and the call then answers undefined; without one its whole stream becomes one
 * buffered response (tests).
 */
export async function dispatch(req: HttpRequestLike): Promise<APIGatewayProxyStructuredResultV2>;
export async function dispatch(req: HttpRequestLike, live: LiveResponse): Promise<APIGatewayProxyStructuredResultV2 | undefined>;
export async function dispatch(req: HttpRequestLike, live?: LiveResponse): Promise<APIGatewayProxyStructuredResultV2 | undefined> {
  const match = matchRoute(req.method, req.path);
  if (req.method.toUpperCase() === "OPTIONS" && match === "methodMismatch") return preflight(req);
  if (match === null) return gatewayAnswer(404, "NOT_FOUND", `No route for ${req.path}`);
  if (match === "methodMismatch") {
    return gatewayAnswer(405, "METHOD_NOT_ALLOWED", `${req.method} is not allowed on ${req.path}`, { headers: { allow: allowedMethods(req.path).join(", ") } });
  }
  const handler = await groupHandler(match.spec.group);
  const event = toApiGatewayEvent(req, match.pathParameters, `${match.spec.method} ${match.spec.path}`);
  const context = lambdaContext(`http-${match.spec.group}`, timeoutOf(match.spec.group));
  if (isStreamingHandler(handler)) {
    if (live) {
      await invokeStreaming(handler, event, context, live.sink, live.onStream);
      return undefined;
    }
    let head: Prelude = {};
    const chunks: Buffer[] = [];
    await invokeStreaming(handler, event, context, { onHead: (p) => (head = p), onData: (c) => chunks.push(c), onEnd: () => undefined });
    return { statusCode: head.statusCode ?? 200, headers: head.headers ?? {}, body: Buffer.concat(chunks).toString("utf8") };
  }
  const result = await handler(event, context);
  return typeof result === "string" ? { statusCode: 200, body: result } : result;
}
