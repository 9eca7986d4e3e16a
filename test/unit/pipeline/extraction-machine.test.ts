/**
 * The extraction state machine's Retry and Catch paths (functions/steps/extraction.asl.ts), run by
 * aws-local-stepfunctions on the real definition with the real step handlers, some wrapped to inject faults.
 *
 * Sources are created through the real API and the real S3 consumer; the workflow runner of this file only
 * records the executions the consumer (and reprocess) start, so each test runs them itself and decides what
 * happens in between. Spec 01 Research source processing; docs/decisions.md (processing_attempt).
 */
import { ListObjectsV2Command } from "@aws-sdk/client-s3";
import {
  DetectDocumentTextCommand,
  GetDocumentTextDetectionCommand,
  StartDocumentTextDetectionCommand,
  TextractClient,
} from "@aws-sdk/client-textract";
import { GetTranscriptionJobCommand, TranscribeClient } from "@aws-sdk/client-transcribe";
import { StateMachine } from "aws-local-stepfunctions";
import { mockClient } from "aws-sdk-client-mock";
import sharp from "sharp";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { ExtractionError } from "../../../core/extract";
import { s3Client } from "../../../core/storage/client";
import { Config } from "../../../core/config";
import { setWorkflowRunner, type ExtractionInput } from "../../../core/pipeline";
import * as Research from "../../../core/research";
import { db } from "../../../core/db/service";
import { extractionDefinition, JOB_DEADLINE_SECONDS, STEP_TASKS, type StepTaskName } from "../../../functions/steps/extraction.asl";
import { routeOf, TEXTRACT_IMAGE_MAX_BYTES } from "../../../functions/steps/validate";
import { localExtractionDefinition } from "../../../local/pipeline";
import { call, newWorkspace } from "../../support/api";
import { realFile, uploadResearch, waitFor } from "../../support/multipart";

type Handler = (input: any) => Promise<any>;
const STATES = Object.keys(STEP_TASKS) as StepTaskName[];

/** The real task handlers, loaded the way the local runner loads them. */
const real = Object.fromEntries(
  STATES.map((state) => [
    state,
    async (input: unknown) => ((await import(`../../../functions/steps/${STEP_TASKS[state]}.ts`)) as { handler: Handler }).handler(input),
  ]),
) as Record<StepTaskName, Handler>;

/** Executions started by the S3 consumer and by reprocess, recorded instead of run. */
const started: ExtractionInput[] = [];

beforeAll(() => {
  setWorkflowRunner({ startExtraction: async (input) => void started.push(input), isRunning: async () => false });
});

/** The execution input the consumer or reprocess started for this source and attempt. */
const startedFor = (sourceId: string, attempt: number) =>
  waitFor(async () => started.find((i) => i.source_id === sourceId && i.attempt === attempt));

/**
 * Run one execution of the real definition with the real handlers, `overrides` wrapping some of them; counts calls
 * per state. Retry intervals are shortened to 1 ms (the Retry policy itself, attempts and errors, is the real one).
 */
async function execute(input: ExtractionInput, overrides: Partial<Record<StepTaskName, Handler>> = {}, definition: object = extractionDefinition) {
  const calls = Object.fromEntries(STATES.map((s) => [s, 0])) as Record<StepTaskName, number>;
  const handlers = Object.fromEntries(
    STATES.map((s) => [
      s,
      async (i: unknown) => {
        calls[s]++;
        return (overrides[s] ?? real[s])(i);
      },
    ]),
  );
  const machine = new StateMachine(definition as never, { validationOptions: { checkPaths: false } });
  const execution = machine.run(input as never, {
    overrides: {
      taskResourceLocalHandlers: handlers as never,
      waitTimeOverrides: { WaitTextract: 0, WaitTranscribe: 0 },
      retryIntervalOverrides: Object.fromEntries(STATES.map((s) => [s, 1])),
    },
  });
  const output = (await execution.result) as any;
  return { output, calls };
}

const throttling = () => Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" });

