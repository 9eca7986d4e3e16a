/**
 * The AWS engines (Textract, Transcribe) against aws-sdk-client-mock, with responses shaped like the services'
 * real ones (block graphs with CHILD relationships and NextToken pages; Transcribe's diarised transcript JSON).
 * The text in the fixtures is real: lines of the Jupyter.org report PDF and the JFK clip.
 */
import {
  BadDocumentException,
  DetectDocumentTextCommand,
  GetDocumentTextDetectionCommand,
  LimitExceededException as TextractLimitExceeded,
  ProvisionedThroughputExceededException,
  StartDocumentTextDetectionCommand,
  TextractClient,
  ThrottlingException,
  type Block,
} from "@aws-sdk/client-textract";
import {
  BadRequestException,
  ConflictException,
  GetTranscriptionJobCommand,
  LimitExceededException,
  StartTranscriptionJobCommand,
  TranscribeClient,
} from "@aws-sdk/client-transcribe";
import { mockClient } from "aws-sdk-client-mock";
import { afterEach, describe, expect, it, vi } from "vitest";
import { extract, ExtractionError } from "../../../core/extract/index";
import { detectDocumentText, getTextDetection, RESULT_FETCH_BUDGET_MS, startTextDetection, textractOcr } from "../../../core/extract/textract";
import { getTranscription, startTranscription, transcribeMediaFormat, transcriptToExtraction } from "../../../core/extract/transcribe";
import { expectVerbatim } from "./helpers";

const textract = mockClient(TextractClient);
const transcribe = mockClient(TranscribeClient);
afterEach(() => {
  textract.reset();
  transcribe.reset();
});

const $metadata = { httpStatusCode: 400, requestId: "req-1" };
const box = (top: number, left = 0.1) => ({ BoundingBox: { Top: top, Left: left, Width: 0.8, Height: 0.03 } });

/** A LINE block and its WORD children, as Textract returns them. */
function line(id: string, page: number, text: string, top: number, left = 0.1): Block[] {
  const words = text.split(" ").map((w, i): Block => ({ BlockType: "WORD", Id: `${id}-w${i}`, Page: page, Text: w, Confidence: 99.1, TextType: "PRINTED", Geometry: box(top, left) }));
  return [
    { BlockType: "LINE", Id: id, Page: page, Text: text, Confidence: 99.3, Geometry: box(top, left), Relationships: [{ Type: "CHILD", Ids: words.map((w) => w.Id!) }] },
    ...words,
  ];
}
const page = (n: number, childIds: string[]): Block => ({ BlockType: "PAGE", Id: `page-${n}`, Page: n, Geometry: box(0, 0), Relationships: [{ Type: "CHILD", Ids: childIds }] });

