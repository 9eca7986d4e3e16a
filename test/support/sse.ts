import type { AddressInfo } from "node:net";
import type { Server } from "node:http";
import { readFileSync } from "node:fs";
import { createEventSource } from "eventsource-client";
import { startGateway } from "../../local/gateway";

/** Spec 02, the contract whose Events table names every stream event. */
export const SPEC_02 = new URL("../../../shared/spec/02-integrations-billing-streaming-tasks.md", import.meta.url);

/**
 * The event names of spec 02's Events table ("Stream format"), parsed from the spec itself, so the check below follows
 * the spec, not a copy of it. A row naming two events ("a / b") gives both.
 */
export function specEventNames(markdown = readFileSync(SPEC_02, "utf8")): Set<string> {
  const section = markdown.slice(markdown.indexOf("### Stream format"));
  const table = section.slice(section.indexOf("| Event |"), section.indexOf("\n\n", section.indexOf("| Event |")));
  const names = new Set<string>();
  for (const row of table.split("\n").slice(2)) {
    const cell = row.split("|")[1]?.trim() ?? "";
    for (const name of cell.split("/").map((n) => n.trim())) if (/^[a-z_]+$/.test(name)) names.add(name);
  }
  if (names.size < 10) throw new Error(`spec 02's Events table was not found or changed shape (read ${names.size} names)`);
  return names;
}

let specNames: Set<string> | undefined;
/**
 * Whether a name read off the wire is one the spec allows: a name of the Events table, or `message`, what an SSE
 * client calls an unnamed event (the task progress stream sends only those, spec 02).
 */
export const isSpecEvent = (name: string): boolean => name === "message" || (specNames ??= specEventNames()).has(name);

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
 * Every event name read is checked against spec 02's Events table (issue #21 point 3): a name outside it fails the
 * read, so every stream test that reads through here checks every event the service emitted for it.
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
        if (!isSpecEvent(e.event)) {
          finished = true;
          clearTimeout(timer);
          es.close();
          reject(new Error(`the stream sent "${e.event}", which is not an event of spec 02's Events table`));
          return;
        }
        events.push(e);
        opts.onEvent?.(e, finish);
        if (e.event === "done") finish();
      },
      onDisconnect: finish,
    });
  });
}

/**
 * The order a stream's events must keep (spec 02 Events; issue #21), as a state machine over the whole stream:
 * pre-flight first (`harness_complexity`, then `harness_workspace_profile`, then for a mission `harness_plan_selected`
 * and `mission_proposed`); each thread `agent_thread_start` → `harness_subtask_start` → its own events (tagged
 * `subtask_index`) → `harness_subtask_done` → `agent_thread_done`, once each, and only after the threads it depends
 * on are done; a mission's tokens after its last thread; `harness_contract` then `harness_verifier` per judgement,
 * `harness_retry` (quality) only between judgements, `harness_degraded` after the last (or right after a retry whose
 * rewrite was cut off, `answer_kept: "previous"`), `validation_sync` after that; `error` only followed by `context_metrics` and `done`; and the stream ends with `context_metrics`, `done`.
 * @returns the violations, in words (empty when the order is valid)
 */
