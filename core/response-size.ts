/**
 * What one JSON answer of a listing may weigh. A Lambda answers at most 6 MB (API Gateway's proxy integration refuses
 * more: the client gets a 500 outside the error envelope), and one item of several lists may weigh hundreds of KB at
 * its fields' limits (an insight up to 200 KB with its notes, a document's text 3 MB), so a page of 500 can pass it.
 */
export const LIST_RESPONSE_BYTES = 5 * 1024 * 1024;

/**
 * The longest start of `items` whose JSON fits in `maxBytes` together, at least one item (a single item is within
 * its own limits). A listing that gives fewer items than its `limit` while `total` says more match is such a page:
 * the next page starts at `offset` plus the items given.
 * @param items the page's views, in order
 * @param maxBytes the budget, bytes as the Lambda answer carries them (`wireBytes`; default LIST_RESPONSE_BYTES)
 */
export function fitResponse<T>(items: readonly T[], maxBytes = LIST_RESPONSE_BYTES): T[] {
  const out: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = wireBytes(item);
    if (out.length && bytes + size > maxBytes) break;
    out.push(item);
    bytes += size;
  }
  return out;
}

/**
 * The longest end of `items` (oldest first) whose JSON fits in `maxBytes` together, at least one item: the newest
 * of a page read backwards in time (messages), whose first item's cursor then fetches the older ones.
 * @param items the page's views, oldest first
 */
export function fitNewest<T>(items: readonly T[], maxBytes = LIST_RESPONSE_BYTES): T[] {
  return fitResponse([...items].reverse(), maxBytes).reverse();
}

/**
 * Bytes `value` takes in a Lambda proxy answer, which is what the 6 MB limit counts: its JSON, carried as the string
 * `body` of the proxy result, so each quote, backslash and control character of that JSON is escaped once more (a
 * `"` of a text takes 4 bytes there, 2 in the JSON the client reads).
 */
export function wireBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(JSON.stringify(value))) - 2;
}

/**
 * `text` cut to at most `maxBytes` of {@link wireBytes}, at a character boundary (never half of a surrogate pair):
 * a long text in a single-item answer (a source's extracted text, a diff's two revisions).
 * @returns the text and whether it was cut
 */
export function fitText(text: string, maxBytes: number): { text: string; cut: boolean } {
  if (wireBytes(text) <= maxBytes) return { text, cut: false };
  let chars = Math.min(text.length, Math.max(0, maxBytes));
  let out = text.slice(0, chars);
  while (chars > 0 && wireBytes(out) > maxBytes) {
    chars = Math.floor(((chars * maxBytes) / wireBytes(out)) * 0.98);
    out = text.slice(0, chars);
  }
  if (/[\uD800-\uDBFF]$/.test(out)) out = out.slice(0, -1);
  return { text: out, cut: true };
}
