/**
 * How the pending-action executor ends a failed execution (DESIGN.md 6.2; core/pending-action/executor.ts): which
 * failures are transient (retried with backoff) and which are decided (failed at once), and the backoff itself.
 */
import { describe, expect, it } from "vitest";
import { ConditionalCheckFailedException, ProvisionedThroughputExceededException } from "@aws-sdk/client-dynamodb";
import { AppError, ERROR_STATUS, type ErrorCode } from "../../core/error";
import { classify, RETRY_BASE_MS, RETRY_MAX_MS, retryDelayMs } from "../../core/pending-action/executor";

const TRANSIENT: ErrorCode[] = ["SERVICE_UNAVAILABLE", "RATE_LIMITED", "SYNTHESIS_IN_PROGRESS", "CONFLICT", "REQUEST_TIMEOUT"];

describe("classify", () => {
  it("every AppError code is either transient (the five 'not now' codes) or decided, with its message", () => {
    for (const code of Object.keys(ERROR_STATUS) as ErrorCode[]) {
      const got = classify(new AppError(code, `message of ${code}`));
      if (TRANSIENT.includes(code)) expect(got, code).toEqual({ kind: "transient", message: `message of ${code}`, retryAfterMs: 0 });
      else expect(got, code).toEqual({ kind: "decided", message: `message of ${code}` });
    }
  });

  it("keeps the wait a 429 or 503 asks for", () => {
    expect(classify(new AppError("RATE_LIMITED", "slow down", { retry_after_seconds: 42 }))).toMatchObject({ kind: "transient", retryAfterMs: 42_000 });
  });

  it("DynamoDB throttling is transient, also wrapped as ElectroDB wraps it (cause)", () => {
    const sdk = new ProvisionedThroughputExceededException({ message: "too fast", $metadata: {} });
    expect(classify(sdk)).toMatchObject({ kind: "transient", message: "ProvisionedThroughputExceededException: too fast" });
    const wrapped = Object.assign(new Error("Error thrown by DynamoDB client"), { name: "ElectroError", cause: sdk });
    expect(classify(wrapped)).toMatchObject({ kind: "transient" });
  });

  it("server faults, transaction races and dropped connections are transient", () => {
    expect(classify(Object.assign(new Error("x"), { name: "TransactionConflictException" })).kind).toBe("transient");
    expect(classify(Object.assign(new Error("x"), { $metadata: { httpStatusCode: 503 } })).kind).toBe("transient");
    expect(classify(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" })).kind).toBe("transient");
  });

  it("a refused condition and anything unknown are defects, not retried", () => {
    expect(classify(new ConditionalCheckFailedException({ message: "no", $metadata: { httpStatusCode: 400 } })).kind).toBe("defect");
    expect(classify(new TypeError("undefined is not a function")).kind).toBe("defect");
    expect(classify("a string").kind).toBe("defect");
  });
});

describe("retryDelayMs", () => {
  it("doubles from RETRY_BASE_MS up to RETRY_MAX_MS, jittered down to half", () => {
    for (let retries = 0; retries < 12; retries++) {
      const ceiling = Math.min(RETRY_MAX_MS, RETRY_BASE_MS * 2 ** retries);
      for (let i = 0; i < 50; i++) {
        const d = retryDelayMs(retries);
        expect(d).toBeGreaterThanOrEqual(ceiling / 2);
        expect(d).toBeLessThanOrEqual(ceiling);
      }
    }
  });

  it("never waits less than the failure asked for", () => {
    expect(retryDelayMs(0, 30_000)).toBe(30_000);
    expect(retryDelayMs(30, 5_000)).toBeGreaterThanOrEqual(RETRY_MAX_MS / 2);
  });
});
