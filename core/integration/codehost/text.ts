/** Text caps of the code-host read tools (spec 02 Agent tools: line ranges 1-indexed inclusive, byte caps). */

/** Lines a read returns when the caller names no end line. */
export const DEFAULT_MAX_LINES = 400;
/** Bytes of UTF-8 a read returns at most. */
export const MAX_READ_BYTES = 50_000;

/**
 * The first `maxBytes` bytes of `text` as UTF-8, cut back to a character boundary: never half a character.
 * @returns the kept text and whether anything was cut
 */
export function capBytes(text: string, maxBytes: number): { text: string; truncated: boolean } {
  const bytes = Buffer.from(text, "utf8");
  if (bytes.length <= maxBytes) return { text, truncated: false };
  let end = maxBytes;
  // 0b10xxxxxx is a continuation byte: step back to the start of the character it belongs to.
  while (end > 0 && (bytes[end]! & 0xc0) === 0x80) end--;
  return { text: bytes.subarray(0, end).toString("utf8"), truncated: true };
}

/**
 * Lines `start..end` (1-indexed, inclusive) of a file, clamped to the file; without `end`, at most DEFAULT_MAX_LINES
 * lines; then at most MAX_READ_BYTES bytes (whole characters), `end_line` then being the last line kept whole or in
 * part.
 */
export function sliceLines(text: string, start = 1, end?: number) {
  const lines = text.split("\n");
  // A final newline ends the last line; it does not start another.
  if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
  const total = text === "" ? 0 : lines.length;
  const from = Math.min(Math.max(1, start), Math.max(1, total));
  const wanted = end === undefined ? from + DEFAULT_MAX_LINES - 1 : Math.max(from, end);
  const to = Math.min(wanted, total);
  const byLines = end === undefined && total > to;
  const picked = total === 0 ? "" : lines.slice(from - 1, to).join("\n");
  const capped = capBytes(picked, MAX_READ_BYTES);
  const keptLines = capped.truncated ? capped.text.split("\n").length : Math.max(0, to - from + 1);
  return {
    content: capped.text,
    start_line: total === 0 ? 0 : from,
    end_line: total === 0 ? 0 : from + keptLines - 1,
    total_lines: total,
    truncated: byLines || capped.truncated,
  };
}