describe("Textract", () => {
  it("starts asynchronous text detection on the S3 object, with the idempotency token", async () => {
    textract.on(StartDocumentTextDetectionCommand).resolves({ JobId: "job-7f3a", $metadata: {} });
    await expect(startTextDetection({ bucket: "uploads", key: "ws/1/report.pdf" }, { clientToken: "exec-42" })).resolves.toEqual({ jobId: "job-7f3a" });
    expect(textract.commandCalls(StartDocumentTextDetectionCommand)[0].args[0].input).toEqual({
      DocumentLocation: { S3Object: { Bucket: "uploads", Name: "ws/1/report.pdf" } },
      ClientRequestToken: "exec-42",
    });
  });

  it("reports IN_PROGRESS while the job runs", async () => {
    textract.on(GetDocumentTextDetectionCommand).resolves({ JobStatus: "IN_PROGRESS", $metadata: {} });
    await expect(getTextDetection("job-7f3a")).resolves.toEqual({ status: "IN_PROGRESS" });
  });

  it("follows NextToken and assembles pages in the PAGE blocks' reading order", async () => {
    // Page 1's lines arrive out of order and split across the two result pages, as Textract may return them;
    // the PAGE block's CHILD list is the reading order.
    const l1 = line("l1", 1, "Purpose of Jupyter.org", 0.1);
    const l2 = line("l2", 1, "The website should guide and inform individuals, organizations,", 0.2);
    const l3 = line("l3", 1, "contributors and sponsors about Project Jupyter’s core values,", 0.25);
    const l4 = line("l4", 2, "Jupyter.org Strengths", 0.1);
    textract
      .on(GetDocumentTextDetectionCommand, { JobId: "job-7f3a", NextToken: undefined })
      .resolves({ JobStatus: "SUCCEEDED", DocumentMetadata: { Pages: 2 }, NextToken: "tok-2", Blocks: [page(1, ["l1", "l2", "l3"]), ...l3, ...l1], $metadata: {} })
      .on(GetDocumentTextDetectionCommand, { JobId: "job-7f3a", NextToken: "tok-2" })
      .resolves({ JobStatus: "SUCCEEDED", DocumentMetadata: { Pages: 2 }, Blocks: [...l2, page(2, ["l4"]), ...l4], $metadata: {} });

    const result = await getTextDetection("job-7f3a");
    expect(textract.commandCalls(GetDocumentTextDetectionCommand).map((c) => c.args[0].input.NextToken)).toEqual([undefined, "tok-2"]);
    expect(result.status).toBe("SUCCEEDED");
    if (result.status !== "SUCCEEDED") return;
    expect(result.extraction).toMatchObject({ engine: "textract", pages: 2 });
    expect(result.extraction.units).toEqual([
      {
        kind: "page",
        locator: "page 1",
        text: "Purpose of Jupyter.org\nThe website should guide and inform individuals, organizations,\ncontributors and sponsors about Project Jupyter’s core values,",
      },
      { kind: "page", locator: "page 2", text: "Jupyter.org Strengths" },
    ]);
    expectVerbatim(result.extraction);
  });

  it("reads each block a bounded number of times however many pages the result has (pages indexed, not searched)", async () => {
    // 300 pages of 5 LINEs (5 WORDs each) under their PAGE block, in result pages of 1,000 blocks as Textract sends
    // them. Every block counts how often its BlockType is read: searching the blocks for each page's PAGE block
    // read ~pages x blocks / 2 of them (~1.4 million here); one pass reads each a few times.
    const PAGES = 300;
    let reads = 0;
    const counted = (b: Block): Block => {
      const { BlockType, ...rest } = b;
      return Object.defineProperty(rest, "BlockType", { enumerable: true, get: () => (reads++, BlockType) }) as Block;
    };
    const all: Block[] = [];
    for (let p = 1; p <= PAGES; p++) {
      const lines = [0, 1, 2, 3, 4].map((i) => line(`p${p}l${i}`, p, `Page ${p} line ${i} of the usability report`, 0.1 + i * 0.1));
      all.push(page(p, lines.map((l) => l[0].Id!)), ...lines.flat());
    }
    const chunks = Array.from({ length: Math.ceil(all.length / 1000) }, (_, i) => all.slice(i * 1000, (i + 1) * 1000).map(counted));
    textract.on(GetDocumentTextDetectionCommand).callsFake(async ({ NextToken }: { NextToken?: string }) => {
      const i = NextToken ? Number(NextToken) : 0;
      return { JobStatus: "SUCCEEDED", DocumentMetadata: { Pages: PAGES }, Blocks: chunks[i], NextToken: i + 1 < chunks.length ? String(i + 1) : undefined };
    });
    const result = await getTextDetection("job-dense");
    expect(result.status).toBe("SUCCEEDED");
    if (result.status !== "SUCCEEDED") return;
    expect(result.extraction.units).toHaveLength(PAGES);
    expect(result.extraction.units[PAGES - 1]).toEqual({
      kind: "page",
      locator: `page ${PAGES}`,
      text: [0, 1, 2, 3, 4].map((i) => `Page ${PAGES} line ${i} of the usability report`).join("\n"),
    });
    expect(reads).toBeLessThanOrEqual(3 * all.length);
  });

  it("fails with a reason when the finished result takes longer to fetch than its budget, instead of the Lambda timing out", async () => {
    // Each result page takes 30 s of the clock: the budget (200 s) runs out before the 10th.
    vi.useFakeTimers({ toFake: ["Date"] });
    try {
      textract.on(GetDocumentTextDetectionCommand).callsFake(async ({ NextToken }: { NextToken?: string }) => {
        vi.advanceTimersByTime(30_000);
        const i = NextToken ? Number(NextToken) : 0;
        return { JobStatus: "SUCCEEDED", DocumentMetadata: { Pages: 2800 }, Blocks: [...line(`l${i}`, i + 1, "Findings", 0.1)], NextToken: i < 9 ? String(i + 1) : undefined };
      });
      const err = await getTextDetection("job-huge").catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ExtractionError);
      expect(err).toMatchObject({ reason: "too_large" });
      expect((err as Error).message).toBe("The document (2,800 pages) has more text than can be collected in one pass; split it into smaller files and upload them separately");
      expect(textract.commandCalls(GetDocumentTextDetectionCommand)).toHaveLength(Math.floor(RESULT_FETCH_BUDGET_MS / 30_000) + 1);
    } finally {
      vi.useRealTimers();
    }
  });

  it("reports a failed job with Textract's message", async () => {
    textract.on(GetDocumentTextDetectionCommand).resolves({ JobStatus: "FAILED", StatusMessage: "Request has unsupported document format", $metadata: {} });
    await expect(getTextDetection("job-7f3a")).resolves.toEqual({ status: "FAILED", reason: "Text detection failed: Request has unsupported document format" });
  });

  it.each([
    () => new ThrottlingException({ message: "Rate exceeded", $metadata }),
    () => new ProvisionedThroughputExceededException({ message: "Provisioned rate exceeded", $metadata }),
    () => new TextractLimitExceeded({ message: "Open jobs limit exceeded", $metadata }),
  ])("re-throws throttling unchanged for the state machine to retry (%#)", async (make) => {
    const err = make();
    textract.on(StartDocumentTextDetectionCommand).rejects(err);
    textract.on(GetDocumentTextDetectionCommand).rejects(err);
    await expect(startTextDetection({ bucket: "b", key: "k" })).rejects.toBe(err);
    await expect(getTextDetection("job")).rejects.toBe(err);
    // Through extract() too: the OCR port must not wrap it into an ExtractionError.
    textract.on(DetectDocumentTextCommand).rejects(err);
    await expect(extract({ bytes: Buffer.from("png"), kind: "image", contentType: "image/png", filename: "a.png" }, { ocr: textractOcr() })).rejects.toBe(err);
  });

  it("turns a document Textract cannot read into an ExtractionError with a reason", async () => {
    textract.on(StartDocumentTextDetectionCommand).rejects(new BadDocumentException({ message: "Unable to read document", $metadata }));
    const err = await startTextDetection({ bucket: "b", key: "k" }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExtractionError);
    expect(err).toMatchObject({ reason: "corrupt" });
    // The service's own words go to the extraction log, not into the reason a user reads.
    expect((err as Error).message).toBe("The document could not be read (it may be corrupt or password-protected)");
  });

  it("detects text in a single image from S3 (page 1, lines ordered by position when there is no PAGE block)", async () => {
    textract.on(DetectDocumentTextCommand).resolves({
      DocumentMetadata: { Pages: 1 },
      Blocks: [...line("b", 0, "Whether to autosave documents", 0.4), ...line("a", 0, "Autosave Documents", 0.3)].map((b) => ({ ...b, Page: undefined })),
      $metadata: {},
    });
    const x = await extract({ bytes: Buffer.from("ignored"), kind: "image", contentType: "image/png", filename: "s.png" }, { ocr: textractOcr({ bucket: "uploads", key: "s.png" }) });
    expect(textract.commandCalls(DetectDocumentTextCommand)[0].args[0].input).toEqual({ Document: { S3Object: { Bucket: "uploads", Name: "s.png" } } });
    expect(x.units).toEqual([{ kind: "page", locator: "page 1", text: "Autosave Documents\nWhether to autosave documents" }]);
    expect(x.pages).toBe(1);
  });

  it("sends bytes when given bytes, and fails an image without text as no_text", async () => {
    textract.on(DetectDocumentTextCommand).resolves({ DocumentMetadata: { Pages: 1 }, Blocks: [page(1, [])], $metadata: {} });
    const err = await detectDocumentText({ bytes: new Uint8Array([1, 2, 3]) }).catch((e: unknown) => e);
    expect(textract.commandCalls(DetectDocumentTextCommand)[0].args[0].input.Document?.Bytes).toEqual(new Uint8Array([1, 2, 3]));
    expect(err).toMatchObject({ reason: "no_text" });
  });
});

