/**
 * Amazon Textract behind the extraction ports, for the Step Functions tasks (DESIGN.md section 2; state machine in
 * functions/steps/extraction.asl.ts): asynchronous text detection for PDFs and TIFFs, which may have many pages
 * (StartTextract, then CheckTextract polled until done), synchronous DetectDocumentText for PNG and JPEG images of at
 * most 10 MB (Textract's limit for those formats; functions/steps/validate.ts fails larger ones before calling it).
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
 * How long {@link getTextDetection} may spend fetching a finished job's result pages, ms. The CheckTextract Lambda
 * stops at 300 s (stacks/Pipelines.ts); this leaves time to assemble and store the extraction. A document whose
 * result takes longer (thousands of dense pages: Textract returns at most 1,000 blocks a call, a dense page has
 * several hundred) fails with a reason instead of the Lambda timing out, which would say nothing a user can act on.
 */
export const RESULT_FETCH_BUDGET_MS = 200_000;

/**
 * Poll an asynchronous text detection job (GetDocumentTextDetection). When it has finished, every result page is
 * fetched (following NextToken) and the LINE blocks are assembled per page in reading order into `page` units
 * (locator "page N"), `pages` = DocumentMetadata.Pages, engine "textract". PARTIAL_SUCCESS counts as success: the
 * pages Textract could read are better than failing the source.
 *
 * Only what the text is assembled from is kept while paginating (PAGE blocks' reading order, LINE blocks' text and
 * position; {@link textBlock}): WORD blocks, most of a result, are dropped as each result page arrives, so a
 * 3,000-page document holds its lines, not its ~1.5 million blocks. The result pages are fetched within one call
 * (one CheckTextract invocation): carrying NextToken to the next invocation would mean storing the lines collected so
 * far outside the execution state (256 KB), so the fetch is bounded by `budgetMs` instead.
 *
 * @param options.budgetMs how long fetching the result may take, ms (default {@link RESULT_FETCH_BUDGET_MS}).
 * @returns IN_PROGRESS while running, SUCCEEDED with the extraction, or FAILED with Textract's StatusMessage.
 * @throws ExtractionError `too_large` when the result is not fetched within `budgetMs`; throttling errors unchanged
 *   (retried by the state machine); other AWS errors unchanged.
 */
export async function getTextDetection(
  jobId: string,
  options: { client?: TextractClient; budgetMs?: number } = {},
): Promise<TextDetectionStatus> {
  const client = textract(options.client);
  const deadline = Date.now() + (options.budgetMs ?? RESULT_FETCH_BUDGET_MS);
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
      for (const block of out.Blocks ?? []) {
        const kept = textBlock(block);
        if (kept) blocks.push(kept);
      }
      nextToken = out.NextToken;
      if (nextToken && Date.now() > deadline) {
        throw new ExtractionError(
          "too_large",
          `The document${pages ? ` (${pages.toLocaleString("en-US")} pages)` : ""} has more text than can be collected in one pass; split it into smaller files and upload them separately`,
        );
      }
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
 * What {@link textractBlocksToExtraction} reads of a block, or undefined for a block it does not read (WORD,
 * SELECTION_ELEMENT, ...): a PAGE block's number and CHILD relationships (reading order), a LINE block's id, number,
 * text and position. A fresh small object, so the SDK's response (geometry polygons, the LINE's WORD ids) is freed.
 */
export function textBlock(block: Block): Block | undefined {
  if (block.BlockType === "PAGE") {
    return {
      BlockType: "PAGE",
      Page: block.Page,
      Relationships: block.Relationships?.filter((r) => r.Type === "CHILD").map((r) => ({ Type: r.Type, Ids: r.Ids })),
    };
  }
  if (block.BlockType === "LINE") {
    const box = block.Geometry?.BoundingBox;
    return {
      BlockType: "LINE",
      Id: block.Id,
      Page: block.Page,
      Text: block.Text,
      ...(box ? { Geometry: { BoundingBox: { Top: box.Top, Left: box.Left } } } : {}),
    };
  }
  return undefined;
}

/**
 * Textract blocks -> one `page` unit per page, its LINE texts joined with "\n" in reading order. Reading order is
 * the order of the PAGE block's CHILD relationships (how Textract reports it); pages without a PAGE block fall
 * back to top-to-bottom, left-to-right geometry. DetectDocumentText blocks carry no Page number: page 1.
 * Linear in the number of blocks: PAGE and LINE blocks are indexed by page once (a search per page made a
 * 3,000-page result pages x blocks).
 */
export function textractBlocksToExtraction(blocks: Block[], pages?: number): Extraction {
  const linesById = new Map<string, Block>();
  const pageBlocks = new Map<number, Block>();
  const linesByPage = new Map<number, Block[]>();
  for (const x of blocks) {
    const page = x.Page ?? 1;
    if (x.BlockType === "PAGE") {
      if (!pageBlocks.has(page)) pageBlocks.set(page, x);
    } else if (x.BlockType === "LINE") {
      if (x.Id) linesById.set(x.Id, x);
      const onPage = linesByPage.get(page);
      if (onPage) onPage.push(x);
      else linesByPage.set(page, [x]);
    }
  }
  const pageNumbers = new Set([...pageBlocks.keys(), ...linesByPage.keys()]);

  const b = new TextBuilder();
  let first = true;
  for (const page of [...pageNumbers].sort((x, y) => x - y)) {
    const childIds = pageBlocks.get(page)?.Relationships?.filter((r) => r.Type === "CHILD").flatMap((r) => r.Ids ?? []) ?? [];
    let lines = childIds.map((id) => linesById.get(id)).filter((x): x is Block => x !== undefined);
    if (!lines.length) lines = [...(linesByPage.get(page) ?? [])].sort((x, y) => top(x) - top(y) || left(x) - left(y));
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
        "The document is too large for text detection (PNG and JPEG images up to 10 MB, PDFs and TIFFs up to 500 MB and 3,000 pages)",
        { cause: err },
      );
    default:
      return err;
  }
}
