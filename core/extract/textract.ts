/**
 * Amazon Textract behind the extraction ports, for the Step Functions tasks (DESIGN.md section 2; state machine in
 * functions/steps/extraction.asl.ts): asynchronous text detection for PDFs and multi-page TIFFs (StartTextract,
 * then CheckTextract polled until done), synchronous DetectDocumentText for single images.
 *
 * Throttling errors (ThrottlingException, ProvisionedThroughputExceededException, LimitExceededException) are
 * re-thrown unchanged so the state machine's Retry policy, which matches on the error name, backs off and retries.
 */
import { logExtractionFailure } from "./log";
import {
  DetectDocumentTextCommand,
  GetDocumentTextDetectionCommand,
  StartDocumentTextDetectionCommand,
  TextractClient,
  type Block,
} from "@aws-sdk/client-textract";
import { Config } from "../config";
import { ExtractionError, isThrottling, messageOf } from "./errors";
import type { OcrEngine } from "./index";
import { TextBuilder } from "./text";
import type { Extraction } from "./types";

let defaultClient: TextractClient | undefined;
const textract = (client?: TextractClient) => client ?? (defaultClient ??= new TextractClient({ region: Config.region() }));

/** An S3 object Textract reads directly (it must be in the same region as the Textract endpoint). */
export interface S3ObjectRef {
  bucket: string;
  key: string;
}

/** Result of polling an asynchronous job; the state machine loops while `status` is "IN_PROGRESS". */
export type TextDetectionStatus =
  | { status: "IN_PROGRESS" }
  | { status: "SUCCEEDED"; extraction: Extraction }
  | { status: "FAILED"; reason: string };

/**
 * Start asynchronous text detection (StartDocumentTextDetection) on a PDF, PNG, JPEG or TIFF in S3.
 *
 * @param ref the uploaded object.
 * @param options.clientToken idempotency token (1-64 of [A-Za-z0-9-_]): a retried start with the same token
 *   returns the same job instead of starting a second one. Use something unique per attempt, such as the
 *   execution name, not the object key (a reprocess would get the old job back).
 * @returns the Textract JobId to poll with {@link getTextDetection}.
 * @throws throttling errors unchanged; ExtractionError for documents Textract refuses; other AWS errors unchanged.
 */
export async function startTextDetection(
  ref: S3ObjectRef,
  options: { clientToken?: string; client?: TextractClient } = {},
): Promise<{ jobId: string }> {
  try {
    const out = await textract(options.client).send(
      new StartDocumentTextDetectionCommand({
        DocumentLocation: { S3Object: { Bucket: ref.bucket, Name: ref.key } },
        ClientRequestToken: options.clientToken,
      }),
    );
    if (!out.JobId) throw new Error("Textract returned no JobId");
    return { jobId: out.JobId };
  } catch (err) {
    throw mapTextractError(err);
  }
}

/**
 * Poll an asynchronous text detection job (GetDocumentTextDetection). When it has finished, every result page is
 * fetched (following NextToken) and the LINE blocks are assembled per page in reading order into `page` units
 * (locator "page N"), `pages` = DocumentMetadata.Pages, engine "textract". PARTIAL_SUCCESS counts as success: the
 * pages Textract could read are better than failing the source.
 *
 * @returns IN_PROGRESS while running, SUCCEEDED with the extraction, or FAILED with Textract's StatusMessage.
 * @throws throttling errors unchanged (retried by the state machine); other AWS errors unchanged.
 */
export async function getTextDetection(jobId: string, options: { client?: TextractClient } = {}): Promise<TextDetectionStatus> {
  const client = textract(options.client);
  const blocks: Block[] = [];
  let pages: number | undefined;
  let nextToken: string | undefined;
  try {
    do {
      const out = await client.send(new GetDocumentTextDetectionCommand({ JobId: jobId, NextToken: nextToken, MaxResults: 1000 }));
      if (out.JobStatus === "IN_PROGRESS") return { status: "IN_PROGRESS" };
      if (out.JobStatus === "FAILED") {
        return { status: "FAILED", reason: `Text detection failed: ${out.StatusMessage ?? "Textract could not process the document"}` };
      }
      pages ??= out.DocumentMetadata?.Pages;
      blocks.push(...(out.Blocks ?? []));
      nextToken = out.NextToken;
    } while (nextToken);
  } catch (err) {
    throw mapTextractError(err);
  }
  const extraction = textractBlocksToExtraction(blocks, pages);
  if (!extraction.units.length) return { status: "FAILED", reason: "No text was found in the document" };
  return { status: "SUCCEEDED", extraction };
}

