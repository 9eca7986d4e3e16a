/**
 * The integration tools' failures as the model reads them through the agent loop (spec 02 "Tool failures return
 * {success: false, error, error_code}"): a gated write refused at preview (create_planner_issue,
 * update_planner_issue, create_planner_comment, create_codehost_issue) answers the same error_code the read tools use
 * in the same situation, with its extra fields (selected_repos), and queues nothing; Linear dropping the connection is
 * error_code unknown. A scripted model makes the calls; the tools run for real against DynamoDB Local and the
 * stand-in Linear and GitHub.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { SetupServer } from "msw/node";
import { runAgent } from "../../../core/agent/loop";
import { TOOLS, type ToolContext } from "../../../core/agent/tools";
import type { CallUsage, ConversationTurn, ModelStreamEvent, StreamingModel } from "../../../core/ai/ports";
import { call, newWorkspace } from "../../support/api";
import { connectLinear, LinearStandIn, useLinearSettings } from "../../support/linear-standin";
import { GitHubStandIn } from "../../support/github-standin";
import { connectGithub, useStandInSettings } from "../../support/integrations";
import { listenTogether } from "../../support/standins";

const REPO = "octokit-fixture-org/hello-world";
const OTHER = "octokit-fixture-org/py-service";
const linear = new LinearStandIn();
const github = new GitHubStandIn([REPO, OTHER]);
let server: SetupServer;

beforeAll(() => {
  useLinearSettings(linear);
  useStandInSettings(github);
  server = listenTogether(linear, github);
});
afterAll(() => server.close());

const usage: CallUsage = { modelId: "scripted", tier: "small", inputTokens: 10, outputTokens: 5, costUsd: 0, latencyMs: 1, attempts: 1 };

/** A model that makes the given tool calls, one a turn, then answers; what the loop handed back is in `results`. */
function scripted(calls: { name: string; input: Record<string, unknown> }[]): StreamingModel {
  let turn = 0;
  return {
    engine: "scripted",
    async *stream(): AsyncIterable<ModelStreamEvent> {
      const next = calls[turn++];
      if (next) {
        yield { type: "tool_call", id: `call_${turn}`, name: next.name, input: next.input };
        yield { type: "stop", reason: "tool_use", usage };
        return;
      }
      yield { type: "text", delta: "Done." };
      yield { type: "stop", reason: "end_turn", usage };
    },
  };
}

/** Run the loop over `calls`; the tool results the model was handed, in order, and the pending actions created. */
async function runCalls(ctx: ToolContext, calls: { name: string; input: Record<string, unknown> }[]) {
  const messages: ConversationTurn[] = [{ role: "user", content: [{ type: "text", text: "Go." }] }];
  const result = await runAgent({
    model: scripted(calls), ctx, system: "s", messages, tools: TOOLS, tier: "small", maxTurns: calls.length + 1, signal: new AbortController().signal, emit: () => undefined,
  });
  const results = result.messages.flatMap((m) => m.content).flatMap((c) => (c.type === "tool_result" ? [c] : []));
  return { results: results.map((r) => r.content as Record<string, unknown>), pendingActionIds: result.pendingActionIds, steps: result.steps };
}

const ctxOf = (owner: { id: string }, workspace: { id: string }): ToolContext => ({ userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [] });