async function uploadText(token: string, workspaceId: string, name = "notes.md", text = "# Interview\n\nThe export button is hard to find.\n") {
  const res = await uploadResearch(token, workspaceId, { name, data: Buffer.from(text) }, "text/markdown");
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

async function uploadFile(token: string, workspaceId: string, file: { name: string; data: Buffer }, type: string) {
  const res = await uploadResearch(token, workspaceId, file, type, "other");
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

async function keysUnder(prefix: string): Promise<string[]> {
  const out = await (await s3Client()).send(new ListObjectsV2Command({ Bucket: Config.bucketName(), Prefix: prefix }));
  return (out.Contents ?? []).map((o) => o.Key!);
}

describe("extraction state machine: Retry", () => {
  it("a task that throws ThrottlingException twice is retried and the source completes", async () => {
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const input = await startedFor(id, 0);
    let failures = 2;
    const { output, calls } = await execute(input, {
      Parse: async (i) => {
        if (failures-- > 0) throw throttling();
        return real.Parse(i);
      },
    });
    expect(calls.Parse).toBe(3);
    expect(calls.MarkFailed).toBe(0);
    expect(calls.Complete).toBe(1);
    expect(output.error).toBeUndefined();
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item.processing_status).toBe("completed");
    expect((await Research.readExtraction(workspace.id, id))!.extracted_text).toContain("The export button is hard to find.");
  });

  it("throttling on every attempt gives up after MaxAttempts retries and marks the source failed", async () => {
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const input = await startedFor(id, 0);
    const { output, calls } = await execute(input, { Validate: async () => Promise.reject(throttling()) });
    expect(calls.Validate).toBe(1 + extractionDefinition.States.Validate.Retry[0].MaxAttempts);
    expect(calls.Parse).toBe(0);
    expect(calls.MarkFailed).toBe(1);
    expect(output.error).toMatchObject({ Error: "ThrottlingException", Cause: "Rate exceeded" });
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item.processing_status).toBe("failed");
    expect(item.processing_error).toMatch(/busy \(ThrottlingException\); try reprocessing/);
  });
});

describe("extraction state machine: Catch", () => {
  it("an ExtractionError (a truncated PDF) goes straight to MarkFailed, without retries, with a reason", async () => {
    const { owner, workspace } = await newWorkspace();
    const pdf = await realFile("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const id = await uploadFile(owner.token, workspace.id, { name: "cut.pdf", data: pdf.data.subarray(0, 20_000) }, "application/pdf");
    const { output, calls } = await execute(await startedFor(id, 0));
    expect(calls).toMatchObject({ Validate: 1, Parse: 1, Complete: 0, Index: 0, MarkFailed: 1 });
    expect(output.error.Error).toBe("ExtractionError");
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item.processing_status).toBe("failed");
    expect(item.processing_error).toMatch(/PDF could not be read/);
    expect(await keysUnder(`workspaces/${workspace.id}/sources/${id}/extraction.json`)).toEqual([]);
  });

  it("an unexpected error in a task is caught into MarkFailed with its message, not retried", async () => {
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const { output, calls } = await execute(await startedFor(id, 0), {
      Complete: async () => {
        throw new TypeError("boom");
      },
    });
    expect(calls).toMatchObject({ Complete: 1, MarkFailed: 1, Index: 0 });
    expect(output.error).toEqual({ Error: "TypeError", Cause: "boom" });
    expect((await Research.getItem(workspace.id, id))!.processing_status).toBe("failed");
  });

  it("an Index failure is skipped: the source stays completed", async () => {
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const { output, calls } = await execute(await startedFor(id, 0), {
      Index: async () => {
        throw new Error("embedding model unavailable");
      },
    });
    expect(calls).toMatchObject({ Complete: 1, Index: 1, MarkFailed: 0 });
    expect(output.indexError).toMatchObject({ Error: "Error", Cause: "embedding model unavailable" });
    expect((await Research.getItem(workspace.id, id))!.processing_status).toBe("completed");
  });
});