/**
 * Synchronous text detection (DetectDocumentText) for a single image or single-page document, from S3 or from
 * bytes (at most 10 MB). Same output shape as {@link getTextDetection}.
 *
 * @throws ExtractionError `no_text` when nothing is found, or for documents Textract refuses; throttling errors unchanged.
 */
export async function detectDocumentText(source: S3ObjectRef | { bytes: Uint8Array }, options: { client?: TextractClient } = {}): Promise<Extraction> {
  let blocks: Block[];
  let pages: number | undefined;
  try {
    const out = await textract(options.client).send(
      new DetectDocumentTextCommand({
        Document: "bytes" in source ? { Bytes: source.bytes } : { S3Object: { Bucket: source.bucket, Name: source.key } },
      }),
    );
    blocks = out.Blocks ?? [];
    pages = out.DocumentMetadata?.Pages;
  } catch (err) {
    throw mapTextractError(err);
  }
  const extraction = textractBlocksToExtraction(blocks, pages);
  if (!extraction.units.length) throw new ExtractionError("no_text", "No text was found in the image");
  return extraction;
}

/**
 * The OCR port backed by DetectDocumentText. With `ref`, Textract reads the image from S3 (no bytes sent; the
 * `image` argument is ignored), which is what the Parse step in AWS wants; without, the bytes are sent (<= 10 MB).
 */
export const textractOcr = (ref?: S3ObjectRef, options: { client?: TextractClient } = {}): OcrEngine => ({
  recognize: (image) => detectDocumentText(ref ?? { bytes: image }, options),
});

/**
 * Textract blocks -> one `page` unit per page, its LINE texts joined with "\n" in reading order. Reading order is
 * the order of the PAGE block's CHILD relationships (how Textract reports it); pages without a PAGE block fall
 * back to top-to-bottom, left-to-right geometry. DetectDocumentText blocks carry no Page number: page 1.
 */
export function textractBlocksToExtraction(blocks: Block[], pages?: number): Extraction {
  const byId = new Map(blocks.filter((b) => b.Id).map((b) => [b.Id as string, b]));
  const pageNumbers = new Set<number>();
  for (const b of blocks) if (b.BlockType === "LINE" || b.BlockType === "PAGE") pageNumbers.add(b.Page ?? 1);

  const b = new TextBuilder();
  let first = true;
  for (const page of [...pageNumbers].sort((x, y) => x - y)) {
    const pageBlock = blocks.find((x) => x.BlockType === "PAGE" && (x.Page ?? 1) === page);
    const childIds = pageBlock?.Relationships?.filter((r) => r.Type === "CHILD").flatMap((r) => r.Ids ?? []) ?? [];
    let lines = childIds.map((id) => byId.get(id)).filter((x): x is Block => x?.BlockType === "LINE");
    if (!lines.length) {
      lines = blocks
        .filter((x) => x.BlockType === "LINE" && (x.Page ?? 1) === page)
        .sort((x, y) => top(x) - top(y) || left(x) - left(y));
    }
    const text = lines
      .map((l) => (l.Text ?? "").trim())
      .filter(Boolean)
      .join("\n");
    if (!text) continue;
    if (!first) b.text("\n\n");
    first = false;
    b.unit({ kind: "page", text, locator: `page ${page}` });
  }
  return b.build("textract", { pages: pages ?? (pageNumbers.size || undefined) });
}

const top = (b: Block) => b.Geometry?.BoundingBox?.Top ?? 0;
const left = (b: Block) => b.Geometry?.BoundingBox?.Left ?? 0;

/** Textract's refusals of a document become user-facing reasons; throttling and infrastructure errors pass through. */
function mapTextractError(err: unknown): unknown {
  if (isThrottling(err) || !(err instanceof Error)) return err;
  // Textract's own message goes to the log; the reason says what the user can do.
  const logged = () => logExtractionFailure("Textract refused the document", { service_error: err.name, service_message: messageOf(err) }, err);
  switch (err.name) {
    case "UnsupportedDocumentException":
      logged();
      return new ExtractionError("service_rejected", "Text detection does not support this document's format", { cause: err });
    case "BadDocumentException":
      logged();
      return new ExtractionError("corrupt", "The document could not be read (it may be corrupt or password-protected)", { cause: err });
    case "DocumentTooLargeException":
      logged();
      return new ExtractionError(
        "service_rejected",
        "The document is too large for text detection (images up to 10 MB, PDFs up to 500 MB and 3,000 pages)",
        { cause: err },
      );
    default:
      return err;
  }
}
