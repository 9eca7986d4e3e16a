/**
 * The embedded runtime's workflow runner (local/pipeline.ts): executions run at once, as in Step Functions, and only
 * the tasks that hold real work take turns (Parse, Index). Each test installs a runner whose held task waits on a
 * gate, so what the other executions do meanwhile is observed, not timed.
 */
import { afterEach, describe, expect, it } from "vitest";
import { setWorkflowRunner } from "../../../core/pipeline";
import * as Research from "../../../core/research";
import { drainLocalWorkflows, localWorkflowRunner } from "../../../local/pipeline";
import { newWorkspace } from "../../support/api";
import { uploadResearch, waitFor } from "../../support/multipart";

type Handler = (input: any) => Promise<any>;
const step = (file: string): Handler => async (input) => ((await import(`../../../functions/steps/${file}.ts`)) as { handler: Handler }).handler(input);

const gates: (() => void)[] = [];
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gates.push(open);
  return { opened, open };
}

async function uploadText(token: string, workspaceId: string, name: string) {
  const res = await uploadResearch(token, workspaceId, { name, data: Buffer.from(`# ${name}\n\nThe export button is hard to find.\n`) }, "text/markdown");
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

const statusOf = async (workspaceId: string, id: string) => (await Research.getItem(workspaceId, id))?.processing_status;

afterEach(async () => {
  for (const open of gates.splice(0)) open(); // a failed test must not leave executions held
  await drainLocalWorkflows();
  setWorkflowRunner(localWorkflowRunner());
});

describe("local workflow runner: per-task limits", () => {
  it("a source is extracted to completed while another source's Index holds the only Index slot", async () => {
    const held = gate();
    const indexed: string[] = [];
    setWorkflowRunner(
      localWorkflowRunner({
        indexConcurrency: 1,
        handlers: {
          Index: async (input: any) => {
            indexed.push(input.source_id);
            await held.opened;
            return input;
          },
        },
      }),
    );
    const { owner, workspace } = await newWorkspace();
    const first = await uploadText(owner.token, workspace.id, "first.md");
    await waitFor(async () => indexed.includes(first));
    expect(await statusOf(workspace.id, first)).toBe("completed");

    const second = await uploadText(owner.token, workspace.id, "second.md");
    await waitFor(async () => (await statusOf(workspace.id, second)) === "completed");
    expect(indexed).toEqual([first]); // the second's Index waits for the slot

    held.open();
    await waitFor(async () => indexed.includes(second));
  });

  it("Parse tasks take turns: with one slot, a second source waits after Validate until the first is parsed", async () => {
    const held = gate();
    const validated: string[] = [];
    const parsing: string[] = [];
    setWorkflowRunner(
      localWorkflowRunner({
        parseConcurrency: 1,
        handlers: {
          Validate: async (input: any) => {
            const out = await step("validate")(input);
            validated.push(input.source_id);
            return out;
          },
          Parse: async (input: any) => {
            parsing.push(input.source_id);
            if (parsing.length === 1) await held.opened;
            return step("parse")(input);
          },
        },
      }),
    );
    const { owner, workspace } = await newWorkspace();
    const first = await uploadText(owner.token, workspace.id, "first.md");
    await waitFor(async () => parsing.includes(first));
    const second = await uploadText(owner.token, workspace.id, "second.md");
    await waitFor(async () => validated.includes(second));
    // The second execution is past Validate and at Parse's queue; give it time it would need to start.
    await new Promise((r) => setTimeout(r, 200));
    expect(parsing).toEqual([first]);
    expect(await statusOf(workspace.id, second)).toBe("pending");

    held.open();
    await waitFor(async () => (await statusOf(workspace.id, second)) === "completed");
    expect(parsing).toEqual([first, second]);
    expect(await statusOf(workspace.id, first)).toBe("completed");
  });
});
