/**
 * What a research cycle's task does (task type `research_cycle`, run by the task worker like every task): the new
 * research sources since the last completed cycle are synthesized (the synthesis merges what matches an existing
 * insight into it, core/insight/synthesis.ts), contradictions and stale sources are flagged by the entropy scanner
 * (core/entropy `scanWorkspace`), and, with `overnightCycleNotifyEmail`, every member gets the morning digest.
 *
 * "New since the last cycle": sources whose processing completed after the last completed cycle's cutoff and up to
 * this one's (the time the night's run started), by `processed_at`: a source still processing at a cutoff is the next
 * night's, and a reprocessed one is synthesized again (its mentions replace its earlier count, not add to it). Before
 * a workspace's first completed cycle: the completed sources no insight cites yet (never synthesized). The night's
 * list is read once, by its first attempt, and kept (the task's `sources` step): every later attempt of the night
 * (a resumed worker, the cycle's retry) synthesizes the same chunks of it.
 */
import { serviceLog } from "../log";
import { db } from "../db/service";
import { isConditionalFailure } from "../db/errors";
import { synthesize } from "../insight/synthesis";
import { allOf } from "../insight";
import { listMembers, settingsOf } from "../workspace";
import { sendMail } from "../mail";
import { scanWorkspace } from "../entropy";
import type { WorkContext, WorkResult } from "../task/context";
import { cycleOf, cycleTaskId, type CycleItem } from "./marker";
import { changedAnything, digestSubject, digestText, type CycleChanges } from "./digest";

const log = () => serviceLog();

/** Issues a cycle keeps and its digest lists (the scan keeps them all: GET /api/admin/quality/entropy/issues). */
const MAX_DIGEST_ISSUES = 20;

/** Most sources one synthesis takes (spec 02: 1 to 20); a night with more synthesizes them in chunks. */
const CHUNK = 20;

/** Most failed nights after the last completed one whose synthesized chunks a night reuses (`lastCutoff`). */
const REUSED_NIGHTS = 7;

/**
 * The cutoff of the workspace's last completed cycle before `date` (null when it has none), and the nights after it
 * that failed (the latest `REUSED_NIGHTS`, newest first): their synthesized chunks are this night's to reuse.
 */
async function lastCutoff(workspaceId: string, date: string): Promise<{ since: string | null; failedSince: CycleItem[] }> {
  const { data } = await db().entities.researchCycle.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true });
  const before = (data as CycleItem[]).filter((c) => c.date < date).sort((a, b) => b.date.localeCompare(a.date));
  const last = before.find((c) => c.status === "completed");
  const failedSince = before.filter((c) => c.status === "failed" && (!last || c.date > last.date)).slice(0, REUSED_NIGHTS);
  return { since: last?.cutoff_at ?? null, failedSince };
}

/** The workspace's research sources as they are now (one Query of its partition). */
async function sourcesOf(workspaceId: string) {
  const { data } = await db().entities.researchSource.query.byWorkspace({ workspace_id: workspaceId }).go({ pages: "all", consistent: true });
  return data;
}
type SourceItem = Awaited<ReturnType<typeof sourcesOf>>[number];

/** When processing last completed (older items without it: when created). */
const doneAt = (s: SourceItem) => s.processed_at ?? s.created_at;

/** A source this night may synthesize: it exists, and its processing completed by the cutoff. */
const readyBy = (s: SourceItem | undefined, cutoff: string): s is SourceItem => !!s && s.processing_status === "completed" && doneAt(s) <= cutoff;

/** The research sources this night's cycle takes in (see the module comment), oldest first, by id. */
async function newSources(workspaceId: string, all: SourceItem[], cutoff: string, since: string | null): Promise<string[]> {
  const completed = all.filter((s) => readyBy(s, cutoff));
  const cited = since ? null : new Set((await allOf(workspaceId)).flatMap((i) => i.source_ids ?? []));
  return completed
    .filter((s) => (since ? doneAt(s) > since : !cited!.has(s.id)))
    .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id))
    .map((s) => s.id);
}

/** What one chunk's synthesis step keeps on the task (its checkpoint), with the sources it took. */
type ChunkResult = {
  /** The chunk's sources (the night's list, `sources` step, cut in chunks of CHUNK): how a retry recognizes it. */
  source_ids?: string[];
  /** Those of them not synthesized: deleted, or processing again, since the night's list was taken. */
  skipped?: string[];
  created: CycleChanges["insights_created"];
  merged: { id: string; title: string }[];
};

/**
 * What an earlier attempt of this night (the cycle's retry, a task of its own) left on its task: the night's list of
 * sources (its `sources` step), and the chunks it synthesized, by their sources (ids joined in order). The retry takes
 * that list, so its chunks are the same sources, and takes those chunks as done instead of synthesizing (and
 * charging) them again. A chunk of other sources is not reused.
 */
