import { Client } from "undici";

export interface BenchResponse {
  status: number;
  body: string;
}

/**
 * A keep-alive HTTP/1.1 client for sequential benchmark requests (undici, one connection, no pipelining).
 * Refuses any origin that is not loopback: benchmark load goes only to 127.0.0.1.
 */
export class LoopbackClient {
  private readonly client: Client;

  constructor(readonly base: string) {
    const url = new URL(base);
    if (url.hostname !== "127.0.0.1") throw new Error(`Benchmarks only load 127.0.0.1, not ${url.hostname}`);
    this.client = new Client(url.origin, { pipelining: 1, keepAliveTimeout: 30_000 });
  }

  /** Send one request and read the whole body. */
  async request(method: string, path: string, opts: { token?: string; json?: unknown } = {}): Promise<BenchResponse> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    let body: string | undefined;
    if (opts.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(opts.json);
    }
    const res = await this.client.request({ method: method as "GET", path, headers, body });
    return { status: res.statusCode, body: await res.body.text() };
  }

  /** Send one request, demand `expect` status, and parse the JSON body. */
  async json<T>(method: string, path: string, expect: number, opts: { token?: string; json?: unknown } = {}): Promise<T> {
    const res = await this.request(method, path, opts);
    if (res.status !== expect) throw new Error(`${method} ${path}: expected ${expect}, got ${res.status}: ${res.body.slice(0, 300)}`);
    return JSON.parse(res.body) as T;
  }

  close(): Promise<void> {
    return this.client.close();
  }
}
