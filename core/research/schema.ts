import * as z from "zod";

export const SourceType = z.enum(["interview", "support_ticket", "survey", "usage_data", "feedback", "other"]);
export const ProcessingStatus = z.enum(["pending", "completed", "failed"]);

import { MAX_UPLOAD_BYTES } from "./limits";
export { MAX_UPLOAD_BYTES, MULTIPART_MAX_BYTES } from "./limits";

/** The source as listed (spec 01 Research source). */
export const ResearchSource = z
  .object({
    id: z.uuid(),
    workspace_id: z.uuid(),
    source_type: SourceType,
    title: z.string(),
    file_name: z.string(),
    file_url: z.string().describe("s3://bucket/key of the stored file"),
    file_type: z.string().describe("MIME type"),
    file_size_bytes: z.int(),
    processing_status: ProcessingStatus,
    processing_error: z.string().nullable().describe("why processing failed, in words a user can act on"),
    char_count: z.int().nullable(),
    unit_count: z.int().nullable().describe("mentions found: survey responses, transcript turns, paragraphs"),
    pages: z.int().nullable(),
    indexed: z.boolean().describe("its mentions are embedded for synthesis (synthesis is fastest once every source is indexed)"),
    created_at: z.string(),
    processed_at: z.string().nullable(),
  })
  .meta({ id: "ResearchSource" });
export type ResearchSource = z.infer<typeof ResearchSource>;

/** The single-source read adds the text (spec 01: extracted_text and transcript on the single-source read). */
export const ResearchSourceDetail = ResearchSource.extend({
  extracted_text: z.string().nullable(),
  transcript: z.string().nullable(),
  text_truncated: z
    .boolean()
    .describe("extracted_text or transcript was cut to fit the response (a Lambda answers at most 6 MB, so the two texts share 5 MB; they go up to 32,000,000 characters): each keeps its beginning, and the copilot's read_source_text reads any range of the whole"),
}).meta({ id: "ResearchSourceDetail" });
export type ResearchSourceDetail = z.infer<typeof ResearchSourceDetail>;

export const SourceList = z.object({ sources: z.array(ResearchSource), total: z.int() }).meta({ id: "SourceList" });

const pageLimit = z.coerce.number().int().min(1).max(500).default(200);
const pageOffset = z.coerce.number().int().min(0).default(0);

export const ListSourcesQuery = z.object({
  workspace_id: z.uuid(),
  source_type: SourceType.optional(),
  processing_status: ProcessingStatus.optional(),
  limit: pageLimit,
  offset: pageOffset,
});
export type ListSourcesQuery = z.infer<typeof ListSourcesQuery>;

/** The text fields of `POST /api/research/upload` (multipart; `file` is the file part). */
export const UploadFields = z.object({
  workspace_id: z.uuid(),
  source_type: SourceType,
  title: z.string().trim().min(1).max(300),
});

/** Multipart body as parsed by the middy multipart parser: the file part is an object. */
export const UploadBody = UploadFields.extend({
  file: z
    .object({
      // As upload-url's file_name and content_type: a name of hundreds of KB would pass DynamoDB's item size.
      filename: z.string().max(255),
      mimetype: z.string().max(255),
      content: z.instanceof(Buffer).meta({ type: "string", format: "binary" }),
      truncated: z.boolean().optional(),
    })
    .describe("the research file (binary)"),
}).meta({ id: "UploadBody" });
export type UploadBody = z.infer<typeof UploadBody>;

/** Body of `POST /api/research/upload-url`: a presigned upload for files above the gateway's payload limit. */
export const UploadUrlInput = UploadFields.extend({
  file_name: z.string().trim().min(1).max(255),
  content_type: z.string().trim().min(3).max(255),
  // Bounds are checked by inspectDeclared, so 0 is 400 EMPTY_FILE and over 100 MB is 413 PAYLOAD_TOO_LARGE
  // (docs/decisions.md), not a generic 422.
  file_size_bytes: z.int().min(0).describe(`the file's size in bytes; at most ${MAX_UPLOAD_BYTES} (100 MB)`),
})
  .strict()
  .meta({ id: "UploadUrlInput" });
export type UploadUrlInput = z.infer<typeof UploadUrlInput>;

export const UploadUrlResponse = z
  .object({
    source: ResearchSource,
    upload: z.object({
      url: z.string(),
      fields: z.record(z.string(), z.string()).describe("form fields to send before the file in a multipart POST"),
      expires_at: z.string(),
      max_bytes: z.int(),
    }),
  })
  .meta({ id: "UploadUrlResponse" });

export const SourceIdParam = z.object({ source_id: z.uuid() });
