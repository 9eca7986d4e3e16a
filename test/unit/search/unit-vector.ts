import { normalize } from "../../../core/ai/vectors";

/** A deterministic pseudo-random unit vector (mulberry32 seeded by `seed`), `dims` long: the search tests' data. */
export function unitVector(seed: number, dims = 512): Float32Array {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
  return normalize(Array.from({ length: dims }, next));
}