async function earlierAttempts(record: CycleItem, failedNights: CycleItem[], current: Map<string, SourceItem>): Promise<{ sources: string[] | null; chunks: Map<string, ChunkResult> }> {
  const out = { sources: null as string[] | null, chunks: new Map<string, ChunkResult>() };
  const checkpointOf = async (night: CycleItem, attempt: number) => {
    const { data } = await db().entities.task.get({ workspace_id: night.workspace_id, id: cycleTaskId(night.workspace_id, night.date, attempt) }).go({ consistent: true, attributes: ["checkpoint"] });
    return (data?.checkpoint ?? {}) as Record<string, unknown>;
  };
  const keep = (checkpoint: Record<string, unknown>, usable: (chunk: ChunkResult) => boolean) => {
    for (const [name, value] of Object.entries(checkpoint)) {
      const chunk = value as ChunkResult | null;
      if (name.startsWith("synthesis#") && Array.isArray(chunk?.source_ids) && usable(chunk)) out.chunks.set(chunk.source_ids.join(","), chunk);
    }
  };
  // Earlier nights that failed since the last completed cycle, oldest first (a later night's chunk of the same sources
  // wins): a chunk counts only if none of its sources was processed again after that night's cutoff (a reprocessed
  // source is synthesized again), nor skipped then.
  for (const night of [...failedNights].reverse()) {
    for (let attempt = 1; attempt <= night.attempts; attempt++) {
      keep(await checkpointOf(night, attempt), (chunk) => !chunk.skipped?.length && chunk.source_ids!.every((id) => { const s = current.get(id); return !!s && doneAt(s) <= night.cutoff_at; }));
    }
  }
  for (let attempt = 1; attempt < record.attempts; attempt++) {
    const checkpoint = await checkpointOf(record, attempt);
    if (Array.isArray(checkpoint.sources)) out.sources = checkpoint.sources as string[];
    keep(checkpoint, () => true);
  }
  return out;
}

/**
 * Send the digest once per night (the record's `digest_sent_at`, set before sending: at most once). A member whose
 * message cannot be sent is logged and skipped: the night's synthesis is done, and failing the cycle for a mail would
 * run it again (charged again) while the digest, already marked, would not go out anyway.
 * @returns the recipients it was sent to
 */
async function sendDigest(task: WorkContext["task"], record: CycleItem, changes: CycleChanges, goals: string[]): Promise<string[]> {
  try {
    await db()
      .entities.researchCycle.patch({ workspace_id: record.workspace_id, date: record.date })
      .set({ digest_sent_at: new Date().toISOString() })
      .where((attr, op) => `${op.notExists(attr.digest_sent_at)} AND ${op.eq(attr.task_id, task.id)}`)
      .go();
  } catch (err) {
    if (isConditionalFailure(err)) return [];
    throw err;
  }
  const [{ members }, { data: workspace }] = await Promise.all([listMembers(task.created_by, task.workspace_id), db().entities.workspace.get({ id: task.workspace_id }).go()]);
  const name = workspace?.name ?? "your workspace";
  const subject = digestSubject(name, record.date, changes);
  const text = digestText({ workspaceId: task.workspace_id, workspaceName: name, date: record.date, taskId: task.id, goals, changes });
  const sent: string[] = [];
  for (const m of members) {
    if (!m.email) continue;
    try {
      await sendMail({ to: m.email, subject, text });
      sent.push(m.email);
    } catch (err) {
      log().error("a research cycle's digest could not be sent to a member", { workspace_id: task.workspace_id, date: record.date, user_id: m.user_id, error: err as Error });
    }
  }
  return sent;
}

