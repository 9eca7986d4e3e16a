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

/** A part header's parameter: `; name=value`, the value a quoted string (no escapes) or a bare token. */
const PARAM = /\s*;\s*([^\s=;"]+)\s*=\s*("[^"\r\n]*"|[^\s;"]*)\s*/y;
/** An RFC 5987 ext-value in UTF-8 (any language tag): `UTF-8'en'r%C3%A9sum%C3%A9.txt`. */
const UTF8_EXT_VALUE = /^utf-8'[^']*'(.+)$/i;

/**
 * A `Content-Disposition` header line (latin1, as the bytes came) with its `filename*=UTF-8''…` turned into the
 * plain `filename="…"` Node's parser reads: it refuses the RFC 5987 form (RFC 6266), which some clients send for
 * non-ASCII names. The decoded name is written in UTF-8 and quoted as the WHATWG encoder does (`"` %22, CR %0D, LF
 * %0A); any plain `filename` goes, as `filename*` takes precedence. A line it cannot read whole is left as it was.
 */
function plainFilename(line: string): string {
  const head = /^(content-disposition\s*:\s*[^;]*)(.*)$/i.exec(line);
  if (!head || !/filename\*/i.test(head[2])) return line;
  const params: [string, string][] = [];
  for (let at = 0; at < head[2].length; ) {
    PARAM.lastIndex = at;
    const param = PARAM.exec(head[2]);
    if (!param || PARAM.lastIndex === at) return line;
    params.push([param[1].toLowerCase(), param[2]]);
    at = PARAM.lastIndex;
  }
  const ext = UTF8_EXT_VALUE.exec(params.find(([name]) => name === "filename*")?.[1] ?? "");
  if (!ext) return line;
  let name: string;
  try {
    name = decodeURIComponent(ext[1]);
  } catch {
    return line;
  }
  const quoted = Buffer.from(name.replace(/"/g, "%22").replace(/\r/g, "%0D").replace(/\n/g, "%0A"), "utf8").toString("latin1");
  const kept = params.filter(([key]) => key !== "filename" && key !== "filename*").map(([key, value]) => `; ${key}=${value}`);
  return `${head[1]}${kept.join("")}; filename="${quoted}"`;
}

/**
 * The form with every part header's `filename*` rewritten by {@link plainFilename}; only part headers (from a
 * boundary line to the blank line after it) are read, never a part's content. Unchanged when no part has one.
 */
function withPlainFilenames(bytes: Buffer, contentType: string): Buffer {
  const boundary = /;\s*boundary=(?:"([^"]+)"|([^\s;]+))/i.exec(contentType);
  if (!boundary || bytes.indexOf("filename*") < 0) return bytes;
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`, "latin1");
  const out: Buffer[] = [];
  let copied = 0;
  for (let from = 0; ; ) {
    const at = bytes.indexOf(delimiter, from);
    if (at < 0) break;
    from = at + delimiter.length;
    // A delimiter starts the body or a line; `--` after it closes the form. Its line's end starts the part's
    // headers, a blank line ends them.
    if (at > 0 && bytes.toString("latin1", at - 2, at) !== "\r\n") continue;
    if (bytes.toString("latin1", from, from + 2) === "--") break;
    const headersStart = bytes.indexOf("\r\n", from) + 2;
    const headersEnd = bytes.indexOf("\r\n\r\n", headersStart);
    if (headersStart < 2 || headersEnd < 0) break;
    const headers = bytes.toString("latin1", headersStart, headersEnd);
    const rewritten = headers.split("\r\n").map(plainFilename).join("\r\n");
    if (rewritten !== headers) {
      out.push(bytes.subarray(copied, headersStart), Buffer.from(rewritten, "latin1"));
      copied = headersEnd;
    }
    from = headersEnd + 2;
  }
  return copied === 0 ? bytes : Buffer.concat([...out, bytes.subarray(copied)]);
}

/**
 * The multipart body parser of upload routes (DESIGN.md section 5): the form's fields become the body's string
 * properties and each file part a {@link FilePart}; a name given twice becomes an array (which the route's schema
 * refuses). Parsing is the WHATWG FormData parser built into Node (`Response.formData()`), which refuses any malformed
 * form outright: middy's busboy-based parser crashed the process on a truncated file part (an error event nobody
 * listened to) and never settled on a part whose headers did not end. A malformed form is a 422 like malformed JSON;
 * a body that is not multipart is left to the route's validation. A part's `filename*=UTF-8''…` (RFC 5987), which
 * that parser refuses, is read as its plain `filename` first (`withPlainFilenames`). The body's size is bounded before this runs (the
 * route's body limit), so the whole form is parsed in memory. Given to `httpGroup` by the groups that take uploads.
 */
export const multipartBodyParser = (): middy.MiddlewareObj<APIGatewayProxyEventV2, APIGatewayProxyResultV2> => ({
  before: async ({ event }) => {
    const type = event.headers?.["content-type"] ?? "";
    if (!MULTIPART.test(type) || typeof event.body !== "string") return;
    const bytes = withPlainFilenames(Buffer.from(event.body, event.isBase64Encoded ? "base64" : "utf8"), type);
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
