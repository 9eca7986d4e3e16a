import * as z from "zod";
import { Errors, type FieldError } from "./error";

/**
 * Bounded free-form JSON objects (issue #10 point 4; docs/decisions.md "Free-form JSON objects").
 *
 * Free-form objects in request bodies (document metadata, block content before its type's contract) go into DynamoDB
 * items as maps. Unbounded, they reach the table's or the marshaller's limits, whose refusals are defects (500):
 * an empty key ("Empty attribute name"), more than 32 levels of nesting, an item over 400 KB, or a key named
 * `constructor` (the AWS marshaller then takes the object for a class instance and throws). So every such object is
 * checked against explicit bounds first and refused with a 422 naming the location.
 *
 * Keys `__proto__`, `constructor` and `prototype` are refused rather than handled: `JSON.parse` makes `__proto__` an
 * own key, and any later `obj[key] = value` (zod's record parser, the marshaller, a merge) would set the prototype
 * instead of a key — zod's record silently drops it, the marshaller writes an empty attribute. No client needs these
 * names, and refusing them at the edge is the only place where every later consumer is safe.
 */

/** Limits of one free-form JSON object. */
export interface JsonObjectBounds {
  /** Largest `JSON.stringify` of the whole object, in UTF-8 bytes. */
  maxBytes: number;
  /** Deepest nesting of objects and arrays; the object itself is level 1 (DynamoDB allows 32). */
  maxDepth: number;
  /** Most keys in any one object of the tree. */
  maxKeys: number;
  /** Longest key, in characters (UTF-16 code units); keys must also be non-empty. */
  maxKeyLength: number;
}

/** Keys that would reach an object's prototype when assigned (see the module comment). */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** UTF-8 bytes of a value's JSON text. */
export const jsonBytes = (value: unknown): number => Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");

/** One violation of the bounds, at `path` below the checked object. */
export interface JsonObjectProblem {
  path: (string | number)[];
  message: string;
  /** zod issue code: `invalid_key` (empty, long or reserved key), `too_big` (bytes, keys, depth), `invalid_type`. */
  code: "invalid_key" | "too_big" | "invalid_type";
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * Every violation of `bounds` in `value`, walking own enumerable keys (so a `JSON.parse`d `__proto__` key is seen).
 * A value that is not an object gives none: the caller's type check reports it.
 * @returns problems in document order; the size check comes last and only when the tree itself is valid.
 */
export function jsonObjectProblems(value: unknown, bounds: JsonObjectBounds): JsonObjectProblem[] {
  if (!isPlainObject(value)) return [];
  const problems: JsonObjectProblem[] = [];
  const walk = (v: unknown, path: (string | number)[], depth: number): void => {
    if (v === null || typeof v === "string" || typeof v === "boolean") return;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) problems.push({ path, message: "numbers must be finite", code: "invalid_type" });
      return;
    }
    if (typeof v !== "object") {
      problems.push({ path, message: `${typeof v} is not a JSON value`, code: "invalid_type" });
      return;
    }
    if (depth > bounds.maxDepth) {
      problems.push({ path, message: `nesting deeper than ${bounds.maxDepth} levels`, code: "too_big" });
      return;
    }
    if (Array.isArray(v)) {
      v.forEach((item, i) => walk(item, [...path, i], depth + 1));
      return;
    }
    const keys = Object.keys(v);
    if (keys.length > bounds.maxKeys) problems.push({ path, message: `more than ${bounds.maxKeys} keys`, code: "too_big" });
    for (const key of keys) {
      const at = [...path, key];
      if (key === "") problems.push({ path: at, message: "keys must not be empty", code: "invalid_key" });
      else if (key.length > bounds.maxKeyLength) problems.push({ path: at, message: `keys are at most ${bounds.maxKeyLength} characters`, code: "invalid_key" });
      else if (RESERVED_KEYS.has(key)) problems.push({ path: at, message: `'${key}' is a reserved key`, code: "invalid_key" });
      else walk((v as Record<string, unknown>)[key], at, depth + 1);
    }
  };
  walk(value, [], 1);
  if (problems.length === 0 && jsonBytes(value) > bounds.maxBytes) {
    problems.push({ path: [], message: `at most ${bounds.maxBytes} bytes of JSON`, code: "too_big" });
  }
  return problems;
}

/**
 * A zod schema for a free-form JSON object within `bounds` (422 `VALIDATION_ERROR` naming the location through the
 * HTTP layer's issue mapping). The bounds are checked on the raw input before zod's record parser runs, because that
 * parser drops own `__proto__` keys without a word. In OpenAPI it is the plain record (the bounds go in the
 * description).
 */
