import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { createEventSource } from "eventsource-client";
import { startGateway } from "../../local/gateway";

/** One event as an SSE client library parsed it off the wire. */
export interface WireEvent {
  event: string;
  data: any;
}

/** The local gateway on a free loopback port, for tests that read streams over a real socket. */
export async function liveGateway(): Promise<{ base: string; server: Server; close(): Promise<void> }> {
  const server = await startGateway(0);
  const { port } = server.address() as AddressInfo;
  return { base: `http://127.0.0.1:${port}`, server, close: () => new Promise((r) => server.close(() => r())) };
}

/**
 * POST a stream request and read it with `eventsource-client` (a real SSE client: fetch-based, so it can send the
 * bearer token and a body) until `done` or the server closes. Never reconnects: the first disconnect ends it.
 */
export function readStream(base: string, path: string, token: string, body: unknown, opts: { onEvent?: (e: WireEvent, close: () => void) => void; timeoutMs?: number } = {}): Promise<WireEvent[]> {
  return new Promise((resolve, reject) => {
    const events: WireEvent[] = [];
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearTimeout(timer);
      es.close();
      resolve(events);
    };
    const timer = setTimeout(() => {
      finished = true;
      es.close();
      reject(new Error(`stream did not finish in time; got ${events.map((e) => e.event).join(",")}`));
    }, opts.timeoutMs ?? 60_000);
    const es = createEventSource({
      url: `${base}${path}`,
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
      onMessage: (m) => {
        const e = { event: m.event ?? "message", data: JSON.parse(m.data) };
        events.push(e);
        opts.onEvent?.(e, finish);
        if (e.event === "done") finish();
      },
      onDisconnect: finish,
    });
  });
}