describe("planner write tools refused at preview", () => {
  it("answer integration_not_connected, no_team_selected, not_found and user_not_found as {success: false, error, error_code}, queuing nothing", async () => {
    const bare = await newWorkspace("Planner none");
    const noTeam = await newWorkspace("Planner no team");
    await connectLinear(linear, noTeam.owner.token, noTeam.workspace.id);
    const team = await newWorkspace("Planner team");
    await connectLinear(linear, team.owner.token, team.workspace.id);
    const sel = await call("POST", "/api/integrations/planner/teams/select", { token: team.owner.token, body: { workspace_id: team.workspace.id, team_id: linear.team("ENG").id, team_name: "Engineering" } });
    expect(sel.status, sel.text).toBe(200);
    const issue = linear.addIssue("ENG", { title: "Refusals" });

    const none = await runCalls(ctxOf(bare.owner, bare.workspace), [
      { name: "create_planner_issue", input: { title: "x" } },
      { name: "query_planner_issues", input: {} },
    ]);
    // The write answers what the read answers in the same situation.
    expect(none.results[0]).toEqual({ success: false, error: expect.any(String), error_code: "integration_not_connected" });
    expect(none.results[1]).toMatchObject({ success: false, error_code: "integration_not_connected" });

    const unselected = await runCalls(ctxOf(noTeam.owner, noTeam.workspace), [
      { name: "create_planner_issue", input: { title: "x" } },
      { name: "update_planner_issue", input: { identifier: `ENG-${issue.number}`, priority: 1 } },
      { name: "query_planner_issues", input: {} },
    ]);
    expect(unselected.results[0]).toEqual({ success: false, error: expect.stringContaining("No Linear team is selected"), error_code: "no_team_selected" });
    expect(unselected.results[1]).toMatchObject({ success: false, error_code: "no_team_selected" });
    expect(unselected.results[2]).toMatchObject({ success: false, error_code: "no_team_selected" });

    const selected = await runCalls(ctxOf(team.owner, team.workspace), [
      { name: "update_planner_issue", input: { identifier: "ENG-9999", priority: 1 } },
      { name: "update_planner_issue", input: { identifier: `ENG-${issue.number}`, assignee_name: "nobody at all" } },
      { name: "create_planner_comment", input: { identifier: "ENG-9999", body: "Hello" } },
      { name: "get_planner_issue", input: { identifier: "ENG-9999" } },
    ]);
    expect(selected.results[0]).toEqual({ success: false, error: expect.stringContaining("ENG-9999"), error_code: "not_found" });
    expect(selected.results[1]).toMatchObject({ success: false, error_code: "user_not_found" });
    expect(selected.results[2]).toMatchObject({ success: false, error_code: "not_found" });
    expect(selected.results[3]).toMatchObject({ success: false, error_code: "not_found" });

    // The refused writes are errors of the loop (a read's failure is its answer); none queued anything.
    expect([none, unselected, selected].map((r) => r.steps.map((s) => s.status))).toEqual([["error", "success"], ["error", "error", "success"], ["error", "error", "error", "success"]]);
    expect([...none.pendingActionIds, ...unselected.pendingActionIds, ...selected.pendingActionIds]).toEqual([]);
  });

  it("Linear dropping the connection is error_code unknown, for a read tool and for a write's preview", async () => {
    const { owner, workspace } = await newWorkspace("Planner lost");
    await connectLinear(linear, owner.token, workspace.id);
    const sel = await call("POST", "/api/integrations/planner/teams/select", { token: owner.token, body: { workspace_id: workspace.id, team_id: linear.team("ENG").id, team_name: "Engineering" } });
    expect(sel.status, sel.text).toBe(200);
    const issue = linear.addIssue("ENG", { title: "Unreachable" });
    linear.fail({ operation: "PlannerIssues", kind: "lost" });
    linear.fail({ operation: "PlannerIssue", kind: "lost" });
    const run = await runCalls(ctxOf(owner, workspace), [
      { name: "query_planner_issues", input: {} },
      { name: "create_planner_comment", input: { identifier: `ENG-${issue.number}`, body: "Hello" } },
    ]);
    expect(run.results[0]).toEqual({ success: false, error: expect.stringMatching(/^Linear failed: no answer \(fetch failed/), error_code: "unknown" });
    expect(run.results[1]).toEqual({ success: false, error: expect.stringMatching(/^Linear failed: no answer \(fetch failed/), error_code: "unknown" });
    expect(run.pendingActionIds).toEqual([]);
  });
});

describe("create_codehost_issue refused at preview", () => {
  it("answers integration_not_connected, repo_required with selected_repos, and forbidden for an unselected repo, as the read tools do", async () => {
    const bare = await newWorkspace("Codehost none");
    const { owner, workspace } = await newWorkspace("Codehost two");
    await connectGithub(github, owner.token, workspace.id);
    const sel = await call("POST", "/api/integrations/codehost/repos/select", { token: owner.token, body: { workspace_id: workspace.id, repos: [REPO, OTHER] } });
    expect(sel.status, sel.text).toBe(200);

    const none = await runCalls(ctxOf(bare.owner, bare.workspace), [{ name: "create_codehost_issue", input: { title: "x" } }]);
    expect(none.results[0]).toEqual({ success: false, error: expect.any(String), error_code: "integration_not_connected" });

    const two = await runCalls(ctxOf(owner, workspace), [
      { name: "create_codehost_issue", input: { title: "x" } },
      { name: "get_readme", input: {} },
      { name: "create_codehost_issue", input: { title: "x", repo: "octokit-fixture-org/elsewhere" } },
      { name: "get_readme", input: { repo: "octokit-fixture-org/elsewhere" } },
    ]);
    expect(two.results[0]).toEqual({ success: false, error: expect.stringContaining("Name the repository"), error_code: "repo_required", selected_repos: [REPO, OTHER] });
    expect(two.results[1]).toEqual(two.results[0]);
    expect(two.results[2]).toEqual({ success: false, error: expect.stringContaining("not a selected repository"), error_code: "forbidden", selected_repos: [REPO, OTHER] });
    expect(two.results[3]).toEqual(two.results[2]);
    expect([...none.pendingActionIds, ...two.pendingActionIds]).toEqual([]);
    expect(two.steps.map((s) => s.status)).toEqual(["error", "success", "error", "success"]);
  });
});
