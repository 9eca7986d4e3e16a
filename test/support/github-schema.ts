/**
 * GitHub's published REST description (`@octokit/openapi`, api.github.com) with ajv: the stand-in GitHub checks every
 * body it answers (and the issue bodies it receives) against the operation's schema, so what our code parses is
 * shaped as GitHub shapes it, not as we imagine it.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { Ajv, type ValidateFunction } from "ajv";
import addFormatsModule from "ajv-formats";

type Doc = { paths: Record<string, Record<string, any>>; components: Record<string, unknown> };

let doc: Doc | undefined;
const load = (): Doc => {
  if (!doc) {
    const file = createRequire(import.meta.url).resolve("@octokit/openapi/generated/api.github.com.json");
    doc = JSON.parse(readFileSync(file, "utf8")) as Doc;
  }
  return doc;
};

let ajv: Ajv | undefined;
const compiler = (): Ajv => {
  if (!ajv) {
    ajv = new Ajv({ strict: false, allErrors: false, validateFormats: true });
    const addFormats = (addFormatsModule as unknown as { default?: typeof addFormatsModule }).default ?? addFormatsModule;
    (addFormats as unknown as (a: Ajv) => void)(ajv);
    // The whole description once, under an id: operation schemas refer into its components.
    ajv.addSchema({ $id: "github", components: openApiNullable(load().components) } as object);
  }
  return ajv;
};

/**
 * OpenAPI 3.0's `nullable: true` next to `allOf`/`anyOf` without a `type` (as GitHub writes nullable references), as
 * JSON Schema: either the schema or null. Ajv reads `nullable` only beside `type`.
 */
function openApiNullable(node: unknown): any {
  if (Array.isArray(node)) return node.map(openApiNullable);
  if (!node || typeof node !== "object") return node;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(node)) out[k] = openApiNullable(v);
  // In OpenAPI 3.0 null is allowed by `nullable` even where an `enum` does not list it (GitHub's state_reason).
  if (out.nullable === true && Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  if (out.nullable === true && out.type === undefined) {
    const { nullable: _n, ...rest } = out;
    void _n;
    return { anyOf: [rest, { type: "null" }] };
  }
  return out;
}

const validators = new Map<string, ValidateFunction>();

/** Rewrite local refs (`#/components/...`) to refs into the registered description. */
const rebase = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema).replace(/"#\/components\//g, '"github#/components/'));

function validatorFor(key: string, pick: (d: Doc) => unknown): ValidateFunction {
  let v = validators.get(key);
  if (!v) {
    const schema = pick(load());
    if (!schema) throw new Error(`GitHub's description has no schema for ${key}`);
    v = compiler().compile(openApiNullable(rebase(schema)) as object);
    validators.set(key, v);
  }
  return v;
}

/**
 * Throws unless `body` matches the response schema of `method path` (a path template of the description, e.g.
 * `/repos/{owner}/{repo}/issues`) with `status`.
 */
export function assertGithubResponse(method: string, path: string, status: number, body: unknown): void {
  const v = validatorFor(`res ${method} ${path} ${status}`, (d) => d.paths[path]?.[method.toLowerCase()]?.responses?.[String(status)]?.content?.["application/json"]?.schema);
  if (!v(body)) throw new Error(`Stand-in GitHub answer to ${method} ${path} (${status}) breaks GitHub's schema: ${compiler().errorsText(v.errors)}`);
}

/** Throws unless `body` matches the request body schema of `method path`. */
export function assertGithubRequest(method: string, path: string, body: unknown): void {
  const v = validatorFor(`req ${method} ${path}`, (d) => d.paths[path]?.[method.toLowerCase()]?.requestBody?.content?.["application/json"]?.schema);
  if (!v(body)) throw new Error(`Request to ${method} ${path} breaks GitHub's schema: ${compiler().errorsText(v.errors)}`);
}
