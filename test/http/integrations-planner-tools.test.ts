/**
 * The copilot's planner tools (issue #20 point 4; spec 02 Planner tools), run as the agent loop runs them (a
 * ToolContext after the membership check) against the stand-in Linear through real `@linear/sdk`: every argument,
 * default and clamp, server-side name resolution (substring, ambiguity), `cycle` handling, the spec's error codes,
 * and the three gated writes, each replayed with the same action without writing twice.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { gatedTool, toolByName, type ReadTool, type ToolContext } from "../../core/agent/tools";
import { COMMENT_PREVIEW_CHARS } from "../../core/agent/tools/planner";
import { call, newWorkspace } from "../support/api";
import { connectLinear, LinearStandIn, useLinearSettings } from "../support/linear-standin";
import { db } from "../../core/db/service";

const linear = new LinearStandIn();
const ENG = () => linear.team("ENG");

beforeAll(() => {
  useLinearSettings(linear);
  linear.listen();
});
afterAll(() => linear.close());

async function context(opts: { team?: "ENG" | "DES" | null } = {}): Promise<ToolContext & { token: string }> {
  const { owner, workspace } = await newWorkspace("Planner tools");
  await connectLinear(linear, owner.token, workspace.id);
  const team = opts.team === undefined ? "ENG" : opts.team;
  if (team) {
    const res = await call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body: { workspace_id: workspace.id, team_id: linear.team(team).id, team_name: team } });
    expect(res.status, res.text).toBe(200);
  }
  return { userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [], token: owner.token };
}

const run = async (ctx: ToolContext, name: string, raw: unknown): Promise<any> => {
  const tool = toolByName(name) as ReadTool;
  return tool.run(ctx, tool.input.parse(raw));
};
const exec = (ctx: ToolContext, actionId = randomUUID()) => ({ userId: ctx.userId, workspaceId: ctx.workspaceId, actionId });

/** Issues of ENG for the query tests: assignees, projects, labels, cycles and states of every type. */
let seeded: Record<string, string> = {};
beforeAll(() => {
  const eng = ENG();
  const [grace, , alan] = [linear.users[1]!, linear.users[2]!, linear.users[3]!];
  const state = (n: string) => linear.stateOf("ENG", n).id;
  const active = eng.activeCycleId!;
  seeded = {
    bug: linear.addIssue("ENG", { title: "Upload stalls at 99%", description: "flaky network", stateId: state("In Progress"), assigneeId: grace.id, projectId: eng.projects[0]!.id, labelIds: [eng.labels[0]!.id], cycleId: active, priority: 1 }).id,
    feat: linear.addIssue("ENG", { title: "Resume uploads", stateId: state("Todo"), assigneeId: alan.id, projectId: eng.projects[1]!.id, labelIds: [eng.labels[1]!.id], cycleId: active }).id,
    done: linear.addIssue("ENG", { title: "Upload progress bar", stateId: state("Done"), assigneeId: grace.id, cycleId: active }).id,
    old: linear.addIssue("ENG", { title: "Legacy uploader", stateId: state("Canceled") }).id,
    other: linear.addIssue("DES", { title: "Upload icon" }).id,
  };
});

