/**
 * Retry plumbing shared by the model adapters (Bedrock, openai-compatible), so every engine backs off the same way.
 * Request/response calls go through p-retry (`retryTransient`); a stream cannot, because a generator must yield a
 * `retry` event between attempts, so for streams the delay, the wait and the abort error are computed here.
 */
import pRetry, { AbortError } from "p-retry";
import type { z } from "zod";
/** Backoff settings for transient errors of a model call. */
export interface RetrySettings {
  /** Retries after the first try (default 5). */
  retries: number;
  /** First delay before jitter, ms (default 500). */
  minTimeoutMs: number;
  /** Cap of one delay, ms (default 8,000). */
  maxTimeoutMs: number;
}

/** Human-readable list of zod issues (at most 20), sent back to a model in a repair turn. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 20)
    .map((i) => `- at ${i.path.length ? i.path.join(".") : "(root)"}: ${i.message}`)
    .join("\n");
}

/**
 * Run `fn` with exponential backoff and jitter while it fails with an error `isTransient` accepts; any other error
 * fails at once. `onAttempt` is called before every attempt (adapters count attempts in their usage).
 * @param signal stops the retries (also the wait between two) when it fires: `fn` should pass it to its request
 * @throws the last error, unchanged: the adapter maps it (busy, unreachable) to its own AppError; an Error named
 *   "AbortError" when `signal` fired.
 */
export async function retryTransient<T>(fn: () => Promise<T>, retry: RetrySettings, isTransient: (err: unknown) => boolean, onAttempt: () => void, signal?: AbortSignal): Promise<T> {
  try {
    return await pRetry(
      async () => {
        signal?.throwIfAborted();
        onAttempt();
        try {
          return await fn();
        } catch (err) {
          // A request cut by the caller's abort is no transient failure to retry.
          if (!signal?.aborted && isTransient(err)) throw err;
          throw new AbortError(err instanceof Error ? err : new Error(String(err)));
        }
      },
      { retries: retry.retries, factor: 2, minTimeout: retry.minTimeoutMs, maxTimeout: retry.maxTimeoutMs, randomize: true, ...(signal ? { signal } : {}) },
    );
  } catch (err) {
    // However the abort surfaced (the SDK's own error, p-retry's, the signal's reason), say it the one way callers know.
    if (signal?.aborted) throw abortError(signal);
    throw err;
  }
}

/** "Name: message" of an error, for a `retry` event's reason. */
export function describe(err: unknown): string {
  if (err instanceof Error) return err.message ? `${err.name}: ${err.message}` : err.name;
  return String(err);
}

/**
 * Delay before retry number `retry` (1-based), as p-retry computes it for the non-streaming adapters: `minTimeoutMs * 2^(retry-1)`
 * times a random factor in [1, 2), capped at `maxTimeoutMs`. Computed here because a generator cannot yield its
 * `retry` event from inside p-retry's loop.
 */
export function backoffDelay(retry: number, settings: RetrySettings): number {
  const base = Math.max(settings.minTimeoutMs, 1) * 2 ** (retry - 1);
  return Math.min(settings.maxTimeoutMs, Math.round(base * (1 + Math.random())));
}

/** The abort error the AWS SDK's Node HTTP handler throws, so callers see one kind of abort whatever the engine. */
export function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  const err = new Error(reason && !(reason instanceof Error) ? String(reason) : "Request aborted");
  err.name = "AbortError";
  if (reason instanceof Error) err.cause = reason;
  return err;
}

/** Waits `ms`, or rejects with an AbortError as soon as `signal` fires. */
export function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortError(signal));
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortError(signal!));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
