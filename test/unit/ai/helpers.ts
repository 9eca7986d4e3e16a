/** Test-only helpers for the AI unit tests. */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { Embedder } from "../../../core/ai/ports";

export const FIXTURES = join(import.meta.dirname, "../../fixtures/bedrock");

/** A recorded-shaped Bedrock response from test/fixtures/bedrock. */
export function fixture<T = any>(name: string): T {
  return JSON.parse(readFileSync(join(FIXTURES, name), "utf8")) as T;
}

/**
 * A fast deterministic bag-of-words embedder (feature hashing of lower-cased words into `dims` buckets, signed,
 * unit length). Texts sharing words are similar; it stands in for a real model where only the plumbing is tested.
 */
export function hashEmbedder(dims = 64): Embedder & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    id: `test:hash:${dims}`,
    dimensions: dims,
    calls,
    async embed(texts: string[]) {
      calls.push(texts);
      return texts.map((t) => {
        const v = new Float32Array(dims);
        for (const w of t.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
          let h = 2166136261;
          for (let i = 0; i < w.length; i++) h = Math.imul(h ^ w.charCodeAt(i), 16777619);
          v[(h >>> 1) % dims] += h & 1 ? 1 : -1;
        }
        let n = 0;
        for (const x of v) n += x * x;
        n = Math.sqrt(n) || 1;
        for (let i = 0; i < dims; i++) v[i] /= n;
        if (n === 1 && v.every((x) => x === 0)) v[0] = 1;
        return v;
      });
    },
  };
}
