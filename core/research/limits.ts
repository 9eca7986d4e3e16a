/** Upload size limits, apart from the schemas so the HTTP stack can read them without building any zod schema. */

/** Largest accepted research file: 100 MB (spec 01 Limits). */
export const MAX_UPLOAD_BYTES = 100 * 1024 * 1024;

/**
 * Largest file one multipart request carries (DESIGN.md section 5); larger files use upload-url. Lambda caps a
 * request event at 6 MB and API Gateway base64-encodes binary bodies (4/3 larger), so 4 MiB of file plus the form
 * framing is what reliably fits.
 */
export const MULTIPART_MAX_BYTES = 4 * 1024 * 1024;
