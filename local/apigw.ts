import { randomUUID } from "node:crypto";
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2, APIGatewayProxyStructuredResultV2, Context } from "aws-lambda";
import { matchRoute, timeoutOf } from "../functions/http/routes";
import { installAwsLambdaShim, isStreamingHandler, LocalResponseStream, type Prelude } from "./streaming";

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

/** Where a streaming route's response goes: the live socket (gateway) or a buffer (`dispatch`). */
export interface StreamSink {
  onHead(prelude: Prelude): void;
  onData(chunk: Buffer): void;
  onEnd(): void;
}
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
      "access-control-allow-headers": "authorization,content-type",
      "access-control-max-age": "600",
      vary: "origin",
    },
  };
}

/**
 * Route a request as API Gateway would and invoke the group's handler. Unknown paths answer 404 and a known path
 * under another method 405, in the service's error envelope.
 */
export async function dispatch(req: HttpRequestLike): Promise<APIGatewayProxyStructuredResultV2> {
  const match = matchRoute(req.method, req.path);
  if (req.method.toUpperCase() === "OPTIONS" && match === "methodMismatch") return preflight(req);
  if (match === null || match === "methodMismatch") {
    const status = match === null ? 404 : 405;
    const code = match === null ? "NOT_FOUND" : "METHOD_NOT_ALLOWED";
    const detail = match === null ? `No route for ${req.path}` : `${req.method} is not allowed on ${req.path}`;
    const request_id = randomUUID();
    return {
      statusCode: status,
      headers: { "content-type": "application/json", "x-request-id": request_id },
      body: JSON.stringify({ detail, code, request_id }),
    };
  }
  const handler = await groupHandler(match.spec.group);
  const event = toApiGatewayEvent(req, match.pathParameters, `${match.spec.method} ${match.spec.path}`);
  const context = lambdaContext(`http-${match.spec.group}`, timeoutOf(match.spec.group));
  if (isStreamingHandler(handler)) {
    // Buffered: the whole stream becomes one response (tests of errors before a stream opens; live SSE goes through
    // `dispatchStreaming`).
    let head: Prelude = {};
    const chunks: Buffer[] = [];
    const stream = new LocalResponseStream({ onHead: (p) => (head = p), onData: (c) => chunks.push(c), onEnd: () => undefined });
    await handler(event, stream, context);
    const body = Buffer.concat(chunks).toString("utf8");
    return { statusCode: head.statusCode ?? 200, headers: head.headers ?? {}, body };
  }
  const result = await handler(event, context);
  return typeof result === "string" ? { statusCode: 200, body: result } : result;
}

/**
 * Like `dispatch`, but a streaming route writes to `sink` as it produces (the local gateway's SSE path); `abort`
 * destroys the response stream when the client goes away, which middy's pipeline passes on to the handler's body.
 * @returns false when the route is not a streaming one (the caller uses `dispatch`).
 */
export async function dispatchStreaming(req: HttpRequestLike, sink: StreamSink, onStream: (destroy: () => void) => void): Promise<boolean> {
  const match = matchRoute(req.method, req.path);
  if (match === null || match === "methodMismatch" || !match.spec.streaming) return false;
  const handler = await groupHandler(match.spec.group);
  if (!isStreamingHandler(handler)) return false;
  const event = toApiGatewayEvent(req, match.pathParameters, `${match.spec.method} ${match.spec.path}`);
  const stream = new LocalResponseStream(sink);
  onStream(() => stream.destroy());
  try {
    await handler(event, stream, lambdaContext(`http-${match.spec.group}`, timeoutOf(match.spec.group)));
  } catch (err) {
    // A client that went away ends the pipeline with a premature-close error: nothing is left to answer.
    if (!stream.destroyed) throw err;
  }
  return true;
}
