import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, extname, join, relative, resolve } from "node:path";
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import { createParser } from "eventsource-parser";
import { ephemeralIdp, devIdp, type DevIdp } from "./idp";
import { applyLocalEnv } from "./env";
import { ensureTable, freePort, PrerequisiteError, startDynamoLocal } from "./dynamodb";
import { startS3 } from "./s3";
import { startGateway } from "./gateway";
import { wireLocalEvents } from "./events";
import { MULTIPART_MAX_BYTES } from "../core/research/schema";

/**
 * `npm run demo -- [--folder jupyter] [--url http://127.0.0.1:3000] [--until ingest|synthesize|recommend|chat|all]`
 *
 * Loads a workspace from a folder of ../shared/realdata through the public API and walks the whole
 * research-to-delivery path: upload (progress bar, per-source summary), synthesize, generate recommendations,
 * accept the top one, draft a PRD, extract its blocks, challenge one, save a version, edit, diff, restore, and
 * publish. Without --url it starts the embedded runtime in-process on temporary storage.
 */

const MIME: Record<string, string> = {
  ".pdf": "application/pdf",
  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
  ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
  ".csv": "text/csv",
  ".json": "application/json",
  ".md": "text/markdown",
  ".txt": "text/plain",
  ".vtt": "text/vtt",
  ".srt": "application/x-subrip",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".tif": "image/tiff",
  ".tiff": "image/tiff",
  ".mp3": "audio/mpeg",
  ".wav": "audio/wav",
  ".mp4": "video/mp4",
  ".webm": "video/webm",
};

/** A research source type guessed from where the file sits in the folder (the demo's only heuristic). */
function sourceTypeOf(path: string): string {
  const p = path.toLowerCase();
  if (p.includes("survey")) return "survey";
  if (p.includes("ticket") || p.includes("issues")) return "support_ticket";
  if (p.includes("review")) return "feedback";
  if (p.includes("interview") || p.includes("transcript") || p.endsWith(".vtt") || p.includes("usability")) return "interview";
  if (p.endsWith(".mp3") || p.endsWith(".wav")) return "interview";
  return "other";
}

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await filesUnder(full)));
    else if (MIME[extname(entry.name).toLowerCase()] && entry.name !== "MANIFEST.md" && !entry.name.includes("reference-transcript")) out.push(full);
  }
  return out.sort();
}

