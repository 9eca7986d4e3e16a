/**
 * The Step Functions runner (core/pipeline/index.ts) as the recovery sweeper uses it in AWS: `isRunning` describes
 * the attempt's execution, named `<source>-<attempt>`, under the state machine's ARN; `timedOut` is true only for an
 * execution that ended TIMED_OUT (the state machine's TimeoutSeconds, where no Catch runs). The SDK's own client talks to
 * a local HTTP server speaking the Step Functions JSON protocol (awsJson1_0), so the request is the SDK's real one.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { stepFunctionsRunner } from "../../../core/pipeline";

const SM_ARN = "arn:aws:states:us-east-1:123456789012:stateMachine:Extraction";
const requests: { target: string; body: Record<string, unknown> }[] = [];
let server: Server;
const saved = { ...process.env };

beforeAll(async () => {
  server = createServer((req, res) => {
    let raw = "";
    req.on("data", (c: Buffer) => (raw += c.toString()));
    req.on("end", () => {
      const target = String(req.headers["x-amz-target"]);
      const body = JSON.parse(raw) as Record<string, string>;
      requests.push({ target, body });
      const name = String(body.executionArn ?? "").split(":").pop() ?? "";
      const reply = (status: number, payload: object) => {
        res.writeHead(status, { "content-type": "application/x-amz-json-1.0" });
        res.end(JSON.stringify(payload));
      };
      if (target !== "AWSStepFunctions.DescribeExecution") return reply(400, { __type: "UnknownOperationException" });
      if (name.endsWith("-0")) return reply(200, { executionArn: body.executionArn, status: "RUNNING", startDate: 1 });
      if (name.endsWith("-1")) return reply(200, { executionArn: body.executionArn, status: "FAILED", startDate: 1 });
      if (name.endsWith("-3")) return reply(200, { executionArn: body.executionArn, status: "TIMED_OUT", startDate: 1 });
      return reply(400, { __type: "com.amazonaws.swf.service.v2.model#ExecutionDoesNotExist", message: "Execution Does Not Exist" });
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

describe("stepFunctionsRunner.isRunning", () => {
  const source = "0f8fad5b-d9cb-469f-a165-70867728950e";

  it("describes the attempt's execution by its ARN and is true while it runs", async () => {
    expect(await stepFunctionsRunner.isRunning({ source_id: source, attempt: 0 })).toBe(true);
    expect(requests.at(-1)).toEqual({
      target: "AWSStepFunctions.DescribeExecution",
      body: { executionArn: `arn:aws:states:us-east-1:123456789012:execution:Extraction:${source}-0` },
    });
  });

  it("is false for an execution that ended, and for one that never started", async () => {
    expect(await stepFunctionsRunner.isRunning({ source_id: source, attempt: 1 })).toBe(false);
    expect(await stepFunctionsRunner.isRunning({ source_id: source, attempt: 2 })).toBe(false);
    expect(await stepFunctionsRunner.isRunning({ source_id: source, attempt: 3 })).toBe(false);
  });
});

describe("stepFunctionsRunner.timedOut", () => {
  const source = "0f8fad5b-d9cb-469f-a165-70867728950e";

  it("is true only for an execution that ended TIMED_OUT (not one running, failed or never started)", async () => {
    expect(await stepFunctionsRunner.timedOut!({ source_id: source, attempt: 3 })).toBe(true);
    expect(requests.at(-1)).toEqual({
      target: "AWSStepFunctions.DescribeExecution",
      body: { executionArn: `arn:aws:states:us-east-1:123456789012:execution:Extraction:${source}-3` },
    });
    for (const attempt of [0, 1, 2]) expect(await stepFunctionsRunner.timedOut!({ source_id: source, attempt })).toBe(false);
  });
});
