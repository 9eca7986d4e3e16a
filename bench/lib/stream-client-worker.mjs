// The load generator's thread (bench/lib/stream-client.ts): fetch + eventsource-parser, as local/demo.ts reads a
// stream, on an event loop of its own so the client's parsing and socket reads do not queue behind the server's work.
// Times are epoch milliseconds (performance.timeOrigin + performance.now()), which the caller maps to its own clock.
import { parentPort } from "node:worker_threads";
import { createParser } from "eventsource-parser";

const now = () => performance.timeOrigin + performance.now();

/** POST one chat stream and read it to its end; never throws for the stream's own outcome. */
async function stream({ url, token, body, timeoutMs }) {
  const sentAt = now();
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok || !res.body) return { sentAt, status: res.status, endAt: now(), events: [], body: await res.text() };
    const out = { sentAt, status: res.status, endAt: 0, events: [] };
    const parser = createParser({
      onEvent: (e) => {
        const event = e.event ?? "message";
        if (event === "token" && out.firstTokenAt === undefined) out.firstTokenAt = now();
        out.events.push({ event, data: JSON.parse(e.data) });
      },
    });
    const decoder = new TextDecoder();
    for await (const chunk of res.body) {
      out.firstByteAt ??= now();
      parser.feed(decoder.decode(chunk, { stream: true }));
    }
    out.endAt = now();
    return out;
  } catch (err) {
    return { sentAt, status: 0, endAt: now(), events: [], body: String(err) };
  }
}

/** GET one JSON route and read its body. */
async function get({ url, token }) {
  const sentAt = now();
  try {
    const res = await fetch(url, { headers: { authorization: `Bearer ${token}` } });
    const body = await res.text();
    return { sentAt, status: res.status, endAt: now(), events: [], body: res.ok ? undefined : body };
  } catch (err) {
    return { sentAt, status: 0, endAt: now(), events: [], body: String(err) };
  }
}

parentPort.on("message", async ({ id, kind, requests }) => {
  const one = kind === "stream" ? stream : get;
  const results = await Promise.all(requests.map(one));
  parentPort.postMessage({ id, results });
});
