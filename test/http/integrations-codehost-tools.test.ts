/**
 * The copilot's code-host tools (issue #20 step 2; spec 02 "Agent tools of the integrations"), run as the agent loop
 * runs them (a ToolContext after the membership check) against the stand-in GitHub through real Octokit: arguments,
 * clamps, return fields, the repo rule (omitted with one selected), the spec's error codes, the code-search limit,
 * the manifest probe order, and the gated issue creation that never creates a second issue on a replay.
 */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rateLimit } from "../../core/rate-limit";
import { CODE_SEARCH_PER_MINUTE } from "../../core/agent/tools/integrations";
import { toolByName, gatedTool, type ReadTool, type ToolContext } from "../../core/agent/tools";
import { capBytes, sliceLines } from "../../core/integration/codehost/text";
import { call, newWorkspace } from "../support/api";
import { GitHubStandIn } from "../support/github-standin";
import { connectGithub, useStandInSettings } from "../support/integrations";

const REPO = "octokit-fixture-org/hello-world";
const PY = "octokit-fixture-org/py-service";
const BARE = "octokit-fixture-org/bare";
const github = new GitHubStandIn([REPO, PY, BARE]);
const FILE = Array.from({ length: 1000 }, (_, i) => `line ${i + 1}`).join("\n") + "\n";

beforeAll(() => {
  useStandInSettings(github);
  github.listen();
  github.putFile(REPO, "src/app.ts", FILE);
  github.putFile(REPO, "src/lib/deep/deeper/deepest/x.ts", "export const x = 1;\n");
  github.putFile(REPO, "README.md", "# Hello\n\nThe hello-world app.\n");
  github.putFile(REPO, "package.json", '{ "name": "hello" }\n');
  github.putFile(REPO, "go.mod", "module hello\n");
  github.putFile(PY, "requirements.txt", "requests==2.32.0\n");
  github.putFile(PY, "go.mod", "module py\n");
});
afterAll(() => github.close());

async function context(select: string[]): Promise<ToolContext> {
  const { owner, workspace } = await newWorkspace("Tools");
  await connectGithub(github, owner.token, workspace.id);
  await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: select } });
  return { userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [] };
}

const run = async (ctx: ToolContext, name: string, raw: unknown): Promise<any> => {
  const tool = toolByName(name) as ReadTool;
  return tool.run(ctx, tool.input.parse(raw));
};

describe("text caps", () => {
  it("byte caps never split a character", () => {
    const text = "aé漢😀b";
    for (let n = 0; n <= Buffer.byteLength(text); n++) {
      const { text: kept } = capBytes(text, n);
      expect(Buffer.byteLength(kept)).toBeLessThanOrEqual(n);
      expect(text.startsWith(kept)).toBe(true);
      expect(kept).not.toContain("\uFFFD");
    }
  });

  it("line ranges are 1-indexed and inclusive, clamped to the file", () => {
    expect(sliceLines("a\nb\nc\n", 2, 3)).toMatchObject({ content: "b\nc", start_line: 2, end_line: 3, total_lines: 3, truncated: false });
    expect(sliceLines("a\nb\nc", 3, 99)).toMatchObject({ content: "c", start_line: 3, end_line: 3 });
    expect(sliceLines("", 1)).toMatchObject({ content: "", total_lines: 0, start_line: 0, end_line: 0 });
  });
});

