/**
 * Vector helpers shared by the embedders, synthesis and insight search (spec 01 Insights: POST /api/insights/search
 * "ranks by semantic relevance using a vector store").
 *
 * Vectors are `Float32Array`s. Embedders return unit-length vectors (Embedder port, core/ai/ports.ts), so cosine
 * similarity equals the dot product; `cosine` still divides by the norms for callers holding raw vectors.
 * Storage form is little-endian float32 bytes in base64 (4 bytes per dimension, so a 512-d vector is 2,732 chars).
 */

/**
 * Encode a vector for storage: its float32 values as little-endian bytes, in base64.
 * @param v any Float32Array (length = dimensions)
 * @returns base64 string of `4 * v.length` bytes
 */
export function encodeVector(v: Float32Array): string {
  const bytes = new Uint8Array(v.length * 4);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < v.length; i++) view.setFloat32(i * 4, v[i], true);
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("base64");
}

/**
 * Decode a vector stored by `encodeVector`.
 * @param s base64 of little-endian float32 bytes
 * @param dimensions when given, the decoded length must equal it
 * @throws Error when the byte length is not a multiple of 4, or differs from `dimensions`
 */
export function decodeVector(s: string, dimensions?: number): Float32Array {
  const buf = Buffer.from(s, "base64");
  if (buf.byteLength % 4 !== 0) throw new Error(`vector bytes ${buf.byteLength} not a multiple of 4`);
  const n = buf.byteLength / 4;
  if (dimensions !== undefined && n !== dimensions) throw new Error(`vector has ${n} dimensions, expected ${dimensions}`);
  const out = new Float32Array(n);
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  for (let i = 0; i < n; i++) out[i] = view.getFloat32(i * 4, true);
  return out;
}

/**
 * Dot product of two equal-length vectors (cosine similarity when both are unit length).
 * @throws Error on a length mismatch
 */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`dimension mismatch ${a.length} vs ${b.length}`);
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** Euclidean norm. */
export function norm(a: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * a[i];
  return Math.sqrt(s);
}

/**
 * Cosine similarity in [-1, 1]; 0 when either vector is all zeros.
 * @throws Error on a length mismatch
 */
export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const na = norm(a);
  const nb = norm(b);
  if (na === 0 || nb === 0) return 0;
  return dot(a, b) / (na * nb);
}

/**
 * A unit-length copy of `v` (a zero vector stays zero).
 */
export function normalize(v: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(v as ArrayLike<number>);
  const n = norm(out);
  if (n > 0) for (let i = 0; i < out.length; i++) out[i] /= n;
  return out;
}

/**
 * Row-major matrix of `rows` vectors of `dims` each, in one contiguous Float32Array (cache-friendly scans).
 */
export interface Matrix {
  data: Float32Array;
  rows: number;
  dims: number;
}

/**
 * Pack vectors into a contiguous row-major matrix.
 * @throws Error when vectors differ in length
 */
export function toMatrix(vectors: ArrayLike<number>[], dims?: number): Matrix {
  const d = dims ?? (vectors.length ? vectors[0].length : 0);
  const data = new Float32Array(vectors.length * d);
  for (let r = 0; r < vectors.length; r++) {
    const v = vectors[r];
    if (v.length !== d) throw new Error(`row ${r} has ${v.length} dimensions, expected ${d}`);
    data.set(v as ArrayLike<number>, r * d);
  }
  return { data, rows: vectors.length, dims: d };
}

/** A view (no copy) of row `r` of a matrix. */
export function row(m: Matrix, r: number): Float32Array {
  return m.data.subarray(r * m.dims, (r + 1) * m.dims);
}

/** Dot product of matrix row `r` with `q` (no bounds checks beyond the matrix's own). */
export function rowDot(m: Matrix, r: number, q: ArrayLike<number>): number {
  const d = m.dims;
  const data = m.data;
  const off = r * d;
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  let i = 0;
  for (; i + 3 < d; i += 4) {
    s0 += data[off + i] * q[i];
    s1 += data[off + i + 1] * q[i + 1];
    s2 += data[off + i + 2] * q[i + 2];
    s3 += data[off + i + 3] * q[i + 3];
  }
  for (; i < d; i++) s0 += data[off + i] * q[i];
  return s0 + s1 + s2 + s3;
}

/** One search hit: the row index and its score (dot product). */
export interface Hit {
  index: number;
  score: number;
}

/**
 * Top-k rows of `m` by dot product with `query` (cosine when rows and query are unit length), best first;
 * ties are broken by lower row index so results are deterministic.
 * @param k number of hits wanted (fewer when the matrix is smaller)
 * @param minScore rows scoring below it are skipped
 * @throws Error when the query length differs from the matrix dimension
 */
