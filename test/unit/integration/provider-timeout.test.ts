/**
 * The provider request timeout (PROVIDER_REQUEST_TIMEOUT_SECONDS; core/integration/timeout.ts): the setting's default
 * and bound, which keep a create inside the push lease, and the abort it produces being classified as no answer.
 */
import { afterEach, describe, expect, it } from "vitest";
import { Config, PROVIDER_REQUEST_TIMEOUT_DEFAULT_MS, PROVIDER_REQUEST_TIMEOUT_MAX_MS } from "../../../core/config";
import { isTransportFailure, noAnswer } from "../../../core/integration/errors";
import { timeoutSignal, withTimeout } from "../../../core/integration/timeout";
import { PUSH_LEASE_MS } from "../../../core/ticket";

const before = process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS;
afterEach(() => {
  if (before === undefined) delete process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS;
  else process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = before;
});

describe("PROVIDER_REQUEST_TIMEOUT_SECONDS", () => {
  it("defaults to 20 s, takes fractions, ignores what is not a positive number, and is cut to the bound, which stays under half the push lease", () => {
    delete process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS;
    expect(Config.providerRequestTimeoutMs()).toBe(20_000);
    expect(PROVIDER_REQUEST_TIMEOUT_DEFAULT_MS).toBe(20_000);
    process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = "0.4";
    expect(Config.providerRequestTimeoutMs()).toBe(400);
    for (const bad of ["0", "-3", "soon"]) {
      process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = bad;
      expect(Config.providerRequestTimeoutMs()).toBe(20_000);
    }
    process.env.PROVIDER_REQUEST_TIMEOUT_SECONDS = "300";
    expect(Config.providerRequestTimeoutMs()).toBe(PROVIDER_REQUEST_TIMEOUT_MAX_MS);
    expect(2 * PROVIDER_REQUEST_TIMEOUT_MAX_MS).toBeLessThan(PUSH_LEASE_MS);
  });

  it("a request ended by the timeout fails with a TimeoutError that is no answer (unknown), also as the cause of an SDK's error", async () => {
    const signal = timeoutSignal("GitHub", undefined, 20);
    await new Promise((resolve) => signal.addEventListener("abort", resolve));
    expect(signal.reason).toMatchObject({ name: "TimeoutError", message: expect.stringContaining("GitHub did not answer within 20 ms") });
    expect(isTransportFailure(signal.reason)).toBe(true);
    // Octokit wraps it: a RequestError 500 whose cause is the abort.
    expect(isTransportFailure(Object.assign(new Error(signal.reason.message), { status: 500, cause: signal.reason }))).toBe(true);

    const err = await withTimeout("Jira", new Promise(() => undefined), 20).catch((e: unknown) => e);
    expect(isTransportFailure(err)).toBe(true);
    expect(noAnswer(err)).toMatchObject({ failure: "unknown", message: expect.stringMatching(/^no answer \(Jira did not answer within 20 ms/) });
    await expect(withTimeout("Jira", Promise.resolve(7), 20)).resolves.toBe(7);
  });
});
