/**
 * Amazon Transcribe behind the extraction ports, for the Step Functions tasks (StartTranscribe, then
 * CheckTranscribe polled until done; functions/steps/extraction.asl.ts). Speaker diarisation is on, so turns come
 * back with speaker labels and timestamps.
 *
 * Throttling errors (ThrottlingException, LimitExceededException, ...) are re-thrown unchanged so the state
 * machine's Retry policy, which matches on the error name, backs off and retries.
 */
import { logExtractionFailure } from "./log";
import {
  GetTranscriptionJobCommand,
  StartTranscriptionJobCommand,
  TranscribeClient,
  type LanguageCode,
  type MediaFormat,
} from "@aws-sdk/client-transcribe";
import * as z from "zod";
import { Config } from "../config";
import { ExtractionError, isThrottling, messageOf } from "./errors";
import { TextBuilder, formatTimestamp } from "./text";
import type { Extraction } from "./types";

let defaultClient: TranscribeClient | undefined;
const transcribe = (client?: TranscribeClient) => client ?? (defaultClient ??= new TranscribeClient({ region: Config.region() }));

/** Speakers Transcribe may tell apart (its range is 2-30); interviews and focus groups rarely have more. */
export const DEFAULT_MAX_SPEAKERS = 10;

/** Without speaker labels, words are grouped into turns at pauses of this many ms... */
const TURN_GAP_MS = 2_000;
/** ...or when a turn reaches this length, so long monologues keep timestamps. */
const TURN_MAX_MS = 30_000;

/** Transcribe's MediaFormat for one of our canonical content types (from inspectUpload), or undefined. */
export function transcribeMediaFormat(contentType: string): MediaFormat | undefined {
  const formats: Record<string, MediaFormat> = {
    "audio/mpeg": "mp3",
    "audio/wav": "wav",
    "audio/mp4": "m4a",
    "video/mp4": "mp4",
    "audio/webm": "webm",
    "video/webm": "webm",
    "audio/flac": "flac",
    "audio/ogg": "ogg",
  };
  return formats[contentType];
}

export interface StartTranscriptionInput {
  bucket: string;
  key: string;
  /** Unique per attempt, [0-9a-zA-Z._-], at most 200 characters (Transcribe's rule). */
  jobName: string;
  mediaFormat: MediaFormat;
  /** Default "en-US". */
  languageCode?: LanguageCode;
  /** 2-30; default {@link DEFAULT_MAX_SPEAKERS}. */
  maxSpeakers?: number;
  /** Where Transcribe writes the transcript JSON; default a service-managed bucket with a presigned URL. */
  outputBucket?: string;
  outputKey?: string;
}

/**
 * Start a transcription job (StartTranscriptionJob) with speaker labels (ShowSpeakerLabels, MaxSpeakerLabels).
 * Idempotent under retries: if a job of that name already exists (ConflictException, e.g. the state machine
 * retried after a timeout), the existing job is polled instead.
 *
 * @throws Error for an invalid job name; throttling errors unchanged; ExtractionError when Transcribe refuses
 *   the media (BadRequestException); other AWS errors unchanged.
 */
export async function startTranscription(input: StartTranscriptionInput, options: { client?: TranscribeClient } = {}): Promise<{ jobName: string }> {
  if (!/^[0-9a-zA-Z._-]{1,200}$/.test(input.jobName)) {
    throw new Error(`Invalid transcription job name "${input.jobName}": use 1-200 of [0-9a-zA-Z._-]`);
  }
  const maxSpeakers = Math.min(30, Math.max(2, Math.round(input.maxSpeakers ?? DEFAULT_MAX_SPEAKERS)));
  try {
    await transcribe(options.client).send(
      new StartTranscriptionJobCommand({
        TranscriptionJobName: input.jobName,
        LanguageCode: input.languageCode ?? "en-US",
        MediaFormat: input.mediaFormat,
        Media: { MediaFileUri: `s3://${input.bucket}/${input.key}` },
        Settings: { ShowSpeakerLabels: true, MaxSpeakerLabels: maxSpeakers },
        OutputBucketName: input.outputBucket,
        OutputKey: input.outputBucket ? input.outputKey : undefined,
      }),
    );
  } catch (err) {
    if (err instanceof Error && err.name === "ConflictException") return { jobName: input.jobName };
    throw mapTranscribeError(err);
  }
  return { jobName: input.jobName };
}

export type TranscriptionStatus =
  | { status: "IN_PROGRESS" }
  | { status: "SUCCEEDED"; extraction: Extraction }
  | { status: "FAILED"; reason: string };

/** Reads the transcript JSON at a URI: an HTTPS (presigned) URL by default; pass an S3-reading one for OutputBucketName. */
export type FetchJson = (uri: string) => Promise<unknown>;

const fetchJsonOverHttps: FetchJson = async (uri) => {
  const res = await fetch(uri);
  if (!res.ok) throw new Error(`Could not download the transcript (HTTP ${res.status})`);
  return res.json();
};

/**
 * Poll a transcription job (GetTranscriptionJob). QUEUED and IN_PROGRESS -> IN_PROGRESS; FAILED -> FAILED with
 * Transcribe's FailureReason; COMPLETED -> the transcript JSON is fetched with `fetchJson` and turned into turns
 * (see {@link transcriptToExtraction}).
 *
 * @throws throttling errors unchanged; ExtractionError `corrupt` when the transcript JSON is not Transcribe's shape.
 */
