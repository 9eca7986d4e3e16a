/**
 * The entropy scanner's settings (issue #21; docs/decisions.md "Entropy scanner"), read on every call so an operator
 * (or a test) can change them without a restart. Each is an environment variable of the same name.
 */

const positive = (name: string, fallback: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw.trim() === "") return fallback;
  const n = Number(raw);
  return Number.isFinite(n) && n > 0 ? n : fallback;
};

export const EntropySettings = {
  /** Days after which a source's research counts as old (`ENTROPY_STALE_SOURCE_DAYS`, default 90). */
  staleSourceDays: () => positive("ENTROPY_STALE_SOURCE_DAYS", 90),
  /**
   * Lowest cosine similarity (0–1) of two insights' embeddings for them to be compared at all
   * (`ENTROPY_CONTRADICTION_MIN_SIMILARITY`, default 0.6): the Universal Sentence Encoder puts a sentence and its
   * negation at 0.85–0.95 and two claims about the same feature at 0.6–0.7; unrelated insights fall below 0.5.
   */
  contradictionMinSimilarity: () => positive("ENTROPY_CONTRADICTION_MIN_SIMILARITY", 0.6),
  /** Days a scan and its issues are kept (`ENTROPY_RETENTION_DAYS`, default 90; DynamoDB's TTL removes them). */
  retentionDays: () => positive("ENTROPY_RETENTION_DAYS", 90),
  /**
   * Hours after a workspace's last scan before the scheduled scanner scans it again (`ENTROPY_SCAN_INTERVAL_HOURS`,
   * default 20: a daily schedule rescans every workspace each day, whatever the exact firing time).
   */
  scanIntervalHours: () => positive("ENTROPY_SCAN_INTERVAL_HOURS", 20),
} as const;

/** Most issues of one type a scan keeps (the weightiest first); more sets the scan's `truncated`. */
export const MAX_ISSUES_PER_TYPE = 500;
/**
 * Most insight ids a stale-source issue keeps (its `evidence.insight_count` counts them all): a source thousands of
 * insights cite would otherwise pass DynamoDB's 400 KB item, and the scan's write of its issues would fail every day.
 */
export const MAX_ISSUE_INSIGHT_IDS = 200;

/**
 * When the scheduled scanner runs (functions/events/entropy-scanner.ts), UTC: daily at 04:00, after the 02:00 research
 * cycles (which scan their own workspaces). EventBridge Scheduler form (stacks/Tasks.ts) and the 5-field form croner
 * fires on the embedded runtime (local/tasks-schedules.ts).
 */
export const ENTROPY_SCAN_SCHEDULE = "cron(0 4 * * ? *)";
export const ENTROPY_SCAN_CRON = "0 4 * * *";