/** A diarised transcript in Transcribe's current output shape (items carry speaker_label and id). */
const transcriptJson = {
  jobName: "src-1-attempt-1",
  accountId: "123456789012",
  status: "COMPLETED",
  results: {
    transcripts: [{ transcript: "And so, my fellow Americans, ask not what your country can do for you. Ask what you can do for your country." }],
    speaker_labels: {
      speakers: 2,
      segments: [
        { start_time: "0.3", end_time: "4.1", speaker_label: "spk_0", items: [] },
        { start_time: "5.2", end_time: "10.6", speaker_label: "spk_1", items: [] },
      ],
    },
    items: [
      ...["And", "so", ",", "my", "fellow", "Americans", ",", "ask", "not"].map((w, i) => ({ id: i, w, spk: "spk_0", t: 0.3 + i * 0.4 })),
      ...["what", "your", "country", "can", "do", "for", "you", ".", "Ask", "what", "you", "can", "do", "for", "your", "country", "."].map((w, i) => ({ id: 9 + i, w, spk: "spk_1", t: 5.2 + i * 0.3 })),
    ].map(({ id, w, spk, t }) =>
      /^[.,]$/.test(w)
        ? { id, type: "punctuation", alternatives: [{ confidence: "0.0", content: w }], speaker_label: spk }
        : { id, type: "pronunciation", start_time: t.toFixed(2), end_time: (t + 0.3).toFixed(2), alternatives: [{ confidence: "0.998", content: w }], speaker_label: spk },
    ),
  },
};

