import {
  Duration,
  aws_cloudwatch as cloudwatch,
  aws_cloudwatch_actions as actions,
  aws_iam as iam,
  aws_sns as sns,
  aws_sns_subscriptions as subscriptions,
  Stack,
  type aws_lambda as lambda,
  type aws_sqs as sqs,
  type aws_stepfunctions as sfn,
} from "aws-cdk-lib";
import type { Construct } from "constructs";

/**
 * Operational alarms: one SNS topic per stage (created by the Secrets stack, which every other stack uses) and the
 * CloudWatch alarms that publish to it. Each alarm fires on the first bad 5-minute datapoint (> 0) and treats missing
 * data as fine (a quiet queue or an idle function publishes no datapoint):
 * - every dead-letter queue: ApproximateNumberOfMessagesVisible (a message gave up on its consumer);
 * - every state machine: ExecutionsFailed and ExecutionsTimedOut;
 * - every scheduled (cron) Lambda: Errors.
 */

/** Deploy-time setting: e-mail address(es), comma-separated, subscribed to the alarm topic; none when unset. */
export const ALARM_EMAIL_SETTING = "ALARM_EMAIL";

/** The period of every alarm's one datapoint. */
export const ALARM_PERIOD = Duration.minutes(5);

/**
 * The stage's operational alarm topic, TLS only, with an e-mail subscription per address in ALARM_EMAIL (each address
 * confirms it from the mail SNS sends). Not encrypted at rest: it carries alarm state changes, no user data, and
 * CloudWatch cannot publish to a topic under the AWS-managed SNS key (that would take a customer-managed key per stage).
 */
export function alarmTopic(scope: Construct, env: NodeJS.ProcessEnv = process.env): sns.Topic {
  const topic = new sns.Topic(scope, "OperationalAlarms", { displayName: `${Stack.of(scope).stackName} alarms`, enforceSSL: true });
  // enforceSSL writes a topic policy, which replaces SNS's default one; CloudWatch alarms publish with no role of their
  // own, so without this statement every alarm's notification is refused ("no resource-based policy allows").
  topic.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: "CloudWatchAlarmsPublish",
      principals: [new iam.ServicePrincipal("cloudwatch.amazonaws.com")],
      actions: ["sns:Publish"],
      resources: [topic.topicArn],
      conditions: { StringEquals: { "aws:SourceAccount": Stack.of(topic).account } },
    }),
  );
  const addresses = (env[ALARM_EMAIL_SETTING] ?? "").split(",").map((a) => a.trim()).filter(Boolean);
  for (const address of addresses) topic.addSubscription(new subscriptions.EmailSubscription(address));
  return topic;
}

/** An alarm on `metric` > 0 for one 5-minute datapoint, missing data not breaching, publishing to `topic`. */
function alarmAbove0(scope: Construct, id: string, metric: cloudwatch.IMetric, description: string, topic: sns.ITopic): cloudwatch.Alarm {
  const alarm = new cloudwatch.Alarm(scope, id, {
    metric,
    threshold: 0,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
    evaluationPeriods: 1,
    datapointsToAlarm: 1,
    treatMissingData: cloudwatch.TreatMissingData.NOT_BREACHING,
    alarmDescription: description,
  });
  alarm.addAlarmAction(new actions.SnsAction(topic));
  return alarm;
}

/** Alarm when any message is visible in the dead-letter queue (it exhausted its consumer's receives). */
export function alarmOnDeadLetters(queue: sqs.IQueue, topic: sns.ITopic): cloudwatch.Alarm {
  const scope = Stack.of(queue);
  return alarmAbove0(
    scope,
    `${queue.node.id}Messages`,
    queue.metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, statistic: cloudwatch.Stats.MAXIMUM }),
    `Messages in dead-letter queue ${queue.node.id}: their processing failed every retry; inspect and redrive or delete them.`,
    topic,
  );
}

/** Alarm when an execution of the state machine fails, and when one times out. */
export function alarmOnExecutions(machine: sfn.IStateMachine, topic: sns.ITopic): cloudwatch.Alarm[] {
  const scope = Stack.of(machine);
  const id = machine.node.id;
  return [
    alarmAbove0(scope, `${id}ExecutionsFailed`, machine.metricFailed({ period: ALARM_PERIOD, statistic: cloudwatch.Stats.SUM }), `Executions of state machine ${id} failed.`, topic),
    alarmAbove0(scope, `${id}ExecutionsTimedOut`, machine.metricTimedOut({ period: ALARM_PERIOD, statistic: cloudwatch.Stats.SUM }), `Executions of state machine ${id} timed out.`, topic),
  ];
}

/** Alarm when a run of the scheduled Lambda ends in an error. */
export function alarmOnErrors(fn: lambda.IFunction, topic: sns.ITopic): cloudwatch.Alarm {
  const id = fn.node.id;
  return alarmAbove0(Stack.of(fn), `${id}Errors`, fn.metricErrors({ period: ALARM_PERIOD, statistic: cloudwatch.Stats.SUM }), `Scheduled function ${id} failed a run.`, topic);
}