describe("extraction state machine: stale executions write nothing", () => {
  it("an attempt superseded by reprocess while it runs writes neither the extraction nor a status", async () => {
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const first = await startedFor(id, 0);
    // Reprocess arrives after the first execution validated the source (pending -> pending, attempt 1).
    const { output, calls } = await execute(first, {
      Validate: async (i) => {
        const out = await real.Validate(i);
        const res = await call("POST", `/api/research/sources/${id}/reprocess`, { token: owner.token });
        expect(res.status, res.text).toBe(200);
        return out;
      },
    });
    expect(output.error?.Error).toBe("StaleExecutionError");
    expect(calls).toMatchObject({ Parse: 1, Complete: 0, MarkFailed: 1 });
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item).toMatchObject({ processing_status: "pending", processing_attempt: 1 });
    expect(item.processing_error).toBeUndefined();
    expect(await keysUnder(`workspaces/${workspace.id}/sources/${id}/extraction.json`)).toEqual([]);

    // The current attempt completes; a late duplicate of the old one changes nothing.
    await execute(await startedFor(id, 1));
    const done = (await Research.getItem(workspace.id, id))!;
    expect(done.processing_status).toBe("completed");
    const late = await execute(first);
    expect(late.output.error.Error).toBe("StaleExecutionError");
    expect(late.calls).toMatchObject({ Validate: 1, Parse: 0, MarkFailed: 1 });
    expect(await Research.getItem(workspace.id, id)).toEqual(done);
  });

  it("an attempt superseded after parsing stops at Complete: no status written, nothing indexed", async () => {
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const { output, calls } = await execute(await startedFor(id, 0), {
      Parse: async (i) => {
        const out = await real.Parse(i);
        const res = await call("POST", `/api/research/sources/${id}/reprocess`, { token: owner.token });
        expect(res.status, res.text).toBe(200);
        return out;
      },
    });
    expect(output.error?.Error).toBe("StaleExecutionError");
    expect(calls).toMatchObject({ Complete: 1, Index: 0, MarkFailed: 1 });
    expect(await Research.getItem(workspace.id, id)).toMatchObject({ processing_status: "pending", processing_attempt: 1, indexed: false });
  });

  it("a failing attempt superseded by reprocess does not mark the newer attempt failed", async () => {
    const { owner, workspace } = await newWorkspace();
    const pdf = await realFile("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const id = await uploadFile(owner.token, workspace.id, { name: "cut.pdf", data: pdf.data.subarray(0, 20_000) }, "application/pdf");
    const first = await startedFor(id, 0);
    const { calls } = await execute(first, {
      Parse: async (i) => {
        const res = await call("POST", `/api/research/sources/${id}/reprocess`, { token: owner.token });
        expect(res.status, res.text).toBe(200);
        return real.Parse(i);
      },
    });
    expect(calls.MarkFailed).toBe(1);
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item).toMatchObject({ processing_status: "pending", processing_attempt: 1 });
    expect(item.processing_error).toBeUndefined();
  });

  it("a source deleted while its file is being parsed leaves nothing behind", async () => {
    const { owner, workspace } = await newWorkspace();
    const pdf = await realFile("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const id = await uploadFile(owner.token, workspace.id, pdf, "application/pdf");
    const { output } = await execute(await startedFor(id, 0), {
      // The real Parse reads the file first; the delete lands while the PDF is being parsed.
      Parse: async (i) => {
        const parsing = real.Parse(i);
        const del = await call("DELETE", `/api/research/sources/${id}`, { token: owner.token });
        expect(del.status, del.text).toBe(204);
        return parsing;
      },
    });
    expect(output.error?.Error).toBe("StaleExecutionError");
    expect(await Research.getItem(workspace.id, id)).toBeNull();
    expect(await keysUnder(`workspaces/${workspace.id}/`)).toEqual([]);
  });

  it("a source deleted after Parse's last check gets its extraction removed by Complete", async () => {
    const { owner, workspace } = await newWorkspace();
    const id = await uploadText(owner.token, workspace.id);
    const { output, calls } = await execute(await startedFor(id, 0), {
      // The race: a delete removed the source's files before Parse wrote extraction.json, and its item after.
      Parse: async (i) => {
        const out = await real.Parse(i);
        expect(await keysUnder(Research.extractionKey(workspace.id, id))).toHaveLength(1);
        await db().entities.researchSource.delete({ workspace_id: workspace.id, id }).go();
        return out;
      },
    });
    expect(output.error?.Error).toBe("StaleExecutionError");
    expect(calls).toMatchObject({ Parse: 1, Complete: 1, Index: 0 });
    expect(await keysUnder(Research.extractionKey(workspace.id, id))).toEqual([]);
  });
});

