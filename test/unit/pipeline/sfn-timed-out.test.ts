/**
 * The Step Functions runner's `timedOut` (core/pipeline/index.ts), which the recovery sweeper asks before starting a
 * source's work again: true only for an attempt whose execution ended TIMED_OUT (the state machine's TimeoutSeconds,
 * where no Catch runs). As test/unit/pipeline/sfn-runner.test.ts, the SDK's own client talks to a local HTTP server
 * speaking the Step Functions JSON protocol.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepFunctionsRunner } from "../../../core/pipeline";

const SM_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:Extraction";
/** The status of each attempt's execution, by the execution name's attempt suffix; others do not exist. */
const STATUS: Record<string, string> = { "-0": "TIMED_OUT", "-1": "FAILED", "-2": "RUNNING" };
let server: Server;
const saved = { ...process.env };

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      const body = JSON.parse(raw) as { executionArn?: string };
      const name = String(body.executionArn ?? "").split(":").pop() ?? "";
      const status = Object.entries(STATUS).find(([suffix]) => name.endsWith(suffix))?.[1];
      res.writeHead(status ? 200 : 400, { "content-type": "application/x-amz-json-1.0" });
      res.end(
        JSON.stringify(
          status
            ? { executionArn: body.executionArn, status, startDate: 1 }
            : { __type: "com.amazonaws.swf.service.v2.model#ExecutionDoesNotExist", message: "Execution Does Not Exist" },
        ),
      );
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  Object.assign(process.env, {
    EXTRACTION_STATE_MACHINE_ARN: SM_ARN,
    AWS_ENDPOINT_URL_SFN: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    AWS_ACCESS_KEY_ID: "test",
    AWS_SECRET_ACCESS_KEY: "test",
    AWS_REGION: "us-east-1",
  });
});

afterAll(async () => {
  process.env = saved;
  await new Promise((r) => server.close(r));
});

describe("stepFunctionsRunner.timedOut", () => {
  const source = "0f8fad5b-d9cb-469f-a165-70867728950e";

  it("is true only for an execution that ended TIMED_OUT", async () => {
    expect(await stepFunctionsRunner.timedOut!({ source_id: source, attempt: 0 })).toBe(true);
    expect(await stepFunctionsRunner.isRunning({ source_id: source, attempt: 0 })).toBe(false);
    expect(await stepFunctionsRunner.timedOut!({ source_id: source, attempt: 1 })).toBe(false);
    expect(await stepFunctionsRunner.timedOut!({ source_id: source, attempt: 2 })).toBe(false);
    expect(await stepFunctionsRunner.isRunning({ source_id: source, attempt: 2 })).toBe(true);
    expect(await stepFunctionsRunner.timedOut!({ source_id: source, attempt: 3 })).toBe(false);
  });
});
