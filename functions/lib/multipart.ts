import httpMultipartBodyParser from "@middy/http-multipart-body-parser";
import { MULTIPART_MAX_BYTES } from "../../core/research/limits";

/**
 * The multipart body parser of upload routes (DESIGN.md section 5): one file of at most `MULTIPART_MAX_BYTES`;
 * a body that is not multipart is left to the JSON parser instead of failing with 415. Given to `httpGroup` by the
 * groups that take uploads, so busboy is bundled only into their Lambda.
 */
export const multipartBodyParser = () =>
  httpMultipartBodyParser({ disableContentTypeError: true, busboy: { limits: { fileSize: MULTIPART_MAX_BYTES, files: 1 } } });
