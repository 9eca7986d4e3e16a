import * as hdr from "hdr-histogram-js";

/** Latency summary in milliseconds. */
export interface Summary {
  n: number;
  p50: number;
  p90: number;
  p99: number;
  min: number;
  max: number;
  mean: number;
}

/**
 * Latency recorder over an HDR histogram (microsecond resolution, 3 significant digits, up to 60 s).
 * Record milliseconds; read percentiles back in milliseconds.
 */
export class Recorder {
  private readonly histogram = hdr.build({
    lowestDiscernibleValue: 1,
    highestTrackableValue: 60_000_000,
    numberOfSignificantValueDigits: 3,
  });

  /** Record one sample, in milliseconds. */
  record(ms: number): void {
    this.histogram.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  get count(): number {
    return this.histogram.totalCount;
  }

  summary(): Summary {
    const h = this.histogram;
    const ms = (us: number) => us / 1000;
    return {
      n: h.totalCount,
      p50: ms(h.getValueAtPercentile(50)),
      p90: ms(h.getValueAtPercentile(90)),
      p99: ms(h.getValueAtPercentile(99)),
      min: ms(h.minNonZeroValue),
      max: ms(h.maxValue),
      mean: ms(h.mean),
    };
  }
}

/** Milliseconds since `start` (a performance.now() reading). */
export const since = (start: number): number => performance.now() - start;

/** Milliseconds with a precision that suits the magnitude. */
export function fmtMs(ms: number): string {
  if (!Number.isFinite(ms)) return "-";
  if (ms >= 100) return ms.toFixed(0);
  if (ms >= 10) return ms.toFixed(1);
  return ms.toFixed(2);
}

export function fmtBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${(bytes / (1024 * 1024)).toFixed(2)} MiB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${bytes} B`;
}

/** Print an aligned plain-text table (first column left-aligned, the rest right-aligned). */
export function printTable(headers: string[], rows: (string | number)[][]): void {
  const cells = [headers, ...rows.map((r) => r.map(String))];
  const widths = headers.map((_, c) => Math.max(...cells.map((r) => (r[c] ?? "").length)));
  const line = (r: string[]) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!))).join("  ");
  console.log(line(headers));
  console.log(widths.map((w) => "-".repeat(w)).join("  "));
  for (const r of cells.slice(1)) console.log(line(r));
}
