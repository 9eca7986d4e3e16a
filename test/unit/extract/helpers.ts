/** Shared helpers for the extraction tests: real-data paths and the invariants every extraction must keep. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import type { Extraction } from "../../../core/extract/types";

export const REALDATA = "/work/shared/realdata";

/** Bytes of a file under /work/shared/realdata (read-only; never modified). */
export const real = (path: string): Buffer => readFileSync(join(REALDATA, path));

/**
 * The types.ts invariant, checked independently of TextBuilder: every unit's text occurs verbatim in
 * extracted_text. Units are usually in text order, so each search starts where the previous match ended and only
 * falls back to a full search; that keeps 10,000-unit survey exports linear.
 */
export function expectVerbatim(x: Extraction): void {
  let cursor = 0;
  const missing: string[] = [];
  for (const u of x.units) {
    expect(u.text.trim().length, "unit text is not blank").toBeGreaterThan(0);
    let at = x.extracted_text.indexOf(u.text, cursor);
    if (at < 0) at = x.extracted_text.indexOf(u.text);
    if (at < 0) missing.push(u.text.slice(0, 80));
    else cursor = at + u.text.length;
  }
  expect(missing, "units not verbatim in extracted_text").toEqual([]);
}

/** Share of the reference's distinct words found in the hypothesis (case and punctuation ignored), 0..1. */
export function wordOverlap(reference: string, hypothesis: string): number {
  const words = (s: string) => new Set(s.toLowerCase().match(/[a-z']+/g) ?? []);
  const ref = words(reference);
  const hyp = words(hypothesis);
  let hit = 0;
  for (const w of ref) if (hyp.has(w)) hit++;
  return ref.size ? hit / ref.size : 0;
}

/** Count units by kind, e.g. { response: 70 }. */
export const kinds = (x: Extraction): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const u of x.units) out[u.kind] = (out[u.kind] ?? 0) + 1;
  return out;
};
