/**
 * The request timeout of the code host, planner and ticket tool adapters (PROVIDER_REQUEST_TIMEOUT_SECONDS, default
 * 20 s; core/config.ts). None of the SDKs has one of its own (undici waits 300 s for headers), and a push holds its
 * ticket only for `PUSH_LEASE_MS`: a create that outlived the lease could land after another push searched for its
 * marker and created a second issue. Every request is therefore ended at the timeout with a `TimeoutError` (a
 * DOMException, as `AbortSignal.timeout` gives), which `isTransportFailure` (./errors.ts) classifies as no answer:
 * `unknown`, and for a create an outcome unknown that the next push resolves by the marker.
 */
import { Config } from "../config";

/** The error a request ended by the timeout fails with: name `TimeoutError`, saying which provider and how long. */
export const timeoutError = (provider: string, ms: number): Error =>
  new DOMException(`${provider} did not answer within ${ms} ms (PROVIDER_REQUEST_TIMEOUT_SECONDS)`, "TimeoutError");

/**
 * A signal that aborts after the provider request timeout with {@link timeoutError} (and with `also`, when given and
 * it aborts first). The timer does not keep the process alive.
 */
export function timeoutSignal(provider: string, also?: AbortSignal | null, ms = Config.providerRequestTimeoutMs()): AbortSignal {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(timeoutError(provider, ms)), ms);
  timer.unref?.();
  return also ? AbortSignal.any([also, controller.signal]) : controller.signal;
}

/**
 * `fetch` with the provider request timeout on every request (and on reading its body, which the signal covers too):
 * the `request.fetch` of Octokit.
 */
export const timedFetch =
  (provider: string): typeof fetch =>
  (input, init) =>
    fetch(input, { ...init, signal: timeoutSignal(provider, init?.signal) });

/**
 * `work` (a whole SDK request, its own retries included) bounded by the provider request timeout: for an SDK that
 * takes no signal and no fetch of its own (jira.js 6 calls the global fetch). The request itself is left to end on its
 * own; its answer, if one comes, is ignored.
 */
export function withTimeout<T>(provider: string, work: Promise<T>, ms = Config.providerRequestTimeoutMs()): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(timeoutError(provider, ms)), ms);
    timer.unref?.();
  });
  work.catch(() => undefined);
  return Promise.race([work, timedOut]).finally(() => clearTimeout(timer));
}

/**
 * Marks `err` (a failure an adapter translated) as one the provider answered: an HTTP status came back, so its
 * processing of the request ended. A create that failed without this mark may still be under way at the provider (our
 * timeout ended the wait, the connection dropped, or the adapter cannot tell): a push keeps its lease for it
 * (core/ticket). Returns `err`.
 */
export function markAnswered<E extends Error>(err: E): E {
  Object.defineProperty(err, "providerAnswered", { value: true, enumerable: false });
  return err;
}

/** Whether {@link markAnswered} marked `err`: the provider answered the request it failed. */
export const wasAnswered = (err: unknown): boolean => !!err && typeof err === "object" && (err as { providerAnswered?: unknown }).providerAnswered === true;
