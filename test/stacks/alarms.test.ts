/**
 * The operational alarm helpers (stacks/Alarms.ts) on a bare CDK stack, without SST or bundling: the stage's topic
 * with an e-mail subscription only when ALARM_EMAIL is set, and the shape every alarm shares (> 0 for one 5-minute
 * datapoint, missing data not breaching, the topic as its action). test/stacks/app.test.ts checks that the synthesized
 * app alarms every dead-letter queue, state machine and scheduled function.
 */
import { App, Duration, Stack, aws_lambda as lambda, aws_sqs as sqs, aws_stepfunctions as sfn } from "aws-cdk-lib";
import { Template } from "aws-cdk-lib/assertions";
import { describe, expect, it } from "vitest";
import { ALARM_EMAIL_SETTING, alarmOnDeadLetters, alarmOnErrors, alarmOnExecutions, alarmTopic } from "../../stacks/Alarms";

const topicRef = (template: Template) => ({ Ref: Object.keys(template.findResources("AWS::SNS::Topic"))[0] });

const SHAPE = { Threshold: 0, ComparisonOperator: "GreaterThanThreshold", EvaluationPeriods: 1, DatapointsToAlarm: 1, Period: 300, TreatMissingData: "notBreaching" };

describe("alarm topic", () => {
  it("has no subscription when ALARM_EMAIL is unset or blank", () => {
    for (const env of [{}, { [ALARM_EMAIL_SETTING]: "  " }]) {
      const stack = new Stack(new App(), "S");
      alarmTopic(stack, env);
      const template = Template.fromStack(stack);
      template.resourceCountIs("AWS::SNS::Topic", 1);
      template.resourceCountIs("AWS::SNS::Subscription", 0);
    }
  });

  it("subscribes each ALARM_EMAIL address by e-mail, and refuses publishing without TLS", () => {
    const stack = new Stack(new App(), "S");
    alarmTopic(stack, { [ALARM_EMAIL_SETTING]: "oncall@example.test, ops@example.test" });
    const template = Template.fromStack(stack);
    template.resourceCountIs("AWS::SNS::Subscription", 2);
    for (const address of ["oncall@example.test", "ops@example.test"]) {
      template.hasResourceProperties("AWS::SNS::Subscription", { Protocol: "email", Endpoint: address, TopicArn: topicRef(template) });
    }
    const statements = Object.values(template.findResources("AWS::SNS::TopicPolicy")).flatMap((p) => p.Properties.PolicyDocument.Statement);
    expect(statements).toEqual(expect.arrayContaining([expect.objectContaining({ Effect: "Deny", Condition: { Bool: { "aws:SecureTransport": "false" } } })]));
    // That policy replaces SNS's default one: CloudWatch alarms (no role of their own) may publish only if it says so.
    expect(statements).toEqual(
      expect.arrayContaining([expect.objectContaining({ Effect: "Allow", Action: "sns:Publish", Principal: { Service: "cloudwatch.amazonaws.com" } })]),
    );
  });
});

describe("alarms", () => {
  const stack = new Stack(new App(), "S");
  const topic = alarmTopic(stack, {});
  const dlq = new sqs.Queue(stack, "SomeDlq");
  const fn = new lambda.Function(stack, "Sweeper", { runtime: lambda.Runtime.NODEJS_22_X, handler: "index.handler", code: lambda.Code.fromInline("exports.handler=()=>{}") });
  const machine = new sfn.StateMachine(stack, "Machine", { definitionBody: sfn.DefinitionBody.fromChainable(new sfn.Pass(stack, "P")), timeout: Duration.minutes(5) });
  alarmOnDeadLetters(dlq, topic);
  alarmOnErrors(fn, topic);
  alarmOnExecutions(machine, topic);
  const template = Template.fromStack(stack);

  it("alarms on a visible message in the dead-letter queue", () => {
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      ...SHAPE,
      Namespace: "AWS/SQS",
      MetricName: "ApproximateNumberOfMessagesVisible",
      Statistic: "Maximum",
      Dimensions: [{ Name: "QueueName", Value: { "Fn::GetAtt": [stack.getLogicalId(dlq.node.defaultChild as sqs.CfnQueue), "QueueName"] } }],
      AlarmActions: [topicRef(template)],
    });
  });

  it("alarms on a scheduled function's errors", () => {
    template.hasResourceProperties("AWS::CloudWatch::Alarm", {
      ...SHAPE,
      Namespace: "AWS/Lambda",
      MetricName: "Errors",
      Statistic: "Sum",
      Dimensions: [{ Name: "FunctionName", Value: { Ref: stack.getLogicalId(fn.node.defaultChild as lambda.CfnFunction) } }],
      AlarmActions: [topicRef(template)],
    });
  });

  it("alarms on failed and on timed-out executions of a state machine", () => {
    for (const metric of ["ExecutionsFailed", "ExecutionsTimedOut"]) {
      template.hasResourceProperties("AWS::CloudWatch::Alarm", {
        ...SHAPE,
        Namespace: "AWS/States",
        MetricName: metric,
        Statistic: "Sum",
        Dimensions: [{ Name: "StateMachineArn", Value: { Ref: stack.getLogicalId(machine.node.defaultChild as sfn.CfnStateMachine) } }],
        AlarmActions: [topicRef(template)],
      });
    }
    template.resourceCountIs("AWS::CloudWatch::Alarm", 4);
  });
});