class Api {
  constructor(readonly base: string, readonly token: string) {}
  async json<T = any>(method: string, path: string, body?: unknown, query?: Record<string, string | number>): Promise<T> {
    const url = new URL(path, this.base);
    for (const [k, v] of Object.entries(query ?? {})) url.searchParams.set(k, String(v));
    const res = await fetch(url, {
      method,
      headers: { authorization: `Bearer ${this.token}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${method} ${path} -> ${res.status}: ${text}`);
    return (text ? JSON.parse(text) : undefined) as T;
  }
  async upload(workspaceId: string, file: string, data: Buffer, type: string, sourceType: string) {
    const title = basename(file);
    if (data.length <= MULTIPART_MAX_BYTES) {
      const form = new FormData();
      form.append("workspace_id", workspaceId);
      form.append("source_type", sourceType);
      form.append("title", title);
      form.append("file", new Blob([new Uint8Array(data)], { type }), title);
      const res = await fetch(new URL("/api/research/upload", this.base), { method: "POST", headers: { authorization: `Bearer ${this.token}` }, body: form });
      if (!res.ok) throw new Error(`upload ${title} -> ${res.status}: ${await res.text()}`);
      return (await res.json()) as { id: string };
    }
    // Above the gateway's payload limit: presigned POST straight to the bucket.
    const { source, upload } = await this.json("POST", "/api/research/upload-url", {
      workspace_id: workspaceId, source_type: sourceType, title, file_name: title, content_type: type, file_size_bytes: data.length,
    });
    const form = new FormData();
    for (const [k, v] of Object.entries(upload.fields as Record<string, string>)) form.append(k, v);
    form.append("file", new Blob([new Uint8Array(data)], { type }), title);
    const res = await fetch(upload.url, { method: "POST", body: form });
    if (!res.ok) throw new Error(`presigned upload ${title} -> ${res.status}: ${await res.text()}`);
    return source as { id: string };
  }
}

const hr = (title: string) => console.log(`\n=== ${title} ${"=".repeat(Math.max(0, 70 - title.length))}`);
const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

async function startEmbedded(): Promise<{ base: string; idp: DevIdp; stop: () => Promise<void> }> {
  const dir = await mkdtemp(join(tmpdir(), "r2d-demo-"));
  const [dynamo, idp, port] = await Promise.all([startDynamoLocal(), ephemeralIdp(), freePort()]);
  await ensureTable(dynamo.endpoint, "r2d-demo");
  const s3 = await startS3({ directory: join(dir, "s3"), bucket: "r2d-demo-uploads" });
  applyLocalEnv({ dynamoEndpoint: dynamo.endpoint, s3Endpoint: s3.endpoint, idp, tableName: "r2d-demo", bucketName: "r2d-demo-uploads" });
  process.env.LOG_LEVEL ??= "ERROR";
  process.env.POWERTOOLS_LOG_LEVEL ??= "ERROR";
  wireLocalEvents(s3);
  // Approved pending actions execute from the table's stream, as in `npm start` (DESIGN.md 6.2).
  const { startLocalStreams } = await import("./streams");
  const pendingActions = await startLocalStreams({ endpoint: dynamo.endpoint, tableName: "r2d-demo" });
  const server = await startGateway(port);
  return {
    base: `http://127.0.0.1:${port}`,
    idp,
    stop: async () => {
      await pendingActions.stop();
      await (await import("../core/extract")).shutdownEngines();
      await new Promise((r) => server.close(r));
      await s3.stop();
      await dynamo.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Print one SSE event as a person would want to read it. */
let midAnswer = false;
function printEvent(event: string, data: any) {
  // Token text is printed as it arrives; the next event starts on a line of its own.
  if (event !== "token" && midAnswer) process.stdout.write("\n");
  midAnswer = event === "token";
  if (event === "token") process.stdout.write(data.content);
  else if (event === "tool_use") console.log(`  [tool] ${data.name} ${data.input_summary}`);
  else if (event === "tool_result") console.log(`  [${data.status}] ${data.name} in ${data.duration_ms} ms${data.pending_action_id ? ` -> pending action ${data.pending_action_id}` : ""}`);
  else if (event === "turn") console.log(`  [turn ${data.turn}] ${data.total_tools} tools so far`);
  else if (event === "done") console.log(`\n  [done] ${data.num_turns} turns, ${data.tool_count} tools, ${data.duration_ms} ms, ${data.credits} credits (model ${data.model})`);
  else console.log(`  [${event}] ${JSON.stringify(data)}`);
}

/** Ask the copilot over SSE (read with eventsource-parser, as any fetch-based SSE client would) and print the stream. */
async function ask(api: Api, workspaceId: string, prompt: string, conversationId?: string) {
  console.log(`\n> ${prompt}\n`);
  const res = await fetch(new URL("/api/stream/chat", api.base), {
    method: "POST",
    headers: { authorization: `Bearer ${api.token}`, "content-type": "application/json" },
    body: JSON.stringify({ workspace_id: workspaceId, prompt, ...(conversationId ? { conversation_id: conversationId } : {}) }),
  });
  if (!res.ok || !res.body) throw new Error(`stream -> ${res.status}: ${await res.text()}`);
  const events: { event: string; data: any }[] = [];
  const parser = createParser({
    onEvent: (e) => {
      const ev = { event: e.event ?? "message", data: JSON.parse(e.data) };
      events.push(ev);
      printEvent(ev.event, ev.data);
    },
  });
  const decoder = new TextDecoder();
  for await (const chunk of res.body) parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
  return events;
}

/** The copilot step: a question, a request to draft (held as a pending action), its approval, and the result. */
async function copilot(api: Api, workspaceId: string, topTitle: string) {
  const first = await ask(api, workspaceId, "What do users struggle with?");
  const conversationId = first.find((e) => e.event === "done")?.data.conversation_id;
  const second = await ask(api, workspaceId, `Draft a PRD for "${topTitle}"`, conversationId);
  const queued = second.find((e) => e.event === "tool_result" && e.data.status === "queued")?.data;
  if (!queued) throw new Error("The copilot did not queue a draft");
  console.log(`\nPending action ${queued.pending_action_id}: ${queued.preview.summary}. Approving it...`);
  const t = Date.now();
  await api.json("POST", `/api/pending-actions/${queued.pending_action_id}/approve`, {});
  let action: any;
  for (;;) {
    action = await api.json("GET", `/api/pending-actions/${queued.pending_action_id}`);
    if (action.status === "executed" || action.status === "failed") break;
    if (Date.now() - t > 120_000) throw new Error(`The approved action is still ${action.status} after 120 s`);
    await new Promise((r) => setTimeout(r, 100));
  }
  if (action.status === "failed") throw new Error(`The approved action failed: ${action.error}`);
  const doc = await api.json("GET", `/api/documents/${action.result.document_id}`);
  console.log(`Executed in ${seconds(Date.now() - t)}: the copilot's draft "${doc.title}" (${doc.document_type}, ${doc.status}, ${doc.content.length} characters) is document ${doc.id}.`);
}

async function main() {
  const { values } = parseArgs({
    options: { folder: { type: "string", default: "jupyter" }, url: { type: "string" }, until: { type: "string", default: "all" }, data: { type: "string" } },
  });
  const folder = resolve(new URL("../../shared/realdata/", import.meta.url).pathname, values.folder!);
  const files = await filesUnder(folder);
  if (files.length === 0) throw new Error(`No research files under ${folder}`);

  const embedded = values.url ? null : await startEmbedded();
  const base = values.url ?? embedded!.base;
  const idp = embedded?.idp ?? (await devIdp(resolve(values.data ?? ".data")));
  const api = new Api(base, await idp.sign({ email: "demo@example.com", name: "Demo PM" }));
  try {
    hr(`Ingest ${relative(process.cwd(), folder)} (${files.length} files) through ${base}`);
    const ws = await api.json("POST", "/api/workspaces", { name: `Demo: ${values.folder}`, product_name: values.folder === "jupyter" ? "Jupyter" : "VA: Health and Benefits" });
    const t0 = Date.now();
    const started = new Map<string, { file: string; at: number; done?: number; body?: any }>();
    const bar = new cliProgress.SingleBar({ format: " {bar} {value}/{total} sources processed | {file}", hideCursor: true }, cliProgress.Presets.shades_classic);
    bar.start(files.length, 0, { file: "" });
    for (const file of files) {
      const data = await readFile(file);
      const type = MIME[extname(file).toLowerCase()]!;
      const source = await api.upload(ws.id, relative(folder, file), data, type, sourceTypeOf(relative(folder, file)));
      started.set(source.id, { file: relative(folder, file), at: Date.now() });
      bar.update({ file: `uploaded ${basename(file)}` });
    }
    for (;;) {
      const { sources } = await api.json("GET", "/api/research/sources", undefined, { workspace_id: ws.id, limit: 500 });
      for (const s of sources) {
        const entry = started.get(s.id);
        if (entry && !entry.done && s.processing_status !== "pending") {
          entry.done = Date.now();
          entry.body = s;
        }
      }
      const finished = [...started.values()].filter((e) => e.done).length;
      bar.update(finished, { file: finished === files.length ? "done" : "extracting..." });
      if (finished === files.length) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    bar.stop();
    console.log(`\n${"source".padEnd(62)} ${"type".padEnd(15)} ${"status".padEnd(10)} ${"chars".padStart(9)} ${"time".padStart(8)}`);
    for (const e of started.values()) {
      const s = e.body;
      console.log(`${e.file.slice(0, 61).padEnd(62)} ${s.source_type.padEnd(15)} ${s.processing_status.padEnd(10)} ${String(s.char_count ?? "-").padStart(9)} ${seconds(e.done! - e.at).padStart(8)}`);
      if (s.processing_error) console.log(`    reason: ${s.processing_error}`);
    }
    console.log(`All sources settled in ${seconds(Date.now() - t0)}.`);
    if (values.until === "ingest") return;

    hr("Synthesize");
    const completed = [...started.values()].filter((e) => e.body.processing_status === "completed").map((e) => e.body.id);
    // Mentions are embedded once per source after extraction (the Index step); synthesis is fastest once that is done.
    const tIndex = Date.now();
    for (;;) {
      const { sources } = await api.json("GET", "/api/research/sources", undefined, { workspace_id: ws.id, limit: 500 });
      const waiting = sources.filter((s: any) => completed.includes(s.id) && !s.indexed).length;
      if (waiting === 0 || Date.now() - tIndex > 600_000) break;
      process.stdout.write(`\rEmbedding mentions for synthesis: ${completed.length - waiting}/${completed.length} sources indexed`);
      await new Promise((r) => setTimeout(r, 1000));
    }
    console.log(`\rAll sources indexed for synthesis in ${seconds(Date.now() - tIndex)}.${" ".repeat(30)}`);
    const t1 = Date.now();
    const syn = await api.json("POST", "/api/research/synthesize", { workspace_id: ws.id, source_ids: completed });
    console.log(`${syn.insights.length} insights in ${seconds(Date.now() - t1)} (${syn.engine} engine). ${syn.summary}\n`);
    for (const i of syn.insights) {
      console.log(`- [${i.insight_type}, ${i.severity}] ${i.title}  (sources ${i.frequency}, mentions ${i.mention_count})`);
      const q = i.quotes[0];
      if (q) console.log(`    "${q.text.slice(0, 160)}${q.text.length > 160 ? "..." : ""}"${q.speaker ? ` — ${q.speaker}` : ""}`);
    }
    if (values.until === "synthesize") return;

    hr("Recommendations");
    const t2 = Date.now();
    const gen = await api.json("POST", "/api/recommendations/generate", { workspace_id: ws.id, insight_ids: syn.insight_ids.slice(0, 40) });
    console.log(`${gen.count} recommendations from ${Math.min(40, syn.insight_ids.length)} insights in ${seconds(Date.now() - t2)}\n`);
    for (const [k, r] of gen.recommendations.entries()) {
      console.log(`${k + 1}. ${r.title}  (impact ${r.impact_score}, effort ${r.effort_estimate} / ${r.effort_weeks} wk)`);
    }
    console.log(`\n${gen.prioritization_summary}`);
    const top = gen.recommendations[0];
    await api.json("PATCH", `/api/recommendations/${top.id}/status`, { status: "accepted", user_notes: "Accepted in the demo" });
    console.log(`\nAccepted: ${top.title}`);
    if (values.until === "recommend") return;

    hr("Copilot");
    await copilot(api, ws.id, top.title);
    if (values.until === "chat") return;

    hr("PRD");
    const t3 = Date.now();
    const doc = await api.json("POST", "/api/documents/draft", { workspace_id: ws.id, document_type: "prd", recommendation_id: top.id });
    console.log(`Drafted in ${seconds(Date.now() - t3)}.`);
    const { blocks, count } = await api.json("POST", "/api/blocks/extract", { workspace_id: ws.id, document_id: doc.id });
    console.log(`Drafted "${doc.title}" and extracted ${count} typed blocks: ${blocks.map((b: any) => b.block_type).join(", ")}`);
    const target = blocks.find((b: any) => b.block_type === "solution") ?? blocks[0];
    const critique = await api.json("POST", `/api/blocks/${target.id}/challenge`);
    console.log(`\nChallenge of the ${target.block_type} block "${target.title}":`);
    for (const key of ["strengths", "weaknesses", "questions", "suggestions"]) {
      for (const line of (critique[key] as string[]).slice(0, 2)) console.log(`  ${key}: ${line}`);
    }
    const v1 = await api.json("POST", `/api/documents/${doc.id}/versions`, { change_summary: "Draft reviewed" });
    await api.json("PATCH", `/api/documents/${doc.id}`, { content: `${doc.content}\n\n## Decision log\n\n- Scope agreed in the demo review.\n` });
    const v2 = await api.json("POST", `/api/documents/${doc.id}/versions`, { change_summary: "Added decision log" });
    const diff = await api.json("GET", `/api/documents/${doc.id}/diff`, undefined, { from_revision: v1.revision_number, to_revision: v2.revision_number });
    console.log(`\nRevisions ${v1.revision_number} -> ${v2.revision_number}: +${diff.diff_stats.additions} -${diff.diff_stats.deletions} ~${diff.diff_stats.changes}`);
    const restored = await api.json("POST", `/api/documents/${doc.id}/versions/${v1.id}/restore`, { change_summary: "Back to the reviewed draft" });
    console.log(`Restored revision ${v1.revision_number} (snapshots ${restored.before_revision.revision_number} and ${restored.after_revision.revision_number}).`);
    for (const s of ["review", "approved", "published"]) await api.json("POST", `/api/documents/${doc.id}/status`, { target_status: s });
    const final = await api.json("GET", `/api/documents/${doc.id}`);
    console.log(`Status: ${final.status}.\n`);
    console.log(final.content);
  } finally {
    await embedded?.stop();
  }
}

main()
  .then(() => process.exit(0))
  .catch((err: unknown) => {
    console.error(err instanceof PrerequisiteError ? err.message : err);
    process.exit(1);
  });
