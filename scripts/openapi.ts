/**
 * Write the OpenAPI 3.1 document (functions/lib/openapi.ts `openApiDocument`, generated from the route table and its
 * zod schemas) to functions/http/openapi.json, the file `GET /api/openapi.json` serves.
 *
 * Why a generated file: building the document takes the generator, every group's route table and zod-to-openapi, about
 * 250 ms of a docs Lambda's first request (bench/cold.ts, issue #24 point 3). The document only changes when the code
 * does, so it is built here, committed, and bundled into the docs Lambda as JSON; test/unit/openapi-generated.test.ts
 * fails when the file differs from what the generator produces now.
 *
 *   npm run openapi               write the file
 *   npm run openapi -- --check    exit 1 when the file is out of date (what the test asserts)
 */
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { openApiDocument } from "../functions/lib/openapi";

const ROOT = join(dirname(fileURLToPath(import.meta.url)), "..");
export const OPENAPI_FILE = join(ROOT, "functions", "http", "openapi.json");

/** The file's text for the code as it is now: the document served at "/" (the origin), two-space JSON, a final newline. */
export function renderOpenApi(): string {
  return `${JSON.stringify(openApiDocument(), null, 2)}\n`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const text = renderOpenApi();
  const where = relative(ROOT, OPENAPI_FILE);
  if (process.argv.includes("--check")) {
    const current = (() => {
      try {
        return readFileSync(OPENAPI_FILE, "utf8");
      } catch {
        return "";
      }
    })();
    if (current !== text) {
      console.error(`${where} is out of date: run npm run openapi`);
      process.exit(1);
    }
    console.log(`${where} is up to date`);
  } else {
    writeFileSync(OPENAPI_FILE, text);
    console.log(`wrote ${where} (${text.length} characters)`);
  }
}