describe("local runner definition", () => {
  it("the local runner's tasks outlast aws-local-stepfunctions' 60-second default task timeout", async () => {
    const local = localExtractionDefinition() as any;
    for (const [name, state] of Object.entries(local.States) as [string, any][]) {
      if (state.Type === "Task") expect(state.TimeoutSeconds, name).toBe(extractionDefinition.TimeoutSeconds);
    }
    // The shared definition itself is unchanged (the deployed state machine is built from it).
    expect((extractionDefinition.States.Parse as Record<string, unknown>).TimeoutSeconds).toBeUndefined();

    // A Parse that takes 61 s: the shared definition times out under the library's default, the local one does not.
    const slowParse = async (definition: object) => {
      let finishParse!: () => void;
      const parseDone = new Promise<void>((r) => (finishParse = r));
      const pass: Handler = async (i) => i;
      const run = execute(
        { workspace_id: "w", source_id: "s", bucket: "b", key: "k", attempt: 0 },
        { Validate: async (i) => ({ ...i, route: "parse" }), Parse: async (i) => (await parseDone, i), Complete: pass, Index: pass, MarkFailed: pass },
        definition,
      );
      await vi.advanceTimersByTimeAsync(61_000);
      finishParse();
      return run;
    };
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    try {
      const shared = await slowParse(extractionDefinition);
      expect(shared.output.error?.Error).toBe("States.Timeout");
      const { output, calls } = await slowParse(local);
      expect(output.error).toBeUndefined();
      expect(calls).toMatchObject({ Parse: 1, Complete: 1, MarkFailed: 0 });
    } finally {
      vi.useRealTimers();
    }
  });
});

/**
 * The AWS route (EXTRACTION_ENGINES=aws): the real Validate chooses the route, Textract and Transcribe are answered
 * by aws-sdk-client-mock (test/unit/extract/aws.test.ts has their response shapes).
 */
