/**
 * The file-store tools' size limits as the agent loop meets them (core/agent/loop.ts, run for real with a scripted
 * model; the tools against the stand-in Google Drive, pending actions in DynamoDB Local): a filestore_read result fits
 * the loop's per-result limit whole (metadata before content, the rest readable by offset), and filestore_write's own
 * limit is what a pending action can hold, so an accepted write always queues.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAgent, type AgentRunResult } from "../../core/agent/loop";
import { TOOLS, type ToolContext } from "../../core/agent/tools";
import { READ_RESULT_CHARS } from "../../core/agent/tools/filestore";
import { MAX_WRITE_BYTES } from "../../core/integration/filestore";
import { MAX_JSON_BYTES } from "../../core/pending-action/schema";
import type { ModelStreamEvent, StreamingModel } from "../../core/ai/ports";
import { newWorkspace } from "../support/api";
import { connectDrive, DriveStandIn, useDriveSettings } from "../support/drive-standin";

const drive = new DriveStandIn();
let ctx: ToolContext;

beforeAll(async () => {
  useDriveSettings(drive);
  drive.listen();
  const { owner, workspace } = await newWorkspace("Drive limits");
  await connectDrive(drive, owner.token, workspace.id);
  ctx = { userId: owner.id, workspaceId: workspace.id, missionId: null, sessionId: null, attachmentIds: [] };
});
afterAll(() => drive.close());

const usage = { modelId: "scripted", tier: "small" as const, inputTokens: 1, outputTokens: 1, costUsd: 0, latencyMs: 1, attempts: 1 };

/** A model that makes one tool call per turn, as scripted, then answers. */
function scripted(calls: { name: string; input: Record<string, unknown> }[]): StreamingModel {
  let i = 0;
  return {
    engine: "local",
    async *stream(): AsyncIterable<ModelStreamEvent> {
      const call = calls[i++];
      if (call) {
        yield { type: "tool_call", id: `tool_${i}`, name: call.name, input: call.input };
        yield { type: "stop", reason: "tool_use", usage };
      } else {
        yield { type: "text", delta: "Done." };
        yield { type: "stop", reason: "end_turn", usage };
      }
    },
  };
}

async function runCalls(calls: { name: string; input: Record<string, unknown> }[]): Promise<AgentRunResult> {
  return runAgent({
    model: scripted(calls), ctx, system: "You are the copilot.", messages: [{ role: "user", content: [{ type: "text", text: "go" }] }],
    tools: TOOLS, tier: "small", maxTurns: calls.length + 1, signal: new AbortController().signal, emit: () => {},
  });
}

/** The tool results the model was handed, in order. */
const resultsOf = (run: AgentRunResult): any[] =>
  run.messages.flatMap((m) => (m.role === "user" ? m.content.filter((c) => c.type === "tool_result").map((c) => (c as { content: unknown }).content) : []));

describe("filestore_read in the loop", () => {
  it("a 40 KB text file: the model gets the result whole (not clipped), valid JSON, truncated with total_bytes and next_offset; offset reads the rest", async () => {
    const line = "Interview 7: the upload stalls at 80% and the user retries. \"Again\", she said.\n";
    const whole = line.repeat(Math.ceil(40_000 / line.length)).slice(0, 40_000);
    const id = drive.put({ name: "interviews.txt", content: whole });

    const first = await runCalls([{ name: "filestore_read", input: { file_id: id } }]);
    expect(first.steps[0]).toMatchObject({ name: "filestore_read", status: "success", truncated: false });
    expect(first.steps[0]!.result_chars).toBeLessThanOrEqual(READ_RESULT_CHARS);
    expect(first.steps[0]!.result_chars).toBeGreaterThan(READ_RESULT_CHARS - 50);
    const [res] = resultsOf(first);
    expect(JSON.parse(JSON.stringify(res))).toEqual(res);
    expect(res).toMatchObject({ file_id: id, name: "interviews.txt", truncated: true, total_bytes: 40_000, exported_as: null, offset: 0, next_offset: res.content.length });
    // The metadata comes before the content: a clipped result would still show it.
    expect(Object.keys(res).at(-1)).toBe("content");
    expect(whole.startsWith(res.content)).toBe(true);

    const second = await runCalls([{ name: "filestore_read", input: { file_id: id, offset: res.next_offset } }]);
    const [rest] = resultsOf(second);
    expect(second.steps[0]).toMatchObject({ status: "success", truncated: false });
    expect(rest.offset).toBe(res.next_offset);
    let text = res.content + rest.content;
    for (let page = rest; page.next_offset !== null; ) {
      [page] = resultsOf(await runCalls([{ name: "filestore_read", input: { file_id: id, offset: page.next_offset } }]));
      text += page.content;
    }
    expect(text).toBe(whole);
  });
});

describe("filestore_write in the loop", () => {
  it("the tool's own limit fits a pending action: under it the write queues; over it (as JSON: escapes count) the tool refuses", async () => {
    // The largest content plus the largest other fields stays within what a pending action holds.
    const worst = { file_id: "f".repeat(200), name: "\u0001".repeat(255), content: "", mime_type: "application/json", folder_id: "f".repeat(200) };
    expect(Buffer.byteLength(JSON.stringify(worst)) + MAX_WRITE_BYTES).toBeLessThanOrEqual(MAX_JSON_BYTES);

    const under = await runCalls([{ name: "filestore_write", input: { name: "under.txt", content: "x".repeat(MAX_WRITE_BYTES - 2) } }]);
    expect(under.steps[0]).toMatchObject({ name: "filestore_write", status: "queued", pending_action_id: expect.any(String) });

    for (const content of ["x".repeat(61_000), "\n".repeat(30_000)]) {
      const over = await runCalls([{ name: "filestore_write", input: { name: "over.txt", content } }]);
      expect(over.steps[0]).toMatchObject({ name: "filestore_write", status: "error" });
      expect(over.pendingActionIds).toEqual([]);
      expect(resultsOf(over)[0].error).toMatch(/content: at most 60000 bytes of content as JSON/);
    }
  });
});
