/**
 * Integrations benchmark (issue #20): execution tickets pushed to and synced from each tracker, against the stand-in
 * providers (test/support/{github,linear,jira}-standin.ts: msw in this process, the real Octokit, @linear/sdk and
 * jira.js clients unchanged), through the public API of the embedded runtime.
 *
 *   npm run bench -- integrations      (or: npx tsx bench/integrations.ts)
 *
 * Per provider:
 * - push of 50 reviewed tickets (POST /api/execution/push; the rest of a push goes to the integrations queue past the
 *   request's budget or a rate limit, so the wall time runs until the queue is idle): wall time, requests sent to the
 *   provider, content-creating requests, and for GitHub the largest number of them in any 60 s window (target ≤ 80:
 *   GitHub's secondary limit).
 * - sync of 500 linked issues (tickets already pushed, their issues seeded at the provider): a first pass (every
 *   issue read) and a second with nothing changed. GitHub reads each issue with its ETag (a 304 costs no rate limit:
 *   target, almost every request of the second pass a 304); Linear and Jira read in batches (one GraphQL query per
 *   250 issues, one JQL search per 100).
 * The stand-ins answer at once: wall times are our own cost plus Octokit's pacing of creations, not a provider's.
 */
import { randomUUID } from "node:crypto";
import { setupServer } from "msw/node";
import { startBenchRuntime, type BenchRuntime } from "./lib/runtime";
import { busyWarning, machineLine } from "./lib/machine";
import { printTable } from "./lib/stats";
import { sized, sizeNote } from "./lib/size";
import { GHE_API, GHE_WEB, GitHubStandIn } from "../test/support/github-standin";
import { LINEAR_API, LINEAR_WEB, LinearStandIn } from "../test/support/linear-standin";
import { ATLASSIAN_API, ATLASSIAN_AUTH, JiraStandIn } from "../test/support/jira-standin";

const PUSH_N = sized(50, 3);
const SYNC_N = sized(500, 10);
/** No phase waits longer than this for the queue (a hung provider must not hang the benchmark). */
const PHASE_DEADLINE_MS = sized(900_000, 120_000);
const REPO = "bench-org/bench-repo";
const API_URL = "https://api.r2d.test";
const APP_URL = "https://app.r2d.test";

type Kind = "codehost" | "planner" | "tickets";
interface Sent {
  host: string;
  method: string;
  path: string;
  status: number;
  at: number;
}

/** The largest number of `times` (ms) inside any window of `windowMs`. */
function maxInWindow(times: number[], windowMs: number): number {
  let best = 0;
  for (let i = 0, j = 0; i < times.length; i++) {
    while (times[i]! - times[j]! >= windowMs) j++;
    best = Math.max(best, i - j + 1);
  }
  return best;
}

const secs = (ms: number) => (ms / 1000).toFixed(1);

