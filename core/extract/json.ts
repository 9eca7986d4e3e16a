/**
 * JSON extraction: issue/ticket threads (GitHub issues, helpdesk exports) become `comment` units with their author;
 * any other JSON becomes one `paragraph` unit per prose string leaf.
 */
import { unreadable } from "./errors";
import { capField, MAX_FIELD_CHARS } from "./limits";
import { markdownToPlain } from "./markdown";
import { TextBuilder } from "./text";
import type { Extraction } from "./types";

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (v: Json | undefined): v is JsonObject => typeof v === "object" && v !== null && !Array.isArray(v);
const str = (v: Json | undefined): string | undefined => (typeof v === "string" && v.trim() ? v : typeof v === "number" ? String(v) : undefined);

/**
 * Extract a JSON document (engine "json").
 *
 * Thread shape, recognised at the top level or one property down (e.g. `{ "issues": [...] }`): an array of objects
 * with a `title`/`subject` and a `body`/`description` and/or a `comments`/`replies`/`messages` array. Each issue body
 * and comment becomes a `comment` unit: `speaker` = author (`author`, `user.login`, `user.name`, `author_name`, ...),
 * `fields.title` = thread title (plus `url`, `date` when present; each capped at MAX_FIELD_CHARS, limits.ts),
 * locator "#443 comment 2". Bodies are Markdown (GitHub), so they are rendered to plain text first.
 *
 * Anything else: every string leaf that reads as prose (has a space, or 20+ characters, and is not a URL) becomes a
 * `paragraph` unit with its JSON path (capped) as locator and `fields.path`; extracted_text lists "path: value" for
 * all scalar leaves.
 *
 * @throws ExtractionError `corrupt` with the line and column where the JSON stops being valid (not V8's wording).
 */
export function extractJson(text: string): Extraction {
  let data: Json;
  try {
    data = JSON.parse(text) as Json;
  } catch (err) {
    throw unreadable(`The JSON file could not be parsed: it is not valid JSON ${whereInvalid(text, err)}`, err);
  }
  const threads = findThreads(data);
  return threads ? threadsToExtraction(threads) : genericToExtraction(data);
}

/**
 * "near line L, column C" from a JSON.parse error (V8 gives "(line L column C)" or "at position P"), or "(it may
 * be truncated)" when the text ended early or no position is given.
 */
function whereInvalid(text: string, err: unknown): string {
  const message = err instanceof Error ? err.message : "";
  const lc = /line (\d+) column (\d+)/.exec(message);
  if (lc) return `near line ${lc[1]}, column ${lc[2]}`;
  const at = /position (\d+)/.exec(message);
  if (!at || Number(at[1]) >= text.length) return "(it may be truncated)";
  const before = text.slice(0, Number(at[1]));
  const line = before.split("\n").length;
  return `near line ${line}, column ${before.length - before.lastIndexOf("\n")}`;
}

/** The array of thread objects, if the document is (or directly holds) one. */
function findThreads(data: Json): JsonObject[] | undefined {
  const candidates: Json[] = [data];
  if (isObject(data)) candidates.push(...Object.values(data));
  for (const c of candidates) {
    if (!Array.isArray(c) || !c.length) continue;
    const items = c.filter(isObject);
    const threadLike = items.filter((i) => titleOf(i) !== undefined && (bodyOf(i) !== undefined || commentsOf(i).length > 0));
    if (items.length === c.length && threadLike.length >= Math.ceil(items.length / 2)) return items;
  }
  return undefined;
}

const titleOf = (o: JsonObject) => str(o.title) ?? str(o.subject) ?? str(o.summary);
const bodyOf = (o: JsonObject) => str(o.body) ?? str(o.description) ?? str(o.text) ?? str(o.content) ?? str(o.message);
const commentsOf = (o: JsonObject): JsonObject[] => {
  const list = o.comments ?? o.replies ?? o.messages ?? o.conversation;
  return Array.isArray(list) ? list.filter(isObject) : [];
};
const authorOf = (o: JsonObject): string | undefined => {
  for (const key of ["author", "user", "from", "creator", "reporter", "requester", "submitter"]) {
    const v = o[key];
    if (str(v)) return str(v);
    if (isObject(v)) {
      const name = str(v.login) ?? str(v.username) ?? str(v.name) ?? str(v.email) ?? str(v.id);
      if (name) return name;
    }
  }
  return str(o.author_name) ?? str(o.author_login) ?? str(o.user_login) ?? str(o.author_id) ?? str(o.user_id);
};
const dateOf = (o: JsonObject) => str(o.date) ?? str(o.created_at) ?? str(o.createdAt) ?? str(o.created) ?? str(o.timestamp);

function threadsToExtraction(threads: JsonObject[]): Extraction {
  const b = new TextBuilder();
  threads.forEach((t, ti) => {
    if (ti) b.text("\n\n\n");
    const title = titleOf(t) ?? `Thread ${ti + 1}`;
    const number = str(t.number) ?? str(t.id) ?? str(t.key);
    const url = str(t.html_url) ?? str(t.url);
    const ref = number ? `#${number}` : `thread ${ti + 1}`;
    const meta = [str(t.repository) ? `${str(t.repository)}${number ? `#${number}` : ""}` : number ? `#${number}` : "", str(t.state) ? `(${str(t.state)})` : "", url ?? ""]
      .filter(Boolean)
      .join(" ");
    b.text(title);
    if (meta) b.text(`\n${meta}`);
    // Capped once per thread and shared by its comments (limits.ts, MAX_FIELD_CHARS): the title is repeated on each.
    // A cut URL is no link: one longer than a field may be is left out (the thread's text still names it).
    const fields = { title: capField(title), url: (url ?? "").length <= MAX_FIELD_CHARS ? (url ?? "") : "" };

    const entries: { o: JsonObject; body: string; locator: string }[] = [];
    const body = bodyOf(t);
    if (body) entries.push({ o: t, body, locator: `${ref} description` });
    commentsOf(t).forEach((c, ci) => {
      const cb = bodyOf(c);
      if (cb) entries.push({ o: c, body: cb, locator: `${ref} comment ${ci + 1}` });
    });
    for (const e of entries) {
      const author = authorOf(e.o);
      const date = dateOf(e.o);
      b.text(`\n\n${author ?? "Unknown author"}${date ? ` (${date})` : ""}:\n`);
      b.unit({ kind: "comment", text: markdownToPlain(e.body), speaker: author === undefined || author === null ? author : capField(author), fields: { ...fields, date: capField(date ?? "") }, locator: e.locator });
    }
  });
  return b.build("json");
}

function genericToExtraction(data: Json): Extraction {
  const b = new TextBuilder();
  let first = true;
  const visit = (v: Json, path: string) => {
    if (Array.isArray(v)) return v.forEach((x, i) => visit(x, `${path}[${i}]`));
    if (isObject(v)) return Object.entries(v).forEach(([k, x]) => visit(x, /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`));
    if (v === null) return;
    if (!first) b.text("\n");
    first = false;
    b.text(`${path}: `);
    const s = String(v);
    const text = s.trim();
    if (typeof v === "string" && isProse(text)) {
      // The full path is in the text; the unit's copy is capped (a long key would be repeated on every leaf under it).
      const where = capField(path);
      b.unit({ kind: "paragraph", text, locator: where, fields: { path: where } });
    } else b.text(s.replace(/\s+/g, " "));
  };
  visit(data, "$");
  return b.build("json");
}

const isProse = (s: string): boolean => /\p{L}/u.test(s) && (/\s/.test(s) || s.length >= 20) && !/^(https?:\/\/|mailto:)\S+$/i.test(s);