describe("read tools", () => {
  it("query_planner_issues: open issues of the selected team by default, limit default 30 clamped to 100, filters reported", async () => {
    const ctx = await context();
    const res = await run(ctx, "query_planner_issues", {});
    const ids = res.issues.map((i: { id: string }) => i.id);
    expect(ids).toEqual(expect.arrayContaining([seeded.bug, seeded.feat]));
    expect(ids).not.toContain(seeded.done);
    expect(ids).not.toContain(seeded.old);
    expect(ids).not.toContain(seeded.other);
    expect(res.filters_applied).toMatchObject({ team: "Engineering", limit: 30, include_completed: false, excluded_state_types: ["completed", "cancelled"] });
    expect((await run(ctx, "query_planner_issues", { limit: 1000 })).filters_applied.limit).toBe(100);
    expect((await run(ctx, "query_planner_issues", { limit: 1 })).count).toBe(1);
    const all = await run(ctx, "query_planner_issues", { include_completed: true });
    expect(all.issues.map((i: { id: string }) => i.id)).toEqual(expect.arrayContaining([seeded.done, seeded.old]));
    const done = await run(ctx, "query_planner_issues", { state_type: "completed" });
    expect(done.issues.map((i: { id: string }) => i.id)).toEqual([seeded.done]);
    expect(done.issues[0]).toMatchObject({ state: "Done", state_type: "completed", assignee: "grace" });
  });

  it("query_planner_issues resolves assignee, project and label by substring; ambiguity and misses are the spec's codes", async () => {
    const ctx = await context();
    const byAssignee = await run(ctx, "query_planner_issues", { assignee_name: "Hopper" });
    expect(byAssignee.issues.map((i: { id: string }) => i.id)).toEqual([seeded.bug]);
    expect(byAssignee.filters_applied.assignee).toBe("grace");
    expect(await run(ctx, "query_planner_issues", { assignee_name: "Gra" })).toMatchObject({ success: false, error_code: "validation_error" });
    expect(await run(ctx, "query_planner_issues", { assignee_name: "Nobody" })).toMatchObject({ success: false, error_code: "user_not_found" });
    const byProject = await run(ctx, "query_planner_issues", { project_name: "payments" });
    expect(byProject.issues.map((i: { id: string }) => i.id)).toEqual([seeded.feat]);
    expect(byProject.filters_applied.project).toBe("Mobile payments");
    expect(await run(ctx, "query_planner_issues", { project_name: "mobile" })).toMatchObject({ success: false, error_code: "validation_error" });
    expect(await run(ctx, "query_planner_issues", { project_name: "Desktop" })).toMatchObject({ success: false, error_code: "project_not_found" });
    expect((await run(ctx, "query_planner_issues", { label: "bug" })).issues.map((i: { id: string }) => i.id)).toEqual([seeded.bug]);
    expect(await run(ctx, "query_planner_issues", { label: "Chore" })).toMatchObject({ success: false, error_code: "label_not_found" });
  });

  it("cycle 'active' filters by the team's active cycle, or answers an empty list with a message when it has none", async () => {
    const ctx = await context();
    const res = await run(ctx, "query_planner_issues", { cycle: "active", include_completed: true });
    expect(res.issues.map((i: { id: string }) => i.id).sort()).toEqual([seeded.bug, seeded.feat, seeded.done].sort());
    expect(res.filters_applied.cycle).toMatchObject({ id: ENG().activeCycleId, number: 2 });
    const byId = await run(ctx, "query_planner_issues", { cycle: ENG().cycles[0]!.id });
    expect(byId.issues).toEqual([]);
    const des = await context({ team: "DES" });
    expect(await run(des, "query_planner_issues", { cycle: "active" })).toMatchObject({ issues: [], count: 0, message: expect.stringContaining("no active cycle") });
    expect(() => toolByName("query_planner_issues")!.input.parse({ cycle: "next" })).toThrow();
  });

  it("search_planner_issues: team scope by default, the whole organization with team_scope false; limit default 10, max 50", async () => {
    const ctx = await context();
    const team = await run(ctx, "search_planner_issues", { query: "upload" });
    expect(team.results.map((i: { id: string }) => i.id)).not.toContain(seeded.other);
    expect(team).toMatchObject({ query: "upload", count: team.results.length });
    const org = await run(ctx, "search_planner_issues", { query: "upload", team_scope: false });
    expect(org.results.map((i: { id: string }) => i.id)).toContain(seeded.other);
    expect((await run(ctx, "search_planner_issues", { query: "upload", limit: 2 })).count).toBe(2);
    expect(toolByName("search_planner_issues")!.input.parse({ query: "x" })).toMatchObject({ limit: 10, team_scope: true });
    expect(toolByName("search_planner_issues")!.input.parse({ query: "x", limit: 99 })).toMatchObject({ limit: 50 });
  });

  it("get_planner_cycle: the active cycle by default, with its issues and progress; no_active_cycle and not_found", async () => {
    const ctx = await context();
    const res = await run(ctx, "get_planner_cycle", {});
    expect(res.cycle).toMatchObject({ id: ENG().activeCycleId, number: 2 });
    expect(res.issues).toHaveLength(3);
    expect(res.progress).toMatchObject({ total_issues: 3, completed_issues: 1, started_issues: 1, remaining_issues: 2, percent_complete: 25 });
    expect(await run(ctx, "get_planner_cycle", { cycle_id: randomUUID() })).toMatchObject({ success: false, error_code: "not_found" });
    expect(await run(await context({ team: "DES" }), "get_planner_cycle", {})).toMatchObject({ success: false, error_code: "no_active_cycle" });
  });

  it("get_planner_project: list mode without an id; detail mode with milestones and issues; project_not_found", async () => {
    const ctx = await context();
    const list = await run(ctx, "get_planner_project", {});
    expect(list).toMatchObject({ count: 2, projects: [{ name: "Mobile onboarding" }, { name: "Mobile payments" }] });
    const detail = await run(ctx, "get_planner_project", { project_id: ENG().projects[0]!.id });
    expect(detail).toMatchObject({ project: { name: "Mobile onboarding", target_date: "2026-03-31" }, milestones: [{ name: "Beta" }], issues: [{ id: seeded.bug }] });
    expect(await run(ctx, "get_planner_project", { project_id: "missing" })).toMatchObject({ success: false, error_code: "project_not_found" });
  });

  it("get_planner_issue by identifier: the issue, assignee, priority and labels; not_found", async () => {
    const ctx = await context();
    const bug = linear.issues.get(seeded.bug)!;
    const res = await run(ctx, "get_planner_issue", { identifier: `eng-${bug.number}` });
    expect(res).toMatchObject({ issue: { id: seeded.bug, title: "Upload stalls at 99%", priority_label: "Urgent" }, synced: false, assignee: "grace", priority: 1, labels: ["Bug"] });
    expect(await run(ctx, "get_planner_issue", { identifier: "ENG-9999" })).toMatchObject({ success: false, error_code: "not_found" });
  });

  it("errors: no_team_selected, integration_not_connected, token_expired, rate_limited with retry_after", async () => {
    const noTeam = await context({ team: null });
    expect(await run(noTeam, "query_planner_issues", {})).toMatchObject({ success: false, error_code: "no_team_selected" });
    const { owner, workspace } = await newWorkspace("None");
    const bare = { userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [] };
    expect(await run(bare, "search_planner_issues", { query: "x", team_scope: false })).toMatchObject({ success: false, error_code: "integration_not_connected" });
    const ctx = await context();
    linear.fail({ operation: "PlannerSearch", kind: "ratelimited", headers: { "x-ratelimit-requests-remaining": "0", "x-ratelimit-requests-reset": String(Date.now() + 30_000) } });
    const limited = await run(ctx, "search_planner_issues", { query: "x" });
    expect(limited).toMatchObject({ success: false, error_code: "rate_limited" });
    expect(limited.retry_after).toBeGreaterThanOrEqual(29);
    expect(limited.retry_after).toBeLessThanOrEqual(31);
    linear.fail({ operation: "PlannerSearch", kind: "auth" });
    expect(await run(ctx, "search_planner_issues", { query: "x" })).toMatchObject({ success: false, error_code: "token_expired" });
  });
});