export function jsonObject(bounds: JsonObjectBounds) {
  return z
    .preprocess((value, ctx) => {
      // Issues keep zod's own codes, so the 422 envelope's `type` says what is wrong (invalid_key, too_big).
      for (const p of jsonObjectProblems(value, bounds)) {
        const detail =
          p.code === "too_big"
            ? { code: "too_big" as const, origin: "object", maximum: bounds.maxBytes, inclusive: true }
            : p.code === "invalid_key"
              ? { code: "invalid_key" as const, origin: "record" as const, issues: [] }
              : { code: "invalid_type" as const, expected: "json" as never };
        ctx.issues.push({ ...detail, message: p.message, path: p.path, input: value });
      }
      return value;
    }, z.record(z.string(), z.unknown()))
    .describe(
      `JSON object: at most ${bounds.maxBytes} bytes of JSON, ${bounds.maxDepth} levels deep, ${bounds.maxKeys} keys per object; ` +
        `keys 1 to ${bounds.maxKeyLength} characters, not ${[...RESERVED_KEYS].join(", ")}`,
    );
}

/**
 * Throw the 422 for a free-form object built in code (e.g. metadata after a merge) that breaks `bounds`.
 * @param loc where the object sits in the request, e.g. `["body", "metadata"]`
 * @throws AppError VALIDATION_ERROR (422) with one entry per problem.
 */
export function assertJsonObject(loc: (string | number)[], value: unknown, bounds: JsonObjectBounds): void {
  const problems = jsonObjectProblems(value, bounds);
  if (problems.length === 0) return;
  const errors: FieldError[] = problems.map((p) => ({ loc: [...loc, ...p.path], msg: p.message, type: p.code }));
  throw Errors.validation(errors);
}

/** The smallest magnitude DynamoDB stores for a number other than 0 (its range is 1E-130 to 9.9999…E+125). */
const DYNAMODB_MIN_MAGNITUDE = 1e-130;
/** `String.prototype.isWellFormed` (ES2024, in Node since 20; the project's TypeScript lib predates it). */
const isWellFormed = (s: string): boolean => (s as string & { isWellFormed(): boolean }).isWellFormed();
/** Most problems `unstorableValues` reports: a body with thousands of them needs no longer answer. */
const MAX_REPORTED = 20;

/**
 * The values of a parsed JSON body that no DynamoDB item can hold as given (docs/decisions.md "Values a JSON body
 * may carry"): numbers the AWS marshaller refuses (magnitude above `Number.MAX_SAFE_INTEGER`: it cannot keep them
 * exact) or DynamoDB underflows (non-zero and below 1E-130), and strings or keys that are not well-formed Unicode (a
 * lone surrogate: it would be changed to U+FFFD on its way to storage). Checked on every JSON body before its schema,
 * so no route writes part of a request and then fails on the rest (a batch, a merge). Walks without recursion: a body
 * nested 100,000 deep is walked, not a stack overflow.
 * @returns at most 20 problems, each at its path below the body
 */
export function unstorableValues(body: unknown): JsonObjectProblem[] {
  const problems: JsonObjectProblem[] = [];
  // Each value seen keeps its parent's index and its key, so a path is built only for a problem (copying it at every
  // level would make a deep body quadratic).
  const seen: { parent: number; key: string | number }[] = [{ parent: -1, key: "" }];
  const pathOf = (at: number, key?: string | number): (string | number)[] => {
    const path: (string | number)[] = key === undefined ? [] : [key];
    for (let i = at; i > 0; i = seen[i]!.parent) path.push(seen[i]!.key);
    return path.reverse();
  };
  const stack: [unknown, number][] = [[body, 0]];
  while (stack.length && problems.length < MAX_REPORTED) {
    const [v, at] = stack.pop()!;
    if (typeof v === "number") {
      const m = Math.abs(v);
      if (m > Number.MAX_SAFE_INTEGER) problems.push({ path: pathOf(at), message: `numbers are at most ${Number.MAX_SAFE_INTEGER} in magnitude`, code: "too_big" });
      else if (m !== 0 && m < DYNAMODB_MIN_MAGNITUDE) problems.push({ path: pathOf(at), message: "numbers other than 0 are at least 1e-130 in magnitude", code: "invalid_type" });
    } else if (typeof v === "string") {
      if (!isWellFormed(v)) problems.push({ path: pathOf(at), message: "text must be well-formed Unicode (no lone surrogate)", code: "invalid_type" });
    } else if (typeof v === "object" && v !== null) {
      const entries: [string | number, unknown][] = Array.isArray(v) ? v.map((item, i) => [i, item]) : Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) {
        const [key, child] = entries[i]!;
        if (typeof key === "string" && !isWellFormed(key)) {
          problems.push({ path: pathOf(at, key), message: "keys must be well-formed Unicode (no lone surrogate)", code: "invalid_key" });
          continue;
        }
        seen.push({ parent: at, key });
        stack.push([child, seen.length - 1]);
      }
    }
  }
  return problems.slice(0, MAX_REPORTED);
}
