import type middy from "@middy/core";
import type { APIGatewayProxyEventV2, APIGatewayProxyResultV2 } from "aws-lambda";
import { Errors } from "../../core/error";
import { MULTIPART_MAX_BYTES } from "../../core/research/limits";

/** A file part as the upload routes' schemas read it (UploadBody in core/research/schema.ts). */
export interface FilePart {
  /** The name the client gave, without any directory part. */
  filename: string;
  mimetype: string;
  /** At most MULTIPART_MAX_BYTES: a larger file is cut there and marked `truncated`. */
  content: Buffer;
  truncated: boolean;
}

const MULTIPART = /^multipart\/form-data\s*;/i;

/** A client's path in a filename (`C:\dir\a.txt`, `../a.txt`) is not ours to keep: the last segment only. */
const baseName = (name: string) => name.split(/[\\/]/).pop() ?? "";

async function filePart(file: File): Promise<FilePart> {
  const bytes = Buffer.from(await file.arrayBuffer());
  const truncated = bytes.length > MULTIPART_MAX_BYTES;
  return {
    filename: baseName(file.name),
    mimetype: file.type || "application/octet-stream",
    content: truncated ? bytes.subarray(0, MULTIPART_MAX_BYTES) : bytes,
    truncated,
  };
}

/**
 * The multipart body parser of upload routes (DESIGN.md section 5): the form's fields become the body's string
 * properties and each file part a {@link FilePart}; a name given twice becomes an array (which the route's schema
 * refuses). Parsing is the WHATWG FormData parser built into Node (`Response.formData()`), which refuses any malformed
 * form outright: middy's busboy-based parser crashed the process on a truncated file part (an error event nobody
 * listened to) and never settled on a part whose headers did not end. A malformed form is a 422 like malformed JSON;
 * a body that is not multipart is left to the route's validation. The body's size is bounded before this runs (the
 * route's body limit), so the whole form is parsed in memory. Given to `httpGroup` by the groups that take uploads.
 */
export const multipartBodyParser = (): middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2> => ({
  before: async ({ event }) => {
    const type = event.headers?.["content-type"] ?? "";
    if (!MULTIPART.test(type) || typeof event.body !== "string") return;
    const bytes = Buffer.from(event.body, event.isBase64Encoded ? "base64" : "utf8");
    let form: FormData;
    try {
      form = await new Response(bytes, { headers: { "content-type": type } }).formData();
    } catch {
      throw Errors.validation([{ loc: ["body"], msg: "Body is not valid multipart/form-data", type: "multipart_invalid" }], "Malformed multipart body");
    }
    // A Map, not an object: a part named __proto__ or constructor must stay a plain field.
    const parts = new Map<string, unknown>();
    for (const [name, value] of form) {
      const part = typeof value === "string" ? value : await filePart(value);
      parts.set(name, parts.has(name) ? [parts.get(name), part].flat() : part);
    }
    (event as { body: unknown }).body = Object.fromEntries(parts);
    event.isBase64Encoded = false;
  },
});