describe("extraction state machine on the AWS engines", () => {
  const textract = mockClient(TextractClient);
  const transcribe = mockClient(TranscribeClient);
  const previous = process.env.EXTRACTION_ENGINES;
  beforeAll(() => {
    process.env.EXTRACTION_ENGINES = "aws";
  });
  afterAll(() => {
    if (previous === undefined) delete process.env.EXTRACTION_ENGINES;
    else process.env.EXTRACTION_ENGINES = previous;
    textract.restore();
    transcribe.restore();
  });

  /** A Textract result: one PAGE block and its LINE blocks per page. */
  const textractResult = (pages: string[][]) => ({
    JobStatus: "SUCCEEDED" as const,
    DocumentMetadata: { Pages: pages.length },
    Blocks: pages.flatMap((lines, p) => [
      { BlockType: "PAGE" as const, Id: `page-${p + 1}`, Page: p + 1, Relationships: [{ Type: "CHILD" as const, Ids: lines.map((_, i) => `l${p + 1}-${i}`) }] },
      ...lines.map((text, i) => ({ BlockType: "LINE" as const, Id: `l${p + 1}-${i}`, Page: p + 1, Text: text })),
    ]),
  });

  it("a multi-page TIFF goes to asynchronous text detection, not the single-page DetectDocumentText", async () => {
    textract.reset();
    textract.on(StartDocumentTextDetectionCommand).resolves({ JobId: "job-tiff" });
    textract.on(GetDocumentTextDetectionCommand).resolves(textractResult([["Usability test, session 1"], ["Session 2: the export button"]]));
    const { owner, workspace } = await newWorkspace();
    const page = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#fff" } }).png().toBuffer();
    const tiff = await sharp([page, page], { join: { animated: true } }).tiff({ compression: "lzw" }).toBuffer();
    const id = await uploadFile(owner.token, workspace.id, { name: "sessions.tiff", data: tiff }, "image/tiff");
    const input = await startedFor(id, 0);
    const { output, calls } = await execute(input);
    expect(calls).toMatchObject({ Validate: 1, Parse: 0, StartTextract: 1, CheckTextract: 1, Complete: 1, MarkFailed: 0 });
    expect(textract.commandCalls(DetectDocumentTextCommand)).toHaveLength(0);
    expect(textract.commandCalls(StartDocumentTextDetectionCommand)[0]!.args[0].input.DocumentLocation).toEqual({
      S3Object: { Bucket: input.bucket, Name: input.key },
    });
    expect(output.job).toMatchObject({ id: "job-tiff", status: "SUCCEEDED" });
    expect(Date.parse(output.job.started_at)).toBeGreaterThan(Date.now() - 60_000);
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item).toMatchObject({ processing_status: "completed", pages: 2, engine: "textract" });
    expect((await Research.readExtraction(workspace.id, id))!.extracted_text).toContain("Session 2: the export button");
  });

  it("a PNG over 10 MB fails before Textract is called, with a reason a user can act on", async () => {
    textract.reset();
    textract.on(DetectDocumentTextCommand).resolves(textractResult([["Screenshot text"]]));
    const { owner, workspace } = await newWorkspace();
    const png = await sharp({ create: { width: 64, height: 64, channels: 3, background: "#fff" } }).png().toBuffer();
    // A PNG with 10 MB of trailing bytes: what the route looks at is the stored size (decoding is Textract's job).
    const big = Buffer.concat([png, Buffer.alloc(TEXTRACT_IMAGE_MAX_BYTES + 1 - png.length)]);
    // Over the multipart limit (4 MB): through a presigned POST, as a browser would.
    const res = await call("POST", "/api/research/upload-url", {
      token: owner.token,
      body: { workspace_id: workspace.id, source_type: "other", title: "Whiteboard", file_name: "whiteboard.png", content_type: "image/png", file_size_bytes: big.length },
    });
    expect(res.status, res.text).toBe(201);
    const form = new FormData();
    for (const [k, v] of Object.entries(res.body.upload.fields as Record<string, string>)) form.append(k, v);
    form.append("file", new Blob([new Uint8Array(big)], { type: "image/png" }), "whiteboard.png");
    expect((await fetch(res.body.upload.url, { method: "POST", body: form })).status).toBe(204);
    const id = res.body.source.id as string;
    const { output, calls } = await execute(await startedFor(id, 0));
    expect(calls).toMatchObject({ Validate: 1, Parse: 0, StartTextract: 0, MarkFailed: 1 });
    expect(output.error.Error).toBe("ExtractionError");
    expect(textract.calls()).toHaveLength(0);
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item.processing_status).toBe("failed");
    expect(item.processing_error).toBe(
      "This image is 10.0 MB; images over 10 MB cannot be read in this deployment. Scale it down or save it as a PDF, then upload it again",
    );
    // The original stays (a reprocess starts from it); the attempt's checked copy went with the failure.
    expect(await keysUnder(`workspaces/${workspace.id}/sources/${id}/`)).toEqual([item.file_key]);
  });

  it("routes by kind and size only in AWS: images up to 10 MB are parsed, TIFFs polled; locally everything is parsed", () => {
    const png = { kind: "image", contentType: "image/png" } as const;
    const tiff = { kind: "image", contentType: "image/tiff" } as const;
    expect(routeOf(png, TEXTRACT_IMAGE_MAX_BYTES, "aws")).toBe("parse");
    expect(() => routeOf({ kind: "image", contentType: "image/jpeg" }, TEXTRACT_IMAGE_MAX_BYTES + 1, "aws")).toThrow(ExtractionError);
    expect(routeOf(tiff, 90 * 1_048_576, "aws")).toBe("textract");
    expect(routeOf({ kind: "pdf", contentType: "application/pdf" }, 1000, "aws")).toBe("textract");
    expect(routeOf({ kind: "audio", contentType: "audio/wav" }, 1000, "aws")).toBe("transcribe");
    for (const verdict of [png, tiff, { kind: "pdf", contentType: "application/pdf" } as const]) {
      expect(routeOf(verdict, 90 * 1_048_576, "local")).toBe("parse");
    }
  });

  it("a Textract job still running past the deadline fails the source through MarkFailed, with a reason", async () => {
    textract.reset();
    textract.on(StartDocumentTextDetectionCommand).resolves({ JobId: "job-slow" });
    // Without a deadline the job would be polled until it ends: here, FAILED on the fourth poll.
    textract
      .on(GetDocumentTextDetectionCommand)
      .resolvesOnce({ JobStatus: "IN_PROGRESS" })
      .resolvesOnce({ JobStatus: "IN_PROGRESS" })
      .resolvesOnce({ JobStatus: "IN_PROGRESS" })
      .resolves({ JobStatus: "FAILED", StatusMessage: "Internal error" });
    const { owner, workspace } = await newWorkspace();
    const pdf = await realFile("jupyter/docs/jupyter-org-redesign-heuristic-eval-competitive-analysis.pdf");
    const id = await uploadFile(owner.token, workspace.id, pdf, "application/pdf");
    const { output, calls } = await execute(await startedFor(id, 0), {
      // The job started longer ago than the deadline (the state machine's Wait states are skipped here).
      StartTextract: async (i) => {
        const out = await real.StartTextract(i);
        return { ...out, job: { ...out.job, started_at: new Date(Date.now() - (JOB_DEADLINE_SECONDS + 1) * 1000).toISOString() } };
      },
    });
    expect(calls).toMatchObject({ StartTextract: 1, CheckTextract: 1, Complete: 0, MarkFailed: 1 });
    expect(output.error.Error).toBe("ExtractionError");
    const item = (await Research.getItem(workspace.id, id))!;
    expect(item.processing_status).toBe("failed");
    expect(item.processing_error).toBe(
      `Text detection took longer than ${JOB_DEADLINE_SECONDS / 60} minutes, so it was stopped; try reprocessing later, or split the document into smaller files`,
    );
  });

  it("CheckTranscribe keeps polling before the deadline, carrying the start time, and fails past it", async () => {
    transcribe.reset();
    transcribe.on(GetTranscriptionJobCommand).resolves({ TranscriptionJob: { TranscriptionJobStatus: "IN_PROGRESS" } });
    const state = { workspace_id: "w", source_id: "s", bucket: "b", key: "k", attempt: 0, route: "transcribe" };
    const at = (secondsAgo: number) => ({ id: "src-s-0", status: "IN_PROGRESS", started_at: new Date(Date.now() - secondsAgo * 1000).toISOString() });
    const early = at(JOB_DEADLINE_SECONDS - 60);
    await expect(real.CheckTranscribe({ ...state, job: early })).resolves.toMatchObject({ job: early });
    const late = await real.CheckTranscribe({ ...state, job: at(JOB_DEADLINE_SECONDS + 1) }).catch((e: unknown) => e);
    expect(late).toBeInstanceOf(ExtractionError);
    expect((late as Error).message).toBe(
      `Transcription took longer than ${JOB_DEADLINE_SECONDS / 60} minutes, so it was stopped; try reprocessing later, or split the recording into shorter parts`,
    );
  });

  it("the polling deadline ends well before the execution's timeout, so MarkFailed runs", () => {
    // After the deadline: one more Check (its Lambda stops at 300 s) and MarkFailed, or Complete; before the job:
    // Validate and the Start step. All of it must fit between the deadline and TimeoutSeconds.
    expect(JOB_DEADLINE_SECONDS).toBeGreaterThanOrEqual(30 * 60);
    expect(extractionDefinition.TimeoutSeconds - JOB_DEADLINE_SECONDS).toBeGreaterThanOrEqual(3 * 300);
  });
});