describe("read tools", () => {
  it("read_repo_file: a line range, the default 400-line cap, and the repo omitted when one is selected", async () => {
    const ctx = await context([REPO]);
    const range = await run(ctx, "read_repo_file", { path: "src/app.ts", start_line: 10, end_line: 12 });
    expect(range).toMatchObject({ content: "line 10\nline 11\nline 12", start_line: 10, end_line: 12, total_lines: 1000, total_bytes: Buffer.byteLength(FILE), truncated: false, sha: expect.any(String), repo: REPO });
    const whole = await run(ctx, "read_repo_file", { path: "src/app.ts" });
    expect(whole).toMatchObject({ start_line: 1, end_line: 400, total_lines: 1000, truncated: true });
    expect(whole.content.split("\n")).toHaveLength(400);
    expect(await run(ctx, "read_repo_file", { path: "nope.ts" })).toMatchObject({ success: false, error_code: "not_found" });
  });

  it("the repo rule: with two selected a call must name one (repo_required); an unselected repo is forbidden", async () => {
    const ctx = await context([REPO, PY]);
    expect(await run(ctx, "get_readme", {})).toMatchObject({ success: false, error_code: "repo_required", selected_repos: [REPO, PY] });
    expect(await run(ctx, "get_readme", { repo: BARE })).toMatchObject({ success: false, error_code: "forbidden" });
    expect(await run(ctx, "get_readme", { repo: REPO })).toMatchObject({ content: "# Hello\n\nThe hello-world app.\n", path: "README.md", total_lines: 3, total_bytes: 30 });
  });

  it("list_repo_tree: depth clamped 1 to 5 (default 2) and reported", async () => {
    const ctx = await context([REPO]);
    const def = await run(ctx, "list_repo_tree", {});
    expect(def.depth).toBe(2);
    expect(def.entries.map((e: { path: string }) => e.path).sort()).toEqual(["README.md", "go.mod", "package.json", "src", "src/app.ts", "src/lib"].sort());
    expect(def.entries.find((e: { path: string }) => e.path === "src")).toMatchObject({ type: "dir" });
    expect((await run(ctx, "list_repo_tree", { depth: 0 })).depth).toBe(1);
    const deep = await run(ctx, "list_repo_tree", { depth: 9, path: "src" });
    expect(deep.depth).toBe(5);
    expect(deep.entries.map((e: { path: string }) => e.path)).toContain("src/lib/deep/deeper/deepest/x.ts");
    expect(deep).toMatchObject({ total_entries: deep.entries.length, truncated: false });
  });

  it("search_repo_code: matches with snippets, max_results clamped, and at most 30 searches a minute (rate_limited, retry_after)", async () => {
    const ctx = await context([REPO]);
    const res = await run(ctx, "search_repo_code", { query: "line 77", max_results: 500 });
    expect(res).toMatchObject({ matches: [{ path: "src/app.ts", snippet: "line 77" }], total_matches: 1, truncated: false });
    // The limit counts fixed one-minute windows: fill this window's 30 searches (the 29 others counted as the tool
    // counts them, without calling GitHub) and ask once more, again if a new minute began meanwhile.
    const windowNow = () => Math.floor(Date.now() / 60_000);
    for (let attempt = 0; ; attempt++) {
      const w = windowNow();
      // Up to 30 in this window whatever the search above counted (a count past the limit is refused, not added).
      for (let i = 0; i < CODE_SEARCH_PER_MINUTE; i++) await rateLimit(`codehost-search#${ctx.workspaceId}`, CODE_SEARCH_PER_MINUTE, 60, "codehost-search").catch(() => undefined);
      const before = github.requests.length;
      const limited = await run(ctx, "search_repo_code", { query: "hello" });
      if (windowNow() !== w && attempt < 2) continue;
      expect(limited).toMatchObject({ success: false, error_code: "rate_limited" });
      expect(limited.retry_after).toBeGreaterThan(0);
      expect(limited.retry_after).toBeLessThanOrEqual(60);
      expect(github.requests.length).toBe(before);
      break;
    }
  });

  it("list_recent_commits: limit default 20, clamped to 100, since filter", async () => {
    const ctx = await context([REPO]);
    expect(await run(ctx, "list_recent_commits", {})).toMatchObject({ total: 20, limit: 20 });
    expect((await run(ctx, "list_recent_commits", { limit: 500 })).limit).toBe(100);
    const since = await run(ctx, "list_recent_commits", { since: "2026-01-28T00:00:00Z" });
    expect(since.commits.map((c: { message: string }) => c.message)).toEqual(["Change 30", "Change 29", "Change 28"]);
  });

  it("list_open_pull_requests: open by default; another state value is invalid_state", async () => {
    const ctx = await context([REPO]);
    expect(await run(ctx, "list_open_pull_requests", {})).toMatchObject({ pull_requests: [], total: 0, state: "open", limit: 20 });
    expect(await run(ctx, "list_open_pull_requests", { state: "merged" })).toMatchObject({ success: false, error_code: "invalid_state" });
    expect((await run(ctx, "list_open_pull_requests", { state: "all", limit: 99 })).limit).toBe(50);
  });

  it("get_package_manifest: probes in the spec's order, and says what it probed when none is found", async () => {
    const js = await context([REPO]);
    expect(await run(js, "get_package_manifest", {})).toMatchObject({ detected: true, manifest_type: "npm", path: "package.json", content: '{ "name": "hello" }\n' });
    const py = await context([PY]);
    expect(await run(py, "get_package_manifest", {})).toMatchObject({ detected: true, manifest_type: "python", path: "requirements.txt" });
    const bare = await context([BARE]);
    expect(await run(bare, "get_package_manifest", {})).toEqual({
      repo: BARE, detected: false, paths_probed: ["package.json", "pyproject.toml", "requirements.txt", "go.mod", "Cargo.toml", "Gemfile", "composer.json"],
    });
  });

  it("a revoked grant is token_expired; without a connection, integration_not_connected", async () => {
    const ctx = await context([REPO]);
    const { owner, workspace } = await newWorkspace("None");
    expect(await run({ ...ctx, userId: owner.id, workspaceId: workspace.id }, "get_readme", {})).toMatchObject({ success: false, error_code: "integration_not_connected" });
    github.revokeAll();
    expect(await run(ctx, "get_readme", {})).toMatchObject({ success: false, error_code: "token_expired" });
  });
});

