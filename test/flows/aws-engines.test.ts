import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:http";
import { mockClient } from "aws-sdk-client-mock";
import { GetDocumentTextDetectionCommand, StartDocumentTextDetectionCommand, TextractClient } from "@aws-sdk/client-textract";
import { GetTranscriptionJobCommand, StartTranscriptionJobCommand, TranscribeClient } from "@aws-sdk/client-transcribe";
import { call, newWorkspace } from "../support/api";
import { multipart, realFile, waitFor } from "../support/multipart";

// The AWS route of the extraction state machine, run by the local runner: Textract and Transcribe are answered by
// aws-sdk-client-mock with responses shaped like the services' own; everything of ours runs for real.
const textract = mockClient(TextractClient);
const transcribe = mockClient(TranscribeClient);
let transcriptServer: Server;
let transcriptUrl = "";

beforeAll(async () => {
  process.env.EXTRACTION_ENGINES = "aws";
  const transcript = {
    results: {
      transcripts: [{ transcript: "And so my fellow Americans, ask not what your country can do for you." }],
      items: [
        ["And", 0.1], ["so", 0.4], ["my", 0.6], ["fellow", 0.8], ["Americans", 1.1],
      ].map(([w, t]) => ({ type: "pronunciation", start_time: String(t), end_time: String(Number(t) + 0.2), speaker_label: "spk_0", alternatives: [{ content: w }] }))
        .concat([{ type: "punctuation", alternatives: [{ content: "," }] } as never])
        .concat([["ask", 3.0], ["not", 3.3]].map(([w, t]) => ({ type: "pronunciation", start_time: String(t), end_time: String(Number(t) + 0.2), speaker_label: "spk_1", alternatives: [{ content: w }] }))),
      speaker_labels: { speakers: 2, segments: [] },
    },
  };
  transcriptServer = createServer((_req, res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(transcript)));
  await new Promise<void>((r) => transcriptServer.listen(0, "127.0.0.1", r));
  const address = transcriptServer.address();
  transcriptUrl = `http://127.0.0.1:${typeof address === "object" && address ? address.port : 0}/transcript.json`;
});

afterAll(async () => {
  delete process.env.EXTRACTION_ENGINES;
  textract.restore();
  transcribe.restore();
  await new Promise((r) => transcriptServer.close(r));
});

async function uploadAndSettle(path: string, type: string) {
  const { owner, workspace } = await newWorkspace();
  const file = await realFile(path);
  const body = await multipart({ workspace_id: workspace.id, source_type: "interview", title: file.name }, { ...file, type });
  const res = await call("POST", "/api/research/upload", { token: owner.token, raw: body });
  expect(res.status, res.text).toBe(201);
  return waitFor(async () => {
    const r = await call("GET", `/api/research/sources/${res.body.id}`, { token: owner.token });
    return r.body.processing_status !== "pending" ? r.body : undefined;
  });
}

describe("extraction on the AWS engines (local runner, Textract and Transcribe mocked at the SDK)", () => {
  it("a PDF goes through StartTextract, polls while IN_PROGRESS, and completes with Textract's lines", async () => {
    textract.reset();
    textract.on(StartDocumentTextDetectionCommand).resolves({ JobId: "job-1" });
    textract
      .on(GetDocumentTextDetectionCommand)
      .resolvesOnce({ JobStatus: "IN_PROGRESS" })
      .resolves({
        JobStatus: "SUCCEEDED",
        DocumentMetadata: { Pages: 1 },
        Blocks: [
          { BlockType: "PAGE", Page: 1 },
          { BlockType: "LINE", Page: 1, Text: "Accessibility of Jupyter notebooks", Geometry: { BoundingBox: { Top: 0.1, Left: 0.1, Width: 0.5, Height: 0.02 } } },
          { BlockType: "LINE", Page: 1, Text: "Screen reader users struggle with cell outputs", Geometry: { BoundingBox: { Top: 0.2, Left: 0.1, Width: 0.5, Height: 0.02 } } },
        ],
      });
    const done = await uploadAndSettle("jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf", "application/pdf");
    expect(done.processing_status, done.processing_error).toBe("completed");
    expect(done.extracted_text).toContain("Screen reader users struggle with cell outputs");
    expect(textract.commandCalls(GetDocumentTextDetectionCommand).length).toBeGreaterThanOrEqual(2);
  });

  it("a throttled Textract start is retried by the state machine, and a FAILED job fails the source with Textract's reason", async () => {
    textract.reset();
    const throttle = Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" });
    textract.on(StartDocumentTextDetectionCommand).rejectsOnce(throttle).resolves({ JobId: "job-2" });
    textract.on(GetDocumentTextDetectionCommand).resolves({ JobStatus: "FAILED", StatusMessage: "Unsupported document format" });
    const done = await uploadAndSettle("jupyter/docs/czi-eoss-jupyter-accessibility-proposal.pdf", "application/pdf");
    expect(textract.commandCalls(StartDocumentTextDetectionCommand).length).toBe(2);
    expect(done.processing_status).toBe("failed");
    expect(done.processing_error).toContain("Unsupported document format");
  });

  it("audio goes through Transcribe with speaker labels and keeps speaker turns", async () => {
    transcribe.reset();
    transcribe.on(StartTranscriptionJobCommand).resolves({});
    transcribe
      .on(GetTranscriptionJobCommand)
      .resolvesOnce({ TranscriptionJob: { TranscriptionJobStatus: "IN_PROGRESS" } })
      .resolves({ TranscriptionJob: { TranscriptionJobStatus: "COMPLETED", Transcript: { TranscriptFileUri: transcriptUrl } } });
    const done = await uploadAndSettle("audio/jfk.wav", "audio/wav");
    expect(done.processing_status, done.processing_error).toBe("completed");
    const start = transcribe.commandCalls(StartTranscriptionJobCommand)[0]!.args[0].input;
    expect(start.Settings?.ShowSpeakerLabels).toBe(true);
    expect(done.transcript).toMatch(/Speaker 1: And so my fellow Americans,/);
    expect(done.transcript).toMatch(/Speaker 2: ask not/);
  });
});
