/**
 * Thinking benchmark: what a person waits for before the copilot shows that it is thinking, and before its first
 * words, on the Bedrock engine with extended thinking (`effort: max`), issue #18.
 *
 *   npm run bench -- thinking
 *
 * The service runs in this process on the Bedrock engine; its Bedrock SDK client talks over HTTP/2 to a stand-in
 * Bedrock Runtime on loopback (test/support/bedrock-server.ts) that answers every ConverseStream with a public
 * recording of a real Claude Sonnet 4 thinking stream (test/fixtures/bedrock-recorded/claude-sonnet-4-thinking-text.json),
 * all frames at once. So the figures are the service's own latency: the reservation, the conversation, the system
 * prompt, the SDK's request and decoding, the agent loop and the SSE writer (tokens are batched every 50 ms), not the
 * model's thinking time. Each stream is read with fetch + eventsource-parser; a run is POST to the first `thinking`
 * event, to the first `token` event, and to `done`. 60 runs one after another after 3 warm-ups (smoke: 2 after 1).
 */
import { createParser } from "eventsource-parser";
import { startBenchRuntime } from "./lib/runtime";
import { simulatePaidUpgrade } from "./lib/billing";
import { fmtMs, printTable, Recorder } from "./lib/stats";
import { busyWarning, machineLine } from "./lib/machine";
import { sized, sizeNote } from "./lib/size";
import { recorded } from "../test/support/bedrock-stream";
import { startBedrockServer } from "../test/support/bedrock-server";

const WARMUP = sized(3, 1);
const RUNS = sized(60, 2);
const RECORDING = "claude-sonnet-4-thinking-text.json";

interface Timing {
  thinkingMs?: number;
  tokenMs?: number;
  doneMs?: number;
  events: string[];
}

async function thinkingRun(base: string, token: string, workspaceId: string): Promise<Timing> {
  const start = performance.now();
  const res = await fetch(new URL("/api/stream/chat", base), {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ workspace_id: workspaceId, prompt: "Which problem should we fix first, and why?", effort: "max" }),
    signal: AbortSignal.timeout(30_000),
  });
  if (!res.ok || !res.body) throw new Error(`stream refused: HTTP ${res.status} ${await res.text()}`);
  const out: Timing = { events: [] };
  const parser = createParser({
    onEvent: (e) => {
      const event = e.event ?? "message";
      const at = performance.now() - start;
      out.events.push(event);
      if (event === "thinking") out.thinkingMs ??= at;
      if (event === "token") out.tokenMs ??= at;
      if (event === "done") out.doneMs = at;
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  if (out.thinkingMs === undefined || out.tokenMs === undefined || out.doneMs === undefined) {
    throw new Error(`a thinking run did not stream thinking, tokens and done: ${out.events.join(",")}`);
  }
  return out;
}

export default async function thinking(): Promise<void> {
  const bedrock = await startBedrockServer();
  // Before the runtime loads the engine: the Bedrock engine, its client pointed at the stand-in.
  Object.assign(process.env, {
    AI_ENGINE: "bedrock",
    AWS_ENDPOINT_URL_BEDROCK_RUNTIME: bedrock.url,
    AWS_ACCESS_KEY_ID: "AKIDBENCHSTANDIN",
    AWS_SECRET_ACCESS_KEY: "bench-stand-in-secret",
    AWS_REGION: "us-east-1",
  });
  const rt = await startBenchRuntime({ tableName: "r2d-bench-thinking", bucketName: "r2d-bench-thinking" });
  try {
    const token = await rt.idp.sign({ email: "thinking@bench.local", name: "Thinking Bench" });
    const ws = await fetch(new URL("/api/workspaces", rt.base), {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify({ name: "Thinking bench", product_name: "Jupyter" }),
    });
    const workspace = (await ws.json()) as { id: string };
    if (ws.status !== 201) throw new Error(`workspace: HTTP ${ws.status}`);
    // Thinking on the large model reserves more than a trial holds: a paid plan, bought the way a user would.
    await simulatePaidUpgrade(rt, { token, workspaceId: workspace.id, plan: "power" });

    const frames = recorded(RECORDING).frames;
    const first = { thinking: new Recorder(), token: new Recorder(), done: new Recorder() };
    for (let i = 0; i < WARMUP + RUNS; i++) {
      bedrock.reply({ frames });
      const t = await thinkingRun(rt.base, token, workspace.id);
      if (i < WARMUP) continue;
      first.thinking.record(t.thinkingMs!);
      first.token.record(t.tokenMs!);
      first.done.record(t.doneMs!);
    }

    console.log(`\nThinking runs (effort max) on a recorded Claude Sonnet 4 stream through the stand-in Bedrock (${RECORDING})`);
    console.log(machineLine());
    const note = sizeNote();
    if (note) console.log(note);
    const busy = busyWarning();
    if (busy) console.log(busy);
    printTable(
      ["POST to", "n", "p50 ms", "p90 ms", "p99 ms", "max ms"],
      (Object.entries(first) as [string, Recorder][]).map(([name, r]) => {
        const s = r.summary();
        return [name === "done" ? "done" : `first ${name} event`, s.n, fmtMs(s.p50), fmtMs(s.p90), fmtMs(s.p99), fmtMs(s.max)];
      }),
    );
  } finally {
    await rt.stop();
    await bedrock.close();
  }
}
