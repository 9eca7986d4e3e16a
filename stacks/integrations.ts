import type { aws_kms as kms } from "aws-cdk-lib";
import type { Config } from "sst/constructs";
import { settingsFrom } from "./defaults";
import type { SecretName } from "./Secrets";

/**
 * What the functions of the four integration kinds need from the stacks (DESIGN.md 6.4; issue #20), in one place for
 * the Api and PendingActions stacks: each provider's address settings and OAuth app secrets, and, per function, which
 * providers' tokens its code opens, which OAuth apps it holds, and whether it defers work to the integrations queue.
 * test/stacks/app.test.ts checks these tables against the bundles (the provider SDKs, oauth4webapi and the deferred
 * job types each bundle contains), so a function whose code starts calling a provider fails there first.
 */

/** The provider of each integration kind, named as its settings are (`<PROVIDER>_CLIENT_ID`, ...). */
export type Provider = "GITHUB" | "LINEAR" | "ATLASSIAN" | "GOOGLE";

/**
 * Each provider's address settings (DESIGN.md 6.4's table; core/config.ts), taken from the deploying environment when
 * set, else the public default applies in core/config.ts. A function that opens a provider's tokens gets all of them:
 * a refresh reads the OAuth addresses (issuer, token endpoint) as well as the API base.
 */
export const PROVIDER_ADDRESSES: Readonly<Record<Provider, readonly string[]>> = {
  GITHUB: ["GITHUB_API_URL", "GITHUB_WEB_URL"],
  LINEAR: ["LINEAR_API_URL", "LINEAR_WEB_URL"],
  ATLASSIAN: ["ATLASSIAN_API_URL", "ATLASSIAN_AUTH_URL"],
  GOOGLE: ["GOOGLE_API_URL", "GOOGLE_AUTH_URL", "GOOGLE_TOKEN_URL"],
};

/** A provider's OAuth app: the two secrets core/config.ts `oauthClient` reads. */
export const oauthAppSecrets = (provider: Provider): SecretName[] => [`${provider}_CLIENT_ID`, `${provider}_CLIENT_SECRET`];

/** What one function does with integrations. */
export interface IntegrationUse {
  /** Providers whose tokens its code opens (core/integration/oauth.ts `grantOf`): the token key and their addresses. */
  opens: readonly Provider[];
  /**
   * Providers whose OAuth app secrets it holds: connect and callback (the kind's own group), and a refresh wherever the
   * provider's tokens expire (Linear, Atlassian, Google). GitHub OAuth app tokens do not expire, so only the codehost
   * group and the integrations consumer (which also syncs the code host) hold GitHub's.
   */
  oauthApps: readonly Provider[];
  /** It sends rate-limited work to the integrations queue (core/integration/jobs.ts `deferJob`). */
  defers: boolean;
}

/**
 * The endpoint groups that use integrations (a group not listed uses none). The kind's own group connects, calls back
 * and calls its provider; `tickets` pushes to and syncs from GitHub, Linear and Jira; `stream` runs the copilot's
 * read tools of the code host, the planner and the file store (core/agent/tools).
 */
export const GROUP_INTEGRATIONS: Readonly<Record<string, IntegrationUse>> = {
  codehost: { opens: ["GITHUB"], oauthApps: ["GITHUB"], defers: true },
  planner: { opens: ["LINEAR"], oauthApps: ["LINEAR"], defers: true },
  tickettool: { opens: ["ATLASSIAN"], oauthApps: ["ATLASSIAN"], defers: false },
  filestore: { opens: ["GOOGLE"], oauthApps: ["GOOGLE"], defers: false },
  tickets: { opens: ["GITHUB", "LINEAR", "ATLASSIAN"], oauthApps: ["LINEAR", "ATLASSIAN"], defers: true },
  stream: { opens: ["GITHUB", "LINEAR", "GOOGLE"], oauthApps: ["LINEAR", "GOOGLE"], defers: false },
};

/**
 * The integrations consumer (functions/events/integrations-consumer.ts): the deferred code-host and planner syncs and
 * the execution tickets' push and sync (GitHub, Linear, Jira); it re-defers what a provider limits again.
 */
export const INTEGRATIONS_CONSUMER_USE: IntegrationUse = { opens: ["GITHUB", "LINEAR", "ATLASSIAN"], oauthApps: ["GITHUB", "LINEAR", "ATLASSIAN"], defers: true };

/**
 * The pending-action executors (stacks/PendingActions.ts): the copilot's gated writes (a GitHub issue, Linear issues
 * and comments, a Drive file) run there once approved. They defer nothing to the integrations queue: a rate-limited
 * action is retried by the executor itself.
 */
export const EXECUTOR_INTEGRATIONS: IntegrationUse = { opens: ["GITHUB", "LINEAR", "GOOGLE"], oauthApps: ["LINEAR", "GOOGLE"], defers: false };

/** The secrets a function of this use is bound to, in a stable order. */
export const integrationSecrets = (use: IntegrationUse | undefined): SecretName[] => (use ? use.oauthApps.flatMap(oauthAppSecrets) : []);

/**
 * The environment a function of this use gets beside the runtime's: the token key's ARN (TOKEN_KMS_KEY_ID) and the
 * address settings of every provider it opens, as the deploy sets them; the queue's URL when it defers work.
 */
export function integrationEnvironment(use: IntegrationUse, tokenKey: kms.IKey, queueUrl?: string, env: NodeJS.ProcessEnv = process.env): Record<string, string> {
  if (use.defers && !queueUrl) throw new Error("A function that defers integration work needs the integrations queue's URL");
  return {
    TOKEN_KMS_KEY_ID: tokenKey.keyArn,
    ...settingsFrom(use.opens.flatMap((p) => PROVIDER_ADDRESSES[p]), env),
    ...(use.defers && queueUrl ? { INTEGRATIONS_QUEUE_URL: queueUrl } : {}),
  };
}

/** The bound secrets of a use, as constructs. */
export const boundSecrets = (use: IntegrationUse | undefined, secrets: Record<SecretName, Config.Secret>): Config.Secret[] =>
  integrationSecrets(use).map((name) => secrets[name]);