export function topK(m: Matrix, query: ArrayLike<number>, k: number, minScore = -Infinity): Hit[] {
  if (query.length !== m.dims) throw new Error(`query has ${query.length} dimensions, matrix ${m.dims}`);
  if (k <= 0 || m.rows === 0) return [];
  // Bounded min-heap of size k: O(rows * dims + rows * log k).
  const heap: Hit[] = [];
  const worse = (a: Hit, b: Hit) => a.score < b.score || (a.score === b.score && a.index > b.index);
  const up = (i: number) => {
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!worse(heap[i], heap[p])) break;
      [heap[i], heap[p]] = [heap[p], heap[i]];
      i = p;
    }
  };
  const down = (i: number) => {
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m2 = i;
      if (l < heap.length && worse(heap[l], heap[m2])) m2 = l;
      if (r < heap.length && worse(heap[r], heap[m2])) m2 = r;
      if (m2 === i) break;
      [heap[i], heap[m2]] = [heap[m2], heap[i]];
      i = m2;
    }
  };
  for (let r = 0; r < m.rows; r++) {
    const score = rowDot(m, r, query);
    if (score < minScore) continue;
    const hit = { index: r, score };
    if (heap.length < k) {
      heap.push(hit);
      up(heap.length - 1);
    } else if (worse(heap[0], hit)) {
      heap[0] = hit;
      down(0);
    }
  }
  return heap.sort((a, b) => b.score - a.score || a.index - b.index);
}

/**
 * A vector quantised to signed bytes: `codes[i] * scale ≈ v[i]` (symmetric, one scale per vector: the largest
 * magnitude maps to 127). A 512-d vector is 512 bytes instead of 2,048, and the dot product of a unit-length
 * original with a unit query keeps about two decimal places: enough to rank, which is all search does with it.
 */
export interface Int8Vector {
  codes: Int8Array;
  scale: number;
}

/**
 * Quantise a vector to int8 with a per-vector scale (maximum magnitude / 127). A zero vector gets scale 0.
 * @returns codes (length = dimensions) and scale
 */
export function quantizeInt8(v: ArrayLike<number>): Int8Vector {
  let max = 0;
  for (let i = 0; i < v.length; i++) max = Math.max(max, Math.abs(v[i]));
  const codes = new Int8Array(v.length);
  if (max === 0) return { codes, scale: 0 };
  const scale = max / 127;
  for (let i = 0; i < v.length; i++) codes[i] = Math.max(-127, Math.min(127, Math.round(v[i] / scale)));
  return { codes, scale };
}

/** The float vector an `Int8Vector` stands for (`codes[i] * scale`). */
export function dequantizeInt8(q: Int8Vector): Float32Array {
  const out = new Float32Array(q.codes.length);
  for (let i = 0; i < out.length; i++) out[i] = q.codes[i] * q.scale;
  return out;
}

/**
 * Encode an int8 vector's codes for storage: the bytes in base64 (a 512-d vector is 684 characters); the scale is
 * stored beside it as a number.
 */
export function encodeInt8(codes: Int8Array): string {
  return Buffer.from(codes.buffer, codes.byteOffset, codes.byteLength).toString("base64");
}

/**
 * Decode codes stored by `encodeInt8`.
 * @param dimensions when given, the decoded length must equal it
 * @throws Error when the length differs from `dimensions`
 */
export function decodeInt8(s: string, dimensions?: number): Int8Array {
  const buf = Buffer.from(s, "base64");
  if (dimensions !== undefined && buf.byteLength !== dimensions) throw new Error(`int8 vector has ${buf.byteLength} dimensions, expected ${dimensions}`);
  return new Int8Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

/**
 * Row-major matrix of int8 rows with one scale per row: row `r` stands for `data[r*dims + i] * scales[r]`.
 */
export interface Int8Matrix {
  data: Int8Array;
  scales: Float32Array;
  rows: number;
  dims: number;
}

/**
 * Dot product of every row of an int8 matrix with a float query (cosine for unit-length originals and query),
 * one pass over the bytes: `rows * dims` multiply-adds.
 * @param out where to write the scores (length ≥ rows), allocated when not given
 * @returns the scores by row index
 * @throws Error when the query length differs from the matrix dimension
 */
export function int8Scores(m: Int8Matrix, query: ArrayLike<number>, out: Float32Array = new Float32Array(m.rows)): Float32Array {
  if (query.length !== m.dims) throw new Error(`query has ${query.length} dimensions, matrix ${m.dims}`);
  const d = m.dims;
  const data = m.data;
  const q = Float32Array.from(query as ArrayLike<number>);
  for (let r = 0; r < m.rows; r++) {
    const off = r * d;
    let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    let i = 0;
    for (; i + 3 < d; i += 4) {
      s0 += data[off + i] * q[i];
      s1 += data[off + i + 1] * q[i + 1];
      s2 += data[off + i + 2] * q[i + 2];
      s3 += data[off + i + 3] * q[i + 3];
    }
    for (; i < d; i++) s0 += data[off + i] * q[i];
    out[r] = (s0 + s1 + s2 + s3) * m.scales[r];
  }
  return out;
}
