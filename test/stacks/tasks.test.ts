/**
 * The Tasks stack (issue #23 points 1 to 3; DESIGN.md 6.5), synthesized offline as `sst deploy` would, with the stacks
 * it uses (Secrets, Storage) and cdk-nag's AwsSolutions pack: the Standard state machine deployed from the one ASL
 * definition the local runner also runs (functions/steps/task.asl.ts), its two step functions, the sweeper's
 * EventBridge rule every minute and the overnight research cycles' EventBridge Scheduler schedule at 02:00 UTC.
 */
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Aspects, Stack } from "aws-cdk-lib";
import { Annotations, Match, Template } from "aws-cdk-lib/assertions";
import { AwsSolutionsChecks } from "cdk-nag";
import { App, getStack } from "sst/constructs";
import { initProject, setProject, useProject } from "sst/project.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FUNCTION_DEFAULTS, nagStackDefaults } from "../../stacks/defaults";
import { Secrets } from "../../stacks/Secrets";
import { Storage } from "../../stacks/Storage";
import {
  CYCLES_SCHEDULE_EXPRESSION,
  ENTROPY_SCAN_SCHEDULE_EXPRESSION,
  ENTROPY_SCANNER_HANDLER,
  ENTROPY_SCANNER_TIMEOUT_SECONDS,
  TASK_CYCLES_HANDLER,
  TASK_STEP_TIMEOUT_SECONDS,
  TASK_SWEEPER_HANDLER,
  TASK_SWEEPER_SCHEDULE,
  Tasks,
  taskStepHandler,
  taskSubstitutionKey,
} from "../../stacks/Tasks";
import { TASK_STEPS, taskDefinition, type TaskStepName } from "../../functions/steps/task.asl";
import { TASK_TIMEOUT_SECONDS } from "../../core/task/schema";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BUILD_TIMEOUT = 600_000;
const SETTINGS = { JWT_ISSUER: "https://idp.example.test/", JWT_AUDIENCE: "r2d-api", MAIL_FROM: "Research to Delivery <no-reply@mail.example.test>", APP_URL: "https://app.example.test" };

type Resource = { Type: string; Properties: Record<string, any> };
let template: Template;
let work: string;
let saved: Record<string, string | undefined>;

const resourcesOf = (type: string): Record<string, Resource> => template.findResources(type) as Record<string, Resource>;
const lambdas = () => resourcesOf("AWS::Lambda::Function");
const getAttArn = (id: string) => ({ "Fn::GetAtt": [id, "Arn"] });
function lambdaIdFor(handler: string): string {
  const ids = Object.entries(lambdas()).filter(([, r]) => r.Properties.Handler === handler).map(([id]) => id);
  expect(ids, handler).toHaveLength(1);
  return ids[0]!;
}
function statementsOf(fnId: string): { Action: string | string[]; Resource: unknown }[] {
  const role = lambdas()[fnId]!.Properties.Role["Fn::GetAtt"][0];
  return Object.values(resourcesOf("AWS::IAM::Policy"))
    .map((r) => r.Properties)
    .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === role))
    .flatMap((p) => p.PolicyDocument.Statement);
}
const actionsOf = (fnId: string) => statementsOf(fnId).flatMap((s) => [s.Action].flat());
const machine = () => Object.values(resourcesOf("AWS::StepFunctions::StateMachine"))[0]!.Properties;

describe("handler modules referenced by the Tasks stack", () => {
  it.each([...(Object.keys(TASK_STEPS) as TaskStepName[]).map(taskStepHandler), TASK_SWEEPER_HANDLER, TASK_CYCLES_HANDLER, ENTROPY_SCANNER_HANDLER])("%s exists", (handler) => {
    expect(existsSync(join(ROOT, `${handler.slice(0, handler.lastIndexOf("."))}.ts`))).toBe(true);
  });
});