describe("issue tools", () => {
  it("create_codehost_issue is gated; an approved execution replayed with the same action creates one issue; list and get read the link", async () => {
    const ctx = await context([REPO]);
    const rec = await call("POST", "/api/recommendations", { token: (await newTokenFor(ctx)).token, body: { workspace_id: ctx.workspaceId, title: "Resume uploads", description: "Uploads fail on flaky networks." } });
    const tool = gatedTool("create_codehost_issue")!;
    const input = tool.input.parse({ recommendation_id: rec.body.id });
    const preview = await tool.preview(ctx, input);
    expect(preview).toMatchObject({ target: "codehost_issue", operation: "create", summary: `Create a GitHub issue in ${REPO}` });
    const before = github.creations();
    const actionId = randomUUID();
    const exec = { userId: ctx.userId, workspaceId: ctx.workspaceId, actionId };
    const first = await tool.execute(exec, input);
    // A replay of the same action (a crash after GitHub answered): the marker finds the issue; nothing new is created.
    const replay = await tool.execute(exec, input);
    expect(github.creations() - before).toBe(1);
    expect(replay).toEqual(first);
    expect(github.issue(REPO, first.issue_number as number).body).toContain(`r2d:${actionId}`);

    const listed = await run(ctx, "list_codehost_issues", { state: "open" });
    expect(listed).toMatchObject({ count: 1, issues: [{ issue_number: first.issue_number, recommendation_id: rec.body.id }] });
    github.close_(REPO, first.issue_number as number);
    const got = await run(ctx, "get_codehost_issue", { issue_number: first.issue_number });
    expect(got).toMatchObject({ refreshed: true, issue: { state: "closed", state_reason: "completed" } });
    expect(await run(ctx, "list_codehost_issues", { state: "open" })).toMatchObject({ count: 0 });
  });

  it("a replay that comes minutes after the first attempt (an expired lease) still finds the issue that attempt created", async () => {
    const ctx = await context([REPO]);
    const tool = gatedTool("create_codehost_issue")!;
    const input = tool.input.parse({ title: "Retry uploads on flaky networks", body: "Uploads fail." });
    // Approved ten minutes ago; the first attempt created the issue nine minutes ago and crashed before settling.
    const exec = { userId: ctx.userId, workspaceId: ctx.workspaceId, actionId: randomUUID(), approvedAt: new Date(Date.now() - 10 * 60_000).toISOString() };
    const before = github.creations();
    const first = await tool.execute(exec, input);
    github.age(REPO, first.issue_number as number, 9 * 60_000);
    const replay = await tool.execute(exec, input);
    expect(github.creations() - before).toBe(1);
    expect(replay).toEqual(first);
  });
});

/** A token for the tool context's user (the owner made by `context`). */
async function newTokenFor(ctx: ToolContext) {
  const { idp } = await import("../support/api");
  const { db } = await import("../../core/db/service");
  const { data } = await db().entities.user.get({ id: ctx.userId }).go();
  return { token: await idp().sign({ email: data!.email, name: "Test User" }) };
}