describe("Transcribe", () => {
  it("starts a job with speaker labels on the S3 object", async () => {
    transcribe.on(StartTranscriptionJobCommand).resolves({ $metadata: {} });
    await expect(startTranscription({ bucket: "uploads", key: "ws/1/call.mp3", jobName: "src-1-attempt-1", mediaFormat: "mp3" })).resolves.toEqual({ jobName: "src-1-attempt-1" });
    expect(transcribe.commandCalls(StartTranscriptionJobCommand)[0].args[0].input).toMatchObject({
      TranscriptionJobName: "src-1-attempt-1",
      LanguageCode: "en-US",
      MediaFormat: "mp3",
      Media: { MediaFileUri: "s3://uploads/ws/1/call.mp3" },
      Settings: { ShowSpeakerLabels: true, MaxSpeakerLabels: 10 },
    });
  });

  it("treats an existing job of the same name as started (a retried start), and rejects invalid names", async () => {
    transcribe.on(StartTranscriptionJobCommand).rejects(new ConflictException({ message: "The requested job name already exists", $metadata }));
    await expect(startTranscription({ bucket: "b", key: "k", jobName: "job-1", mediaFormat: "wav" })).resolves.toEqual({ jobName: "job-1" });
    await expect(startTranscription({ bucket: "b", key: "k", jobName: "bad name/with slash", mediaFormat: "wav" })).rejects.toThrow(/Invalid transcription job name/);
  });

  it("re-throws throttling unchanged, and turns refused media into an ExtractionError", async () => {
    const limit = new LimitExceededException({ message: "Too many jobs", $metadata });
    transcribe.on(StartTranscriptionJobCommand).rejects(limit);
    await expect(startTranscription({ bucket: "b", key: "k", jobName: "j", mediaFormat: "mp4" })).rejects.toBe(limit);
    const throttled = Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException" });
    transcribe.on(GetTranscriptionJobCommand).rejects(throttled);
    await expect(getTranscription("j", vi.fn())).rejects.toBe(throttled);

    transcribe.on(StartTranscriptionJobCommand).rejects(new BadRequestException({ message: "The media format provided does not match the detected media format", $metadata }));
    await expect(startTranscription({ bucket: "b", key: "k", jobName: "j", mediaFormat: "mp4" })).rejects.toMatchObject({ reason: "service_rejected" });
  });

  it("reports QUEUED and IN_PROGRESS as IN_PROGRESS, and FAILED with its reason", async () => {
    const fetchJson = vi.fn();
    transcribe.on(GetTranscriptionJobCommand).resolvesOnce({ TranscriptionJob: { TranscriptionJobStatus: "QUEUED" }, $metadata: {} })
      .resolvesOnce({ TranscriptionJob: { TranscriptionJobStatus: "IN_PROGRESS" }, $metadata: {} })
      .resolvesOnce({ TranscriptionJob: { TranscriptionJobStatus: "FAILED", FailureReason: "Invalid sample rate for audio file." }, $metadata: {} });
    await expect(getTranscription("j", fetchJson)).resolves.toEqual({ status: "IN_PROGRESS" });
    await expect(getTranscription("j", fetchJson)).resolves.toEqual({ status: "IN_PROGRESS" });
    await expect(getTranscription("j", fetchJson)).resolves.toEqual({ status: "FAILED", reason: "Transcription failed: Invalid sample rate for audio file." });
    expect(fetchJson).not.toHaveBeenCalled();
  });

  it("builds speaker turns with timestamps from the completed job's transcript", async () => {
    const uri = "https://s3.us-east-1.amazonaws.com/aws-transcribe-us-east-1-prod/123456789012/src-1-attempt-1/asrOutput.json?X-Amz-Signature=abc";
    transcribe.on(GetTranscriptionJobCommand, { TranscriptionJobName: "src-1-attempt-1" }).resolves({
      TranscriptionJob: { TranscriptionJobName: "src-1-attempt-1", TranscriptionJobStatus: "COMPLETED", Transcript: { TranscriptFileUri: uri } },
      $metadata: {},
    });
    const fetchJson = vi.fn(async () => transcriptJson);
    const result = await getTranscription("src-1-attempt-1", fetchJson);
    expect(fetchJson).toHaveBeenCalledWith(uri);
    expect(result.status).toBe("SUCCEEDED");
    if (result.status !== "SUCCEEDED") return;
    const x = result.extraction;
    expect(x.engine).toBe("transcribe");
    expect(x.units).toEqual([
      { kind: "turn", text: "And so, my fellow Americans, ask not", speaker: "Speaker 1", timestamp: "00:00:00.300" },
      { kind: "turn", text: "what your country can do for you. Ask what you can do for your country.", speaker: "Speaker 2", timestamp: "00:00:05.200" },
    ]);
    expect(x.transcript).toBe("[00:00:00.300] Speaker 1: And so, my fellow Americans, ask not\n[00:00:05.200] Speaker 2: what your country can do for you. Ask what you can do for your country.");
    expectVerbatim(x);
  });

  it("reads the older output shape, where only speaker_labels.segments carry the speakers", () => {
    const older = structuredClone(transcriptJson) as { results: { items: Record<string, unknown>[]; speaker_labels: { segments: { items: unknown[] }[] } } };
    const words = older.results.items.filter((i) => i.type === "pronunciation");
    older.results.speaker_labels.segments[0].items = words.slice(0, 7).map((w) => ({ start_time: w.start_time, end_time: w.end_time, speaker_label: "spk_0" }));
    older.results.speaker_labels.segments[1].items = words.slice(7).map((w) => ({ start_time: w.start_time, end_time: w.end_time, speaker_label: "spk_1" }));
    for (const item of older.results.items) delete item.speaker_label;
    const x = transcriptToExtraction(older);
    expect(x.units.map((u) => u.speaker)).toEqual(["Speaker 1", "Speaker 2"]);
  });

  it("fails on a document that is not a Transcribe transcript", () => {
    expect(() => transcriptToExtraction({ results: { transcripts: [] } })).toThrow(ExtractionError);
  });

  it("maps canonical content types to Transcribe media formats", () => {
    expect(transcribeMediaFormat("audio/mpeg")).toBe("mp3");
    expect(transcribeMediaFormat("audio/wav")).toBe("wav");
    expect(transcribeMediaFormat("video/mp4")).toBe("mp4");
    expect(transcribeMediaFormat("audio/mp4")).toBe("m4a");
    expect(transcribeMediaFormat("video/webm")).toBe("webm");
    expect(transcribeMediaFormat("image/png")).toBeUndefined();
  });
});