describe("Tasks stack", () => {
  beforeAll(async () => {
    saved = Object.fromEntries(Object.keys(SETTINGS).map((k) => [k, process.env[k]]));
    Object.assign(process.env, SETTINGS);
    process.env.SST_BUILD_CONCURRENCY ??= "4";
    process.env.NODE_ENV = "test";
    work = await mkdtemp(join(tmpdir(), "r2d-tasks-stack-"));
    await initProject({ stage: "test", root: ROOT });
    const project = useProject();
    setProject({ ...project, paths: { ...project.paths, artifacts: join(work, "artifacts") } });
    const app = new App({ mode: "deploy", name: project.config.name, stage: project.config.stage, region: project.config.region, account: "123456789012" }, { outdir: join(work, "cdk.out") });
    app.setDefaultFunctionProps(FUNCTION_DEFAULTS);
    app.setDefaultRemovalPolicy("destroy");
    await app.stack(Secrets).stack(Storage).stack(Tasks);
    for (const child of app.node.children) if (child instanceof Stack) nagStackDefaults(child);
    Aspects.of(app).add(new AwsSolutionsChecks({ reports: false, logIgnores: true, verbose: true }));
    await app.finish();
    const assembly = app.synth();
    app.synth = () => assembly;
    template = Template.fromStack(getStack(Tasks));
  }, BUILD_TIMEOUT);

  afterAll(async () => {
    for (const [k, v] of Object.entries(saved ?? {})) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    if (work) await rm(work, { recursive: true, force: true, maxRetries: 10, retryDelay: 500 });
  });

  it("deploys the one ASL definition as a Standard state machine, each step's ARN its own Lambda", () => {
    const sm = machine();
    expect(sm.StateMachineType).toBe("STANDARD");
    expect(JSON.parse(sm.DefinitionString)).toEqual(JSON.parse(JSON.stringify(taskDefinition)));
    for (const step of Object.keys(TASK_STEPS) as TaskStepName[]) {
      const fnId = lambdaIdFor(taskStepHandler(step));
      expect(sm.DefinitionSubstitutions[taskSubstitutionKey(step)]).toEqual(getAttArn(fnId));
      expect(lambdas()[fnId]!.Properties.Timeout).toBe(TASK_STEP_TIMEOUT_SECONDS[step]);
    }
    expect(Object.keys(sm.DefinitionSubstitutions).sort()).toEqual(["TaskFailArn", "TaskRunArn"]);
  });

  it("times the Run state out at the task type's timeout, and catches that and any error into Fail, then fails the execution", () => {
    const run = taskDefinition.States.Run;
    expect(run).toMatchObject({ Type: "Task", TimeoutSecondsPath: "$.timeout_seconds", Catch: [{ ErrorEquals: ["States.ALL"], ResultPath: "$.error", Next: "Fail" }], Next: "Done" });
    expect(taskDefinition.States.Fail.Next).toBe("Failed");
    expect(taskDefinition.States.Failed.Type).toBe("Fail");
    // The worker outlives every task type's timeout, so Step Functions' timeout (and Fail) comes first.
    expect(Math.max(...Object.values(TASK_TIMEOUT_SECONDS))).toBeLessThan(TASK_STEP_TIMEOUT_SECONDS.Run);
    expect(taskDefinition.TimeoutSeconds).toBeGreaterThan(Math.max(...Object.values(TASK_TIMEOUT_SECONDS)));
  });

  it("retries the Run state on Lambda's transient faults (AWS's recommended set and Lambda.Unknown) with backoff, never on the worker's own errors", () => {
    const retry = JSON.parse(machine().DefinitionString).States.Run.Retry as { ErrorEquals: string[]; IntervalSeconds: number; MaxAttempts: number; BackoffRate: number }[];
    const errors = retry.flatMap((r) => r.ErrorEquals);
    expect(errors.sort()).toEqual(["Lambda.AWSLambdaException", "Lambda.SdkClientException", "Lambda.ServiceException", "Lambda.TooManyRequestsException", "Lambda.Unknown"]);
    for (const r of retry) expect(r).toMatchObject({ IntervalSeconds: expect.any(Number), MaxAttempts: expect.any(Number), BackoffRate: 2 });
  });

  it("logs every execution event without execution data, traces, and invokes only its two functions", () => {
    const sm = machine();
    expect(sm.LoggingConfiguration).toMatchObject({ Level: "ALL", IncludeExecutionData: false });
    expect(sm.TracingConfiguration).toEqual({ Enabled: true });
    const smRole = sm.RoleArn["Fn::GetAtt"][0];
    const invokes = Object.values(resourcesOf("AWS::IAM::Policy"))
      .map((r) => r.Properties)
      .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === smRole))
      .flatMap((p) => p.PolicyDocument.Statement)
      .filter((s: { Action: string | string[] }) => [s.Action].flat().includes("lambda:InvokeFunction"));
    expect(invokes).toEqual([{ Effect: "Allow", Action: "lambda:InvokeFunction", Resource: expect.arrayContaining([getAttArn(lambdaIdFor(taskStepHandler("Run"))), getAttArn(lambdaIdFor(taskStepHandler("Fail")))]) }]);
    expect(invokes[0].Resource).toHaveLength(2);
  });

  it("gives the worker what its work calls: the table, the bucket, Bedrock, the token key, SES from MAIL_FROM only; Fail the table only", () => {
    const run = lambdaIdFor(taskStepHandler("Run"));
    expect(actionsOf(run)).toEqual(expect.arrayContaining(["dynamodb:UpdateItem", "dynamodb:Query", "s3:GetObject", "s3:PutObject", "s3:DeleteObject", "bedrock:InvokeModel", "kms:Decrypt", "ses:SendEmail"]));
    const env = lambdas()[run]!.Properties.Environment.Variables;
    expect(env).toMatchObject({ MAIL_ENGINE: "ses", MAIL_FROM: SETTINGS.MAIL_FROM, APP_URL: SETTINGS.APP_URL, AI_ENGINE: "bedrock" });
    expect(Object.keys(env)).toEqual(expect.arrayContaining(["TOKEN_KMS_KEY_ID", "SST_Secret_value_GOOGLE_CLIENT_ID", "SST_Secret_value_GOOGLE_CLIENT_SECRET"]));
    const ses = statementsOf(run).filter((s) => [s.Action].flat().includes("ses:SendEmail"));
    expect(JSON.stringify(ses)).toContain("identity/no-reply@mail.example.test");
    const fail = lambdaIdFor(taskStepHandler("Fail"));
    expect(actionsOf(fail).filter((a) => !a.startsWith("dynamodb:") && !a.startsWith("xray:"))).toEqual([]);
  });

  it("runs the sweeper every minute from an EventBridge rule, allowed to start and describe this machine's executions", () => {
    expect(TASK_SWEEPER_SCHEDULE).toBe("rate(1 minute)");
    const sweeper = lambdaIdFor(TASK_SWEEPER_HANDLER);
    const rules = Object.values(resourcesOf("AWS::Events::Rule")).map((r) => r.Properties);
    expect(rules).toEqual([expect.objectContaining({ ScheduleExpression: "rate(1 minute)", Targets: [expect.objectContaining({ Arn: getAttArn(sweeper) })] })]);
    template.hasResourceProperties("AWS::Lambda::Permission", { Action: "lambda:InvokeFunction", Principal: "events.amazonaws.com", FunctionName: getAttArn(sweeper) });
    expect(actionsOf(sweeper)).toEqual(expect.arrayContaining(["states:StartExecution", "states:DescribeExecution"]));
    expect(actionsOf(sweeper)).not.toContain("states:StopExecution");
    const smId = Object.keys(resourcesOf("AWS::StepFunctions::StateMachine"))[0];
    expect(lambdas()[sweeper]!.Properties.Environment.Variables.TASK_STATE_MACHINE_ARN).toEqual({ Ref: smId });
  });

  it("starts the overnight research cycles at 02:00 UTC from EventBridge Scheduler, whose role may invoke that function only", () => {
    expect(CYCLES_SCHEDULE_EXPRESSION).toBe("cron(0 2 * * ? *)");
    const cycles = lambdaIdFor(TASK_CYCLES_HANDLER);
    const schedules = Object.values(resourcesOf("AWS::Scheduler::Schedule")).map((r) => r.Properties).filter((p) => JSON.stringify(p.Target.Arn) === JSON.stringify(getAttArn(cycles)));
    expect(schedules).toHaveLength(1);
    expect(schedules[0]).toMatchObject({ ScheduleExpression: "cron(0 2 * * ? *)", ScheduleExpressionTimezone: "Etc/UTC", State: "ENABLED", FlexibleTimeWindow: { Mode: "OFF" }, Target: { Arn: getAttArn(cycles) } });
    const roleId = schedules[0].Target.RoleArn["Fn::GetAtt"][0];
    expect(resourcesOf("AWS::IAM::Role")[roleId]!.Properties.AssumeRolePolicyDocument.Statement).toEqual([
      expect.objectContaining({ Principal: { Service: "scheduler.amazonaws.com" }, Action: "sts:AssumeRole" }),
    ]);
    const statements = Object.values(resourcesOf("AWS::IAM::Policy"))
      .map((r) => r.Properties)
      .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === roleId))
      .flatMap((p) => p.PolicyDocument.Statement);
    expect(statements.flatMap((s: { Action: string | string[] }) => [s.Action].flat())).toEqual(["lambda:InvokeFunction"]);
    expect(statements.map((s: { Resource: unknown }) => s.Resource)).toEqual([getAttArn(cycles)]);
    expect(actionsOf(cycles)).toEqual(expect.arrayContaining(["states:StartExecution", "dynamodb:Query"]));
  });

  it("scans the workspaces due an entropy scan daily from EventBridge Scheduler, with the table and Bedrock embeddings only", () => {
    expect(ENTROPY_SCAN_SCHEDULE_EXPRESSION).toBe("cron(0 4 * * ? *)");
    const scanner = lambdaIdFor(ENTROPY_SCANNER_HANDLER);
    const schedules = Object.values(resourcesOf("AWS::Scheduler::Schedule")).map((r) => r.Properties);
    expect(schedules).toHaveLength(2);
    const mine = schedules.filter((p) => JSON.stringify(p.Target.Arn) === JSON.stringify(getAttArn(scanner)));
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ ScheduleExpression: ENTROPY_SCAN_SCHEDULE_EXPRESSION, ScheduleExpressionTimezone: "Etc/UTC", State: "ENABLED", FlexibleTimeWindow: { Mode: "OFF" } });
    // Its own role, which may invoke the scanner only.
    const roleId = mine[0].Target.RoleArn["Fn::GetAtt"][0];
    const statements = Object.values(resourcesOf("AWS::IAM::Policy"))
      .map((r) => r.Properties)
      .filter((p) => p.Roles.some((r: { Ref: string }) => r.Ref === roleId))
      .flatMap((p) => p.PolicyDocument.Statement);
    expect(statements.map((s: { Action: unknown; Resource: unknown }) => [s.Action, s.Resource])).toEqual([["lambda:InvokeFunction", getAttArn(scanner)]]);
    const fn = lambdas()[scanner]!.Properties;
    expect(fn.Timeout).toBe(ENTROPY_SCANNER_TIMEOUT_SECONDS);
    expect(fn.Environment.Variables).toMatchObject({ AI_ENGINE: "bedrock", TABLE_NAME: { "Fn::ImportValue": expect.any(String) } });
    const actions = actionsOf(scanner);
    expect(actions).toEqual(expect.arrayContaining(["dynamodb:Query", "dynamodb:PutItem", "bedrock:InvokeModel"]));
    expect(actions.filter((a) => !a.startsWith("dynamodb:") && !a.startsWith("xray:") && !a.startsWith("bedrock:"))).toEqual([]);
  });

  it("gives the worker no memory queue: it runs the agent loop without the copilot's run hooks", () => {
    const run = lambdaIdFor(taskStepHandler("Run"));
    expect(lambdas()[run]!.Properties.Environment.Variables.MEMORY_QUEUE_URL).toBeUndefined();
    expect(actionsOf(run).filter((a) => a.startsWith("sqs:"))).toEqual([]);
  });

  it("leaves no cdk-nag AwsSolutions error or warning unsuppressed", () => {
    const annotations = Annotations.fromStack(getStack(Tasks));
    const NAG = Match.stringLikeRegexp("AwsSolutions-.*");
    const open = [...annotations.findError("*", NAG), ...annotations.findWarning("*", NAG)].map((m) => `${m.id}: ${String(m.entry.data).split("\n")[0]}`);
    expect(open).toEqual([]);
  });

  it("outputs the state machine's ARN (the Api stack hands it to the tasks group)", () => {
    expect(Object.keys(template.findOutputs("TaskStateMachineArn"))).toEqual(["TaskStateMachineArn"]);
  });
});