export async function getTranscription(
  jobName: string,
  fetchJson: FetchJson = fetchJsonOverHttps,
  options: { client?: TranscribeClient } = {},
): Promise<TranscriptionStatus> {
  let job;
  try {
    ({ TranscriptionJob: job } = await transcribe(options.client).send(new GetTranscriptionJobCommand({ TranscriptionJobName: jobName })));
  } catch (err) {
    throw mapTranscribeError(err);
  }
  switch (job?.TranscriptionJobStatus) {
    case "QUEUED":
    case "IN_PROGRESS":
      return { status: "IN_PROGRESS" };
    case "FAILED":
      return { status: "FAILED", reason: `Transcription failed: ${job.FailureReason ?? "Transcribe could not process the recording"}` };
    case "COMPLETED": {
      const uri = job.Transcript?.TranscriptFileUri;
      if (!uri) return { status: "FAILED", reason: "Transcription finished without a transcript file" };
      const extraction = transcriptToExtraction(await fetchJson(uri));
      if (!extraction.units.length) return { status: "FAILED", reason: "No speech could be recognised in the recording" };
      return { status: "SUCCEEDED", extraction };
    }
    default:
      return { status: "FAILED", reason: `Unknown transcription job status ${String(job?.TranscriptionJobStatus)}` };
  }
}

// Transcribe's output document (https://docs.aws.amazon.com/transcribe/latest/dg/diarization-output-batch.html).
// Times are strings of seconds; newer outputs put speaker_label on each item, older ones only in speaker_labels.
const TranscriptJson = z.object({
  results: z.object({
    items: z.array(
      z.object({
        type: z.enum(["pronunciation", "punctuation"]),
        start_time: z.string().optional(),
        end_time: z.string().optional(),
        speaker_label: z.string().optional(),
        alternatives: z.array(z.object({ content: z.string() })).min(1),
      }),
    ),
    speaker_labels: z
      .object({
        segments: z.array(
          z.object({
            speaker_label: z.string(),
            items: z.array(z.object({ start_time: z.string(), speaker_label: z.string() })).optional(),
          }),
        ),
      })
      .optional(),
  }),
});

/**
 * Transcribe transcript JSON -> extraction (engine "transcribe"): consecutive words of one speaker form a `turn`
 * (speaker "Speaker 1" for spk_0, "Channel 1" for ch_0), timestamped at its first word; punctuation attaches to the
 * preceding word. Without speaker labels, turns break at 2 s pauses or 30 s length. extracted_text = transcript =
 * "[HH:MM:SS.mmm] Speaker 1: words" lines.
 *
 * @throws ExtractionError `corrupt` when the document is not a Transcribe transcript.
 */
export function transcriptToExtraction(json: unknown): Extraction {
  const parsed = TranscriptJson.safeParse(json);
  if (!parsed.success) {
    throw new ExtractionError("corrupt", `The transcription result could not be read: ${parsed.error.issues[0]?.message ?? "unexpected shape"}`);
  }
  const { items, speaker_labels } = parsed.data.results;
  // Older outputs: speaker per word start time, from the segments.
  const speakerAt = new Map<string, string>();
  for (const seg of speaker_labels?.segments ?? []) for (const it of seg.items ?? []) speakerAt.set(it.start_time, it.speaker_label);

  interface Turn {
    speaker?: string;
    start: number;
    end: number;
    text: string;
  }
  const turns: Turn[] = [];
  let current: Turn | undefined;
  for (const item of items) {
    const content = item.alternatives[0].content;
    if (item.type === "punctuation") {
      if (current) current.text += content;
      continue;
    }
    const start = seconds(item.start_time);
    const end = seconds(item.end_time) ?? start;
    const label = item.speaker_label ?? (item.start_time ? speakerAt.get(item.start_time) : undefined);
    const speaker = label ? speakerName(label) : undefined;
    const breakHere =
      !current ||
      current.speaker !== speaker ||
      (!speaker && start !== undefined && (start - current.end > TURN_GAP_MS || start - current.start > TURN_MAX_MS));
    if (breakHere) {
      current = { speaker, start: start ?? current?.end ?? 0, end: end ?? start ?? 0, text: content };
      turns.push(current);
    } else if (current) {
      current.text += ` ${content}`;
      if (end !== undefined) current.end = end;
    }
  }

  const b = new TextBuilder();
  turns.forEach((t, i) => {
    const timestamp = formatTimestamp(t.start);
    b.text(`${i ? "\n" : ""}[${timestamp}] ${t.speaker ? `${t.speaker}: ` : ""}`);
    b.unit({ kind: "turn", text: t.text, speaker: t.speaker, timestamp });
  });
  return b.build("transcribe", { transcript: true });
}

const seconds = (s: string | undefined): number | undefined => (s === undefined || s === "" || Number.isNaN(Number(s)) ? undefined : Math.round(Number(s) * 1000));

/** "spk_0" -> "Speaker 1", "ch_1" -> "Channel 2": what a reader of the transcript expects. */
function speakerName(label: string): string {
  const m = /^(spk|ch)_(\d+)$/.exec(label);
  if (!m) return label;
  return `${m[1] === "spk" ? "Speaker" : "Channel"} ${Number(m[2]) + 1}`;
}

function mapTranscribeError(err: unknown): unknown {
  if (isThrottling(err) || !(err instanceof Error)) return err;
  // BadRequestException covers media Transcribe cannot use (unsupported format, too long, unreadable).
  if (err.name === "BadRequestException") {
    logExtractionFailure("Transcribe refused the recording", { service_error: err.name, service_message: messageOf(err) }, err);
    return new ExtractionError("service_rejected", "Transcription could not start on this recording (unsupported format, too long, or unreadable)", { cause: err });
  }
  return err;
}
