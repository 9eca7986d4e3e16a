/**
 * The entropy scanner against DynamoDB Local (core/entropy `scanWorkspace`, `scanDue` and the scheduled handler
 * functions/events/entropy-scanner.ts): a workspace seeded with realdata-derived insights, a planted contradiction and
 * a planted stale source; the scan finds exactly those, stores itself and its issues, and keeps issue ids across
 * scans. The file runs on its own table, so the scheduled scanner sees only this file's workspaces.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ensureTable } from "../../../local/dynamodb";
import { db } from "../../../core/db/service";
import { activeIssues, recentScans, scanDue, scanWorkspace } from "../../../core/entropy";
import { handler } from "../../../functions/events/entropy-scanner";
import { newUser } from "../../support/api";
import { PLANTED, REAL, type Seed } from "./realdata-insights";
import { MAX_ISSUE_INSIGHT_IDS } from "../../../core/entropy/settings";

const saved = process.env.TABLE_NAME;
beforeAll(async () => {
  const name = `r2d-entropy-${randomUUID().slice(0, 8)}`;
  await ensureTable(inject("dynamoEndpoint"), name);
  process.env.TABLE_NAME = name;
});
afterAll(() => {
  process.env.TABLE_NAME = saved;
});

/**
 * A workspace owned by a fresh (active) user: the workspace and owner membership items as workspace creation writes
 * them, seeded directly so this file depends only on what the scanner reads.
 */
async function newWorkspace(name: string): Promise<{ workspace: { id: string } }> {
  const owner = await newUser();
  const id = randomUUID();
  await db().entities.workspace.create({ id, name, owner_id: owner.id }).go();
  await db().entities.membership.create({ workspace_id: id, user_id: owner.id, role: "owner" }).go();
  return { workspace: { id } };
}

const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();

async function seedSource(workspaceId: string, title: string, ageDays: number): Promise<string> {
  const id = randomUUID();
  await db().entities.researchSource.create({
    id, workspace_id: workspaceId, source_type: "interview", title, file_name: `${title}.md`, file_key: `workspaces/${workspaceId}/sources/${id}/original/x.md`,
    file_type: "text/markdown", file_kind: "markdown", file_size_bytes: 100, upload_method: "multipart", processing_status: "completed",
    created_by: "seed", created_at: daysAgo(ageDays),
  }).go();
  return id;
}

async function seedInsight(workspaceId: string, s: Seed, sourceIds: string[], archived = false): Promise<string> {
  const id = randomUUID();
  await db().entities.insight.create({
    id, workspace_id: workspaceId, insight_type: "pain_point", title: s.title, description: s.description, source_ids: sourceIds,
    severity: s.severity, is_archived: archived, origin: "synthesis",
  }).go();
  return id;
}

