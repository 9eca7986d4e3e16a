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
 * @param maxBytes the budget, bytes of JSON (default LIST_RESPONSE_BYTES)
 */
export function fitResponse<T>(items: readonly T[], maxBytes = LIST_RESPONSE_BYTES): T[] {
  const out: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item));
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