export default async function integrations(): Promise<void> {
  console.log(`integrations benchmark: push ${PUSH_N} tickets, sync ${SYNC_N} linked issues, per provider`);
  const note = sizeNote();
  if (note) console.log(note);
  console.log(machineLine());
  const busy = busyWarning();
  if (busy) console.log(busy);

  const github = new GitHubStandIn([REPO]);
  const linear = new LinearStandIn();
  const jira = new JiraStandIn(2);
  Object.assign(process.env, {
    GITHUB_API_URL: GHE_API, GITHUB_WEB_URL: GHE_WEB, GITHUB_CLIENT_ID: github.clientId, GITHUB_CLIENT_SECRET: github.clientSecret,
    LINEAR_API_URL: LINEAR_API, LINEAR_WEB_URL: LINEAR_WEB, LINEAR_CLIENT_ID: linear.clientId, LINEAR_CLIENT_SECRET: linear.clientSecret,
    ATLASSIAN_AUTH_URL: ATLASSIAN_AUTH, ATLASSIAN_API_URL: ATLASSIAN_API, ATLASSIAN_CLIENT_ID: jira.clientId, ATLASSIAN_CLIENT_SECRET: jira.clientSecret,
    API_URL, APP_URL,
  });
  // One msw server for the three (servers do not compose); the benchmark's own loopback requests pass through.
  const server = setupServer(...github.mswHandlers(), ...linear.mswHandlers(), ...jira.mswHandlers());
  const sent: Sent[] = [];
  server.events.on("response:mocked", ({ request, response }) => {
    const u = new URL(request.url);
    sent.push({ host: u.host, method: request.method, path: u.pathname, status: response.status, at: performance.now() });
  });
  server.listen({ onUnhandledFrame: "bypass" });

  let rt: BenchRuntime | undefined;
  try {
    rt = await startBenchRuntime({ tableName: "r2d-bench-integrations" });
    const base = rt.base;
    const { localIntegrationsQueue } = await import("../local/events");
    const { db } = await import("../core/db/service");

    const token = await rt.idp.sign({ email: `bench-${randomUUID().slice(0, 8)}@example.com`, name: "Bench" });
    async function api<T = any>(method: string, path: string, expect: number, body?: unknown): Promise<T> {
      const res = await fetch(new URL(path, base), {
        method,
        redirect: "manual",
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const text = await res.text();
      if (res.status !== expect) throw new Error(`${method} ${path}: ${res.status} ${text.slice(0, 500)}`);
      return (text ? JSON.parse(text) : { location: res.headers.get("location") }) as T;
    }
    const me = await api<{ id: string }>("GET", "/api/auth/me", 200);
    const ws = (await api<{ id: string }>("POST", "/api/workspaces", 201, { name: "Integrations bench" })).id;

    /** Connect a provider as a browser would: connect, authorize at the stand-in, callback (302 to settings). */
    async function connect(kind: Kind, standIn: { authorize(url: string): { code: string; state: string } }) {
      const { auth_url } = await api<{ auth_url: string }>("POST", `/api/integrations/${kind}/connect`, 200, { workspace_id: ws });
      const { code, state } = standIn.authorize(auth_url);
      const cb = await api<{ location: string }>("GET", `/api/integrations/${kind}/callback?code=${code}&state=${state}`, 302);
      if (!cb.location.endsWith(`${kind}=connected`)) throw new Error(`${kind} callback: ${cb.location}`);
    }
    await connect("codehost", github);
    await api("POST", "/api/integrations/codehost/repos/select", 200, { workspace_id: ws, repos: [REPO] });
    await connect("planner", linear);
    const team = linear.team("ENG");
    await api("POST", "/api/integrations/planner/teams/select", 200, { workspace_id: ws, team_id: team.id, team_name: team.name });
    await connect("tickets", jira);

    const newDocument = async (title: string) =>
      (await api<{ id: string }>("POST", "/api/documents", 201, { workspace_id: ws, document_type: "prd", title, content: `# ${title}\n` })).id;
    const waitIdle = async () => {
      await Promise.race([
        localIntegrationsQueue().idle(),
        new Promise((_, reject) => setTimeout(() => reject(new Error("the integrations queue did not settle in time")), PHASE_DEADLINE_MS).unref()),
      ]);
    };
    const hostOf: Record<Kind, string> = { codehost: new URL(GHE_API).host, planner: new URL(LINEAR_API).host, tickets: new URL(ATLASSIAN_API).host };
    const creates: Record<Kind, (s: Sent) => boolean> = {
      codehost: (s) => s.method === "POST" && /\/repos\/[^/]+\/[^/]+\/issues$/.test(s.path),
      planner: () => false, // every Linear request is a POST: mutations are counted from the stand-in's operation log
      tickets: (s) => s.method === "POST" && s.path.endsWith("/rest/api/3/issue"),
    };
    /** Content-creating requests to `kind` in `window` (Linear: its mutations since `linearMark`). */
    const createdIn = (kind: Kind, window: Sent[], linearMark: number) =>
      kind === "planner" ? linear.requests.slice(linearMark).filter((r) => /Create|Update/.test(r.operation)).length : window.filter(creates[kind]).length;
    const extra: Partial<Record<Kind, Record<string, unknown>>> = { tickets: { project_key: "P001" } };
    const rows: (string | number)[][] = [];

    for (const kind of ["codehost", "planner", "tickets"] as Kind[]) {
      // Push: PUSH_N reviewed tickets from as many blocks.
      const doc = await newDocument(`Push to ${kind}`);
      for (let i = 0; i < PUSH_N; i++) {
        await api("POST", `/api/documents/${doc}/blocks`, 201, {
          block_type: "risk", title: `Risk ${i + 1}`,
          content: { risk: `Risk number ${i + 1} of the release.`, likelihood: "medium", impact: "medium", mitigation: `Mitigation ${i + 1}` },
        });
      }
      const gen = await api<{ tickets: { id: string }[] }>("POST", "/api/execution/generate", 200, { workspace_id: ws, document_id: doc });
      if (gen.tickets.length !== PUSH_N) throw new Error(`generated ${gen.tickets.length} tickets, not ${PUSH_N}`);
      for (const t of gen.tickets) await api("PATCH", `/api/execution/tickets/${t.id}`, 200, {});
      const linearMark = linear.requests.length;
      let mark = sent.length;
      let start = performance.now();
      const answered = await api<{ pushed: number; queued: number; failed: number }>("POST", "/api/execution/push", 200, { workspace_id: ws, document_id: doc, platform: kind, ...extra[kind] });
      const answeredMs = performance.now() - start;
      await waitIdle();
      const pushMs = performance.now() - start;
      const listed = await api<{ total: number }>("GET", `/api/execution/${doc}/tickets?status=pushed`, 200);
      if (listed.total !== PUSH_N) throw new Error(`${kind}: ${listed.total} of ${PUSH_N} tickets pushed`);
      let window = sent.slice(mark).filter((s) => s.host === hostOf[kind]);
      const created = createdIn(kind, window, linearMark);
      const perMinute = kind === "codehost" ? maxInWindow(window.filter(creates[kind]).map((s) => s.at), 60_000) : null;
      rows.push([
        kind, `push ${PUSH_N}`, secs(pushMs), `${secs(answeredMs)} (${answered.pushed} pushed, ${answered.queued} queued)`, window.length, created,
        perMinute === null ? "" : `${perMinute} ${perMinute <= 80 ? "≤ 80 ok" : "> 80 MISSED"}`, "",
      ]);

      // Sync: SYNC_N issues already linked to pushed tickets (seeded: pushing 500 to GitHub takes 25 minutes of pacing).
      const syncDoc = await newDocument(`Sync from ${kind}`);
      const links: { external_id: string; external_url: string; destination: string }[] = [];
      for (let i = 0; i < SYNC_N; i++) {
        if (kind === "codehost") {
          const n = github.addIssue(REPO, `Seeded ${i + 1}`);
          links.push({ external_id: `${REPO}#${n}`, external_url: `${GHE_WEB}/${REPO}/issues/${n}`, destination: REPO });
        } else if (kind === "planner") {
          const issue = linear.addIssue("ENG", { title: `Seeded ${i + 1}` });
          links.push({ external_id: issue.id, external_url: `${LINEAR_WEB}/acme/issue/ENG-${issue.number}`, destination: team.id });
        } else {
          const issue = jira.addIssue("P001", `Seeded ${i + 1}`);
          links.push({ external_id: issue.id, external_url: `${jira.siteUrl}/browse/${issue.key}`, destination: `${jira.cloudId}/P001` });
        }
      }
      const items = links.map((l, i) => ({
        id: randomUUID(), workspace_id: ws, document_id: syncDoc, block_id: randomUUID(), block_type: "risk", title: `Seeded ${i + 1}`, body: "Seeded for the benchmark.",
        ticket_type: "task", estimated_effort: "S", status: "pushed" as const, platform: kind, created_by: me.id, ...l,
      }));
      for (let i = 0; i < items.length; i += 25) await db().entities.executionTicket.put(items.slice(i, i + 25)).go();
      for (const pass of ["first", "unchanged"]) {
        mark = sent.length;
        const lm = linear.requests.length;
        start = performance.now();
        await api("POST", "/api/execution/sync", 200, { workspace_id: ws, document_id: syncDoc });
        await waitIdle();
        const ms = performance.now() - start;
        window = sent.slice(mark).filter((s) => s.host === hostOf[kind]);
        const notModified = window.filter((s) => s.status === 304).length;
        rows.push([
          kind, `sync ${SYNC_N} (${pass})`, secs(ms), "", window.length, createdIn(kind, window, lm),
          "", kind === "codehost" ? `${notModified} × 304; ${window.length - notModified} cost rate limit` : `${window.length} request(s), batched`,
        ]);
      }
      const synced = await api<{ total: number }>("GET", `/api/execution/${syncDoc}/tickets?status=synced`, 200);
      if (synced.total !== SYNC_N) throw new Error(`${kind}: ${synced.total} of ${SYNC_N} tickets synced`);
    }

    printTable(["provider", "phase", "wall s (to queue idle)", "first answer s", "requests sent", "content-creating", "max creates / 60 s", "rate limit"], rows);
    const missed = rows.filter((r) => String(r[6]).includes("MISSED"));
    console.log(missed.length ? `\n${missed.length} target(s) missed.` : "\nAll targets met.");
    const after = busyWarning();
    console.log(`end: ${machineLine()}${after ? `\n${after}` : ""}`);
  } finally {
    server.close();
    await rt?.stop();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  integrations().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