describe("scanWorkspace", () => {
  let ws: string;
  const ids: Record<string, string> = {};
  let oldSource: string;

  beforeAll(async () => {
    ws = (await newWorkspace("Entropy")).workspace.id;
    const fresh = await seedSource(ws, "JupyterLab accessibility results 2023", 10);
    const corroborated = await seedSource(ws, "Notebook UX survey 2015", 300);
    oldSource = await seedSource(ws, "Contrast notes 2019", 200);
    await seedSource(ws, "Recent interview", 5); // young and not yet synthesized: not stale
    for (const s of REAL) ids[s.key] = await seedInsight(ws, s, s.key === "toc-useful" ? [fresh, corroborated] : [fresh]);
    ids["contrast-block"] = await seedInsight(ws, PLANTED[0]!, [oldSource]);
    ids["toc-notuseful"] = await seedInsight(ws, PLANTED[1]!, [fresh]);
    // An archived claim contradicting a real one is not active knowledge: never compared.
    await seedInsight(ws, { key: "themes-dislike", severity: "high", title: "Participants did not care about themes", description: "Participants did not care about themes and never changed them." }, [fresh], true);
  });

  it("finds the planted stale source and the planted contradictions, and nothing else", async () => {
    const { scan, issues } = await scanWorkspace(ws);
    const pair = (a: string, b: string) => [ids[a]!, ids[b]!].sort();
    expect(issues.map((i) => [i.issue_type, i.severity, i.source_id ?? i.insight_ids]).sort()).toEqual(
      [
        ["stale_source", "high", oldSource],
        ["contradictory_insights", "high", pair("contrast-ok", "contrast-block")],
        ["contradictory_insights", "medium", pair("toc-useful", "toc-notuseful")],
      ].sort(),
    );
    const stale = issues.find((i) => i.issue_type === "stale_source")!;
    expect(stale.insight_ids).toEqual([ids["contrast-block"]]);
    expect(stale.evidence).toMatchObject({ reason: "aging_evidence", age_days: 200, stale_after_days: 90 });
    expect(issues.find((i) => i.severity === "high" && i.issue_type === "contradictory_insights")!.evidence).toMatchObject({ compared_by: "embedding" });
    expect(scan).toMatchObject({
      workspace_id: ws, trigger: "on_demand", insight_count: REAL.length + PLANTED.length, source_count: 4, issue_count: 3, high_severity_count: 2, truncated: false,
    });
    expect(scan.embedder_id).toBeTruthy();
    expect(scan.by_type).toEqual([
      { issue_type: "stale_source", severity: "high", count: 1 },
      { issue_type: "contradictory_insights", severity: "high", count: 1 },
      { issue_type: "contradictory_insights", severity: "medium", count: 1 },
    ]);
  });

  it("stores each scan with its issues: the latest scan's issues are the active ones, with the same ids", async () => {
    const first = await activeIssues(await ownerOf(ws), { workspace_id: ws });
    const second = await scanWorkspace(ws, { trigger: "cycle" });
    const now = await activeIssues(await ownerOf(ws), { workspace_id: ws });
    expect(now.scan!.id).toBe(second.scan.id);
    expect(now.scan!.id).not.toBe(first.scan!.id);
    expect(now.issues.map((i) => i.id).sort()).toEqual(first.issues.map((i) => i.id).sort());
    expect(now.issues.every((i) => i.scan_id === second.scan.id)).toBe(true);
    expect(now.issues.map((i) => i.severity)).toEqual(["high", "high", "medium"]);
    const filtered = await activeIssues(await ownerOf(ws), { workspace_id: ws, issue_type: "stale_source" });
    expect(filtered.total).toBe(1);
    expect((await recentScans(ws)).map((s) => s.trigger)).toEqual(["cycle", "on_demand"]);
  });

  it("without an embedder compares insights by shared words and still finds the denial", async () => {
    const { scan, issues } = await scanWorkspace(ws, { embedder: null });
    expect(scan.embedder_id).toBeNull();
    const toc = issues.find((i) => i.insight_ids.includes(ids["toc-notuseful"]!))!;
    expect(toc.evidence).toMatchObject({ compared_by: "shared_words" });
    expect(issues.some((i) => i.source_id === oldSource)).toBe(true);
  });

  it("scans an empty workspace as clean", async () => {
    const empty = (await newWorkspace("Empty")).workspace.id;
    const { scan, issues } = await scanWorkspace(empty);
    expect(issues).toEqual([]);
    expect(scan).toMatchObject({ issue_count: 0, insight_count: 0, source_count: 0, by_type: [] });
  });

  it("the scheduled scanner scans each due workspace of an active owner once, and defers when out of time", async () => {
    const other = (await newWorkspace("Due")).workspace.id;
    // Out of time: the due workspace ("Due") is deferred; the two scanned moments ago are not due.
    const deferred = await scanDue({ budgetMs: -1 });
    expect(deferred).toMatchObject({ workspaces: 3, scanned: 0, skipped: 2, deferred: 1 });
    const run = await handler();
    // "Entropy" and "Empty" were scanned moments ago (within ENTROPY_SCAN_INTERVAL_HOURS): only "Due" is.
    expect(run).toMatchObject({ workspaces: 3, scanned: 1, skipped: 2, deferred: 0, failed: 0 });
    expect((await recentScans(other)).map((s) => s.trigger)).toEqual(["scheduled"]);
    expect(await handler()).toMatchObject({ scanned: 0, skipped: 3 });
  });
});

describe("a source many insights cite", () => {
  it("its stale-source issue keeps at most MAX_ISSUE_INSIGHT_IDS ids and counts them all", async () => {
    // After the scheduled scanner's test (it counts this file's workspaces).
    const ws = (await newWorkspace("Much cited")).workspace.id;
    const old = await seedSource(ws, "Interviews 2019", 400);
    const n = MAX_ISSUE_INSIGHT_IDS + 50;
    for (let i = 0; i < n; i++) await seedInsight(ws, { key: `k${i}`, severity: "low", title: `Claim ${i}`, description: `Claim number ${i}.` }, [old], true);
    const { issues } = await scanWorkspace(ws, { embedder: null });
    const stale = issues.find((i) => i.source_id === old)!;
    expect(stale.insight_ids).toHaveLength(MAX_ISSUE_INSIGHT_IDS);
    expect(stale.evidence).toMatchObject({ reason: "superseded", insight_count: n });
  });
});

/** The owner's user id of a workspace (the only member here). */
async function ownerOf(workspaceId: string): Promise<string> {
  const { data } = await db().entities.membership.query.byWorkspace({ workspace_id: workspaceId }).go();
  return data[0]!.user_id;
}