/** The work of a `research_cycle` task (see the module comment). */
export async function runCycle(ctx: WorkContext): Promise<WorkResult> {
  const { task } = ctx;
  const date = task.cycle_date;
  const record = date ? await cycleOf(task.workspace_id, date) : null;
  if (!date || !record || record.task_id !== task.id) throw new Error(`The research cycle task ${task.id} has no night record naming it`);
  const { since, failedSince } = await lastCutoff(task.workspace_id, date);
  const current = new Map((await sourcesOf(task.workspace_id)).map((s) => [s.id, s]));
  // What earlier attempts synthesized: this night's (a retry), and the nights that failed since the last completed
  // cycle (their sources are new tonight again: a backlog one night could not finish is not synthesized, and charged,
  // again every night, and each night gets further).
  const earlier = record.attempts > 1 || failedSince.length ? await earlierAttempts(record, failedSince, current) : { sources: null, chunks: new Map<string, ChunkResult>() };
  // The night's list of sources is read once and kept as a step: a resumed attempt (and the cycle's retry, which takes
  // its earlier attempt's list) cuts the same chunks. Read again, it would differ: before the first completed cycle the
  // sources a finished chunk synthesized are cited by then and drop out, so the others would move into the chunks
  // already done and never be synthesized.
  const listed = await ctx.step("sources", async () => earlier.sources ?? (await newSources(task.workspace_id, [...current.values()], record.cutoff_at, since)));
  await ctx.report({ progress_pct: 5, message: listed.length ? `Synthesizing ${listed.length} new source${listed.length === 1 ? "" : "s"}` : "No new research sources since the last cycle" });
  const created: CycleChanges["insights_created"] = [];
  const merged = new Map<string, { id: string; title: string }>();
  const skipped = new Set<string>();
  for (let k = 0; k * CHUNK < listed.length; k++) {
    const source_ids = listed.slice(k * CHUNK, (k + 1) * CHUNK);
    const res = await ctx.step(`synthesis#${k}`, async (): Promise<ChunkResult> => {
      const before = earlier.chunks.get(source_ids.join(","));
      if (before) return before;
      // A source deleted or processing again since the list was taken is not tonight's any more (a reprocessed one
      // is the next night's, by when its processing completes).
      const ready = source_ids.filter((id) => readyBy(current.get(id), record.cutoff_at));
      const gone = source_ids.filter((id) => !ready.includes(id));
      if (!ready.length) return { source_ids, skipped: gone, created: [], merged: [] };
      const r = await synthesize(task.created_by, { workspace_id: task.workspace_id, source_ids: ready, synthesis_type: "comprehensive" }, { rateLimited: false });
      const byId = new Map(r.insights.map((i) => [i.id, i]));
      return {
        source_ids,
        ...(gone.length ? { skipped: gone } : {}),
        created: r.created_ids.map((id) => ({ id, title: byId.get(id)?.title ?? id, severity: byId.get(id)?.severity ?? "medium" })),
        merged: r.merged.map((m) => ({ id: m.insight_id, title: m.title })),
      };
    });
    created.push(...res.created);
    for (const m of res.merged) merged.set(m.id, m);
    for (const id of res.skipped ?? []) skipped.add(id);
    const done = Math.min(listed.length, (k + 1) * CHUNK);
    await ctx.report({ progress_pct: 5 + Math.round((75 * done) / listed.length), message: `Synthesized ${done} of ${listed.length} new sources` });
  }
  // Contradictions and stale sources: the entropy scanner (core/entropy, issue #21) on the workspace as the night left
  // it. A scanner that fails does not undo the synthesis: the cycle records that it did not check, and says so.
  await ctx.report({ progress_pct: 82, message: "Checking for contradictions and stale sources" });
  const scan = await ctx.step("entropy", async () => {
    try {
      const r = await scanWorkspace(task.workspace_id, { trigger: "cycle" });
      return { scan_id: r.scan.id, issues: r.issues.map((i) => ({ issue_type: i.issue_type, severity: i.severity, detail: i.detail, insight_ids: i.insight_ids, source_id: i.source_id })) };
    } catch (err) {
      ctx.signal.throwIfAborted();
      log().error("entropy scan of a research cycle failed", { workspace_id: task.workspace_id, error: err as Error });
      return { scan_id: null, issues: [], error: (err as Error).message };
    }
  });
  const changes: CycleChanges = {
    // The night's sources it synthesized (one deleted since has no page to link to).
    new_sources: listed.flatMap((id) => {
      const s = current.get(id);
      return s && !skipped.has(id) ? [{ id, title: s.title, source_type: s.source_type }] : [];
    }),
    insights_created: created,
    // An insight created tonight and merged into by a later chunk is new, not updated.
    insights_merged: [...merged.values()].filter((m) => !created.some((c) => c.id === m.id)),
    issues: scan.issues.slice(0, MAX_DIGEST_ISSUES),
    scanned: scan.scan_id !== null,
  };
  await ctx.report({ progress_pct: 90, message: "Preparing the digest" });
  const settings = await settingsOf(task.workspace_id);
  const goals = settings.researchProgram?.goals ?? [];
  const recipients = settings.overnightCycleNotifyEmail && changedAnything(changes) ? await ctx.step("digest", () => sendDigest(task, record, changes, goals)) : [];
  if (settings.overnightCycleNotifyEmail && !changedAnything(changes)) log().info("research cycle changed nothing: no digest", { workspace_id: task.workspace_id, date });
  const summary = `${changes.new_sources.length} new source${changes.new_sources.length === 1 ? "" : "s"} synthesized: ${created.length} new insight${created.length === 1 ? "" : "s"}, ${changes.insights_merged.length} updated; ${changes.scanned ? `${changes.issues.length} issue${changes.issues.length === 1 ? "" : "s"} flagged` : "contradictions and stale sources not checked"}`;
  return { summary, data: { date, since, cutoff: record.cutoff_at, changes, entropy_scan_id: scan.scan_id, ...("error" in scan ? { entropy_error: scan.error } : {}), issue_count: scan.issues.length, digest: { sent_to: recipients } } };
}
