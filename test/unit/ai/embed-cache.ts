/**
 * Test-only: an Embedder wrapper that keeps vectors of texts it has seen in a binary file under the OS temp
 * directory, so the real-data tests and the benchmark embed each mention once per machine, not once per run.
 * Record = 20-byte SHA-1 of the text + dims float32 (little-endian). Appends are whole batches; a torn tail
 * record (from a killed run) is ignored on load.
 */
import { createHash } from "node:crypto";
import { appendFileSync, existsSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Embedder } from "../../../core/ai/ports";

export interface CachedEmbedder extends Embedder {
  /** Texts embedded by the inner embedder (cache misses) since creation. */
  misses: number;
  hits: number;
  /** Milliseconds spent in the inner embedder. */
  innerMs: number;
}

export function cacheFile(embedderId: string): string {
  return join(tmpdir(), `r2d-embed-cache-${embedderId.replace(/[^a-z0-9]+/gi, "_")}.bin`);
}

export function cachedEmbedder(inner: Embedder, file = cacheFile(inner.id)): CachedEmbedder {
  const d = inner.dimensions;
  const rec = 20 + 4 * d;
  const map = new Map<string, Float32Array>();
  if (existsSync(file)) {
    const buf = readFileSync(file);
    for (let off = 0; off + rec <= buf.length; off += rec) {
      const key = buf.subarray(off, off + 20).toString("hex");
      const v = new Float32Array(d);
      const view = new DataView(buf.buffer, buf.byteOffset + off + 20, 4 * d);
      for (let i = 0; i < d; i++) v[i] = view.getFloat32(i * 4, true);
      map.set(key, v);
    }
  }
  const hash = (t: string) => createHash("sha1").update(t).digest();
  const self: CachedEmbedder = {
    id: inner.id,
    dimensions: d,
    misses: 0,
    hits: 0,
    innerMs: 0,
    async embed(texts: string[]) {
      const keys = texts.map(hash);
      const missing: number[] = [];
      const seen = new Set<string>();
      keys.forEach((k, i) => {
        const hex = k.toString("hex");
        if (!map.has(hex) && !seen.has(hex)) {
          missing.push(i);
          seen.add(hex);
        }
      });
      if (missing.length) {
        const t = performance.now();
        const vecs = await inner.embed(missing.map((i) => texts[i]));
        self.innerMs += performance.now() - t;
        const out = Buffer.alloc(rec * missing.length);
        missing.forEach((i, j) => {
          keys[i].copy(out, j * rec);
          for (let q = 0; q < d; q++) out.writeFloatLE(vecs[j][q], j * rec + 20 + 4 * q);
          map.set(keys[i].toString("hex"), vecs[j]);
        });
        appendFileSync(file, out);
        self.misses += missing.length;
      }
      self.hits += texts.length - missing.length;
      return keys.map((k) => map.get(k.toString("hex"))!);
    },
  };
  return self;
}