export function orderProblems(events: WireEvent[]): string[] {
  const problems: string[] = [];
  const names = events.map((e) => e.event);
  const at = (i: number) => `#${i} ${names[i]}`;
  if (names.at(-1) !== "done") problems.push("the stream does not end with done");
  if (names.filter((n) => n === "done").length !== 1) problems.push("done is not sent exactly once");
  if (names.at(-2) !== "context_metrics" && names.includes("harness_complexity")) problems.push("context_metrics is not just before done");
  const firstError = names.indexOf("error");
  if (firstError >= 0 && names.slice(firstError + 1).some((n) => n !== "context_metrics" && n !== "done")) problems.push("events follow error other than context_metrics and done");
  if (names.includes("harness_complexity")) {
    if (names[0] !== "harness_complexity") problems.push("harness_complexity is not the first event");
    if (names[1] !== "harness_workspace_profile") problems.push("harness_workspace_profile does not follow harness_complexity");
  }
  const complexity = events.find((e) => e.event === "harness_complexity")?.data;
  const planAt = names.indexOf("harness_plan_selected");
  const missionAt = names.indexOf("mission_proposed");
  if (planAt >= 0 && complexity?.level !== "complex") problems.push("a plan was selected for a request not classified complex");
  if (missionAt >= 0 && planAt !== missionAt - 1) problems.push("mission_proposed does not follow harness_plan_selected");
  const mission = missionAt >= 0 ? events[missionAt]!.data : undefined;
  const swarmAt = names.indexOf("harness_swarm_activated");
  const subtasks: { index: number; depends_on: number[] }[] = mission?.subtasks ?? [];
  const state = new Map<number, "started" | "running" | "finished" | "done">();
  let lastThreadDone = -1;
  events.forEach((e, i) => {
    const k = e.data?.subtask_index as number | undefined;
    switch (e.event) {
      case "agent_thread_start": {
        if (missionAt < 0 && swarmAt < 0) problems.push(`${at(i)}: a thread starts without a mission or a swarm`);
        if (mission && e.data.mission_id !== mission.mission_id) problems.push(`${at(i)}: thread of another mission`);
        if (state.has(k!)) problems.push(`${at(i)}: subtask ${k} started twice`);
        for (const d of subtasks.find((s) => s.index === k)?.depends_on ?? []) if (state.get(d) !== "done") problems.push(`${at(i)}: subtask ${k} starts before subtask ${d} it depends on is done`);
        state.set(k!, "started");
        break;
      }
      case "harness_subtask_start":
        if (state.get(k!) !== "started") problems.push(`${at(i)}: subtask ${k} starts without its thread`);
        state.set(k!, "running");
        break;
      case "harness_subtask_done":
        if (state.get(k!) !== "running") problems.push(`${at(i)}: subtask ${k} done while not running`);
        state.set(k!, "finished");
        break;
      case "agent_thread_done":
        if (state.get(k!) !== "finished") problems.push(`${at(i)}: thread ${k} done before its subtask`);
        state.set(k!, "done");
        lastThreadDone = i;
        break;
      default:
        if (k !== undefined && state.get(k) !== "running") problems.push(`${at(i)}: an event of subtask ${k} outside its run`);
    }
  });
  for (const s of subtasks) if (state.get(s.index) !== "done") problems.push(`subtask ${s.index} never finished`);
  const lastFlags = events.filter((e) => e.event === "harness_subtask_done").map((e) => e.data.is_last);
  if (lastFlags.length && (lastFlags.at(-1) !== true || lastFlags.slice(0, -1).some(Boolean))) problems.push("is_last is not set on the last subtask_done only");
  if (missionAt >= 0 && names.slice(missionAt, lastThreadDone).includes("token")) problems.push("a mission's tokens stream before its last thread is done");
  const swarmDone = names.indexOf("harness_swarm_complete");
  if (swarmAt >= 0 && (swarmDone < 0 || swarmDone < lastThreadDone)) problems.push("harness_swarm_complete does not follow the swarm's threads");
  // Judgements: (contract, verifier) pairs; quality retries between pairs; degraded after the last; validation_sync last.
  const post = names.map((n, i) => ({ n, i, e: events[i]! })).filter((x) => ["harness_contract", "harness_verifier", "harness_degraded", "validation_sync"].includes(x.n) || (x.n === "harness_retry" && x.e.data?.kind === "quality"));
  let expect: string[] = ["harness_contract"];
  for (const { n, i, e } of post) {
    // A rewrite cut off before it finished is not judged: its degraded event (the answer before it kept) follows the retry.
    const cutRewrite = n === "harness_degraded" && e.data?.answer_kept === "previous" && names[post[post.findIndex((x) => x.i === i) - 1]?.i ?? -1] === "harness_retry";
    if (!expect.includes(n) && !cutRewrite) problems.push(`${at(i)}: expected ${expect.join(" or ")}`);
    expect = n === "harness_contract" ? ["harness_verifier"] : n === "harness_verifier" ? ["harness_retry", "harness_degraded", "validation_sync"] : n === "harness_retry" ? ["harness_contract"] : n === "harness_degraded" ? ["validation_sync"] : [];
  }
  if (post.length && post.at(-1)!.n !== "validation_sync") problems.push("the post-flight does not end with validation_sync");
  const doneEvent = events.at(-1);
  if (mission && doneEvent?.event === "done" && doneEvent.data.mission_id !== mission.mission_id) problems.push("done does not carry the mission's id");
  return problems;
}