describe("gated tools", () => {
  it("create_planner_issue with a recommendation: previewed, then executed once however often the action replays; linked; list_planner_issues reads it", async () => {
    const ctx = await context();
    const rec = await call("POST", "/api/recommendations", { token: ctx.token, body: { workspace_id: ctx.workspaceId, title: "Resume uploads", description: "Uploads fail on flaky networks." } });
    const tool = gatedTool("create_planner_issue")!;
    const input = tool.input.parse({ recommendation_id: rec.body.id, priority: 2 });
    expect(await tool.preview(ctx, input)).toMatchObject({ target: "planner_issue", operation: "create", summary: "Create a Linear issue in team Engineering", fields: { team: "Engineering", priority: 2 } });
    const action = exec(ctx);
    const before = linear.issues.size;
    const first = await tool.execute(action, input);
    const replay = await tool.execute(action, input);
    expect(linear.issues.size - before).toBe(1);
    expect(replay).toEqual(first);
    expect(first).toMatchObject({ issue_identifier: expect.stringMatching(/^ENG-\d+$/), title: "Resume uploads", linked_recommendation: rec.body.id });
    expect(linear.issues.get(first.issue_id as string)).toMatchObject({ priority: 2, description: "Uploads fail on flaky networks." });
    const { data: links } = await db().entities.issueLink.query.byWorkspace({ workspace_id: ctx.workspaceId, kind: "planner" }).go();
    expect(links).toHaveLength(1);

    expect(await run(ctx, "list_planner_issues", { status: "open" })).toMatchObject({ count: 1, issues: [{ identifier: first.issue_identifier, recommendation_id: rec.body.id }], filter: { status: "open" } });
    expect(await run(ctx, "list_planner_issues", { status: "closed" })).toMatchObject({ count: 0 });
    expect(toolByName("list_planner_issues")!.input.parse({ limit: 999 })).toMatchObject({ limit: 200, status: "all" });
    // Closing it in Linear: get_planner_issue reads it, syncs the link and implements the recommendation.
    linear.moveTo(first.issue_id as string, "Done");
    expect(await run(ctx, "get_planner_issue", { identifier: first.issue_identifier })).toMatchObject({ synced: true, issue: { state_type: "completed" } });
    expect((await call("GET", `/api/recommendations/${rec.body.id}`, { token: ctx.token })).body.status).toBe("implemented");
    expect(await run(ctx, "list_planner_issues", { status: "closed" })).toMatchObject({ count: 1 });
  });

  it("create_planner_issue without a recommendation needs a title; without a selected team it is refused at preview", async () => {
    const tool = gatedTool("create_planner_issue")!;
    expect(() => tool.input.parse({ description: "x" })).toThrow();
    expect(() => tool.input.parse({ title: "x", priority: 5 })).toThrow();
    const ctx = await context();
    const res = await tool.execute(exec(ctx), tool.input.parse({ title: "Standalone", description: "Body" }));
    expect(res).toMatchObject({ title: "Standalone", linked_recommendation: null });
    await expect(tool.preview(await context({ team: null }), tool.input.parse({ title: "x" }))).rejects.toMatchObject({ code: "NO_TEAM_SELECTED" });
  });

  it("update_planner_issue resolves state, assignee and cycle names; previews the changes; 'none' unsets the cycle", async () => {
    const ctx = await context();
    const issue = linear.addIssue("ENG", { title: "Retry failed chunks" });
    const identifier = `ENG-${issue.number}`;
    const tool = gatedTool("update_planner_issue")!;
    const input = tool.input.parse({ identifier, state: "progress", assignee_name: "turing", priority: 3, due_date: "2026-04-01", cycle: "active", title: "Retry failed chunks twice" });
    const preview = await tool.preview(ctx, input);
    expect(preview).toMatchObject({ operation: "update", summary: `Update Linear issue ${identifier} 'Retry failed chunks'` });
    expect(preview.changes).toEqual(expect.arrayContaining([
      { field: "state", before: "Backlog", after: "In Progress" }, { field: "assignee", before: null, after: "alan" },
      { field: "cycle", before: null, after: ENG().activeCycleId }, { field: "priority", before: 0, after: 3 },
    ]));
    const res = await tool.execute(exec(ctx), input);
    expect(res).toMatchObject({ issue: { state: "In Progress", assignee: "alan", priority: 3, due_date: "2026-04-01", title: "Retry failed chunks twice" }, message: expect.stringContaining("state → In Progress") });
    expect(linear.issues.get(issue.id)!.cycleId).toBe(ENG().activeCycleId);
    await tool.execute(exec(ctx), tool.input.parse({ identifier, cycle: "none" }));
    expect(linear.issues.get(issue.id)!.cycleId).toBeNull();
    await expect(tool.preview(ctx, tool.input.parse({ identifier, assignee_name: "nobody" }))).rejects.toMatchObject({ code: "NOT_FOUND", extra: { error_code: "user_not_found" } });
    await expect(tool.preview(ctx, tool.input.parse({ identifier, state: "Shipped" }))).rejects.toMatchObject({ code: "VALIDATION_ERROR", extra: { error_code: "validation_error" } });
    await expect(tool.preview(ctx, tool.input.parse({ identifier: "ENG-9999", priority: 1 }))).rejects.toMatchObject({ extra: { error_code: "not_found" } });
    await expect(tool.preview(await context({ team: "DES" }), tool.input.parse({ identifier, cycle: "active" }))).rejects.toMatchObject({ extra: { error_code: "no_active_cycle" } });
    expect(() => tool.input.parse({ identifier })).toThrow();
    expect(() => tool.input.parse({ identifier, due_date: "2026-02-30" })).toThrow();
    expect(() => tool.input.parse({ identifier, cycle: "soon" })).toThrow();
  });

  it("update_planner_issue rate-limited by Linear throws RATE_LIMITED (the executor defers it)", async () => {
    const ctx = await context();
    const issue = linear.addIssue("ENG", { title: "Throttled" });
    const tool = gatedTool("update_planner_issue")!;
    linear.fail({ operation: "PlannerIssueUpdate", kind: "429", headers: { "retry-after": "12" } });
    await expect(tool.execute(exec(ctx), tool.input.parse({ identifier: `ENG-${issue.number}`, priority: 2 }))).rejects.toMatchObject({ code: "RATE_LIMITED", extra: { retry_after_seconds: 12 } });
  });

  it("create_planner_comment: preview capped at 4000 characters; a replayed action comments once", async () => {
    const ctx = await context();
    const issue = linear.addIssue("ENG", { title: "Discuss" });
    const tool = gatedTool("create_planner_comment")!;
    const body = `## Evidence\n\n${"x".repeat(5000)}`;
    const input = tool.input.parse({ identifier: `ENG-${issue.number}`, body });
    const preview = await tool.preview(ctx, input);
    expect((preview.fields!.body as string).length).toBe(COMMENT_PREVIEW_CHARS + 1);
    expect(preview.fields).toMatchObject({ body_truncated: true, body_length: body.length });
    const action = exec(ctx);
    const before = linear.comments.size;
    const first = await tool.execute(action, input);
    expect(await tool.execute(action, input)).toEqual(first);
    expect(linear.comments.size - before).toBe(1);
    expect(first).toMatchObject({ issue_identifier: `ENG-${issue.number}`, url: expect.stringContaining(`ENG-${issue.number}#comment-`) });
    expect(linear.comments.get(first.comment_id as string)!.body).toBe(body);
  });
});

