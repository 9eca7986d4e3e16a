import type { Entity } from "electrodb";
import { Config } from "../config";
import { dynamoClient } from "./client";
import { skipModelCheckAtConstruction } from "./model-check";
import { buildAccessCodeEntity, buildReferralCodeEntity, buildUserEntity } from "../user/user.entity";
import { buildMembershipEntity, buildWorkspaceEntity, buildWorkspaceSettingsEntity } from "../workspace/workspace.entity";
import { buildUsageEntity } from "../billing/usage.entity";
import { buildBillingAccountEntity, buildCreditBoostEntity, buildCreditHoldEntity } from "../billing/account.entity";
import { buildCreditLedgerEntity } from "../billing/ledger.entity";
import { buildPaymentEventEntity } from "../billing/payment-event.entity";
import { buildResearchSourceEntity } from "../research/research-source.entity";
import { buildInsightEntity } from "../insight/insight.entity";
import { buildRecommendationEntity } from "../recommendation/recommendation.entity";
import { buildAgentRunEntity, buildGuardEntity } from "../agent/agent-run.entity";
import { buildConversationEntity, buildMessageEntity, buildMessageFeedbackEntity } from "../chat/conversation.entity";
import { buildPendingActionEntity } from "../pending-action/pending-action.entity";
import { buildGrowthCounterEntity, buildWaitlistEntryEntity, buildWaitlistReferralEntity } from "../growth/growth.entity";
import { buildIntegrationEntity, buildIssueLinkEntity, buildOAuthStateEntity } from "../integration/integration.entity";
import { buildExecutionTicketEntity } from "../ticket/ticket.entity";
import { buildEntropyIssueEntity, buildEntropyScanEntity } from "../entropy/entropy.entity";
import { buildMemoryFactEntity, buildMemoryHeadEntity } from "../memory/fact.entity";
import { buildMemoryOwedEntity } from "../memory/owed.entity";
import { buildTaskEntity, buildTaskWatcherEntity } from "../task/task.entity";
import { buildCycleEntity } from "../cycle/cycle.entity";
import { buildCustomSkillEntity, buildSkillCounterEntity, buildSkillFeedbackEntity, buildSkillInstallEntity, buildSkillSlugEntity, buildSkillSuggestionEntity } from "../skill/skill.entity";
import {
  buildAnnotationEntity,
  buildBlockEntity,
  buildDocumentEntity,
  buildDocumentIndexMarkEntity,
  buildRevisionEntity,
} from "../document/document.entity";
import { buildDocumentDeletionEntity } from "../document/deletion.entity";
import { buildWorkspaceDeletionEntity } from "../workspace/deletion.entity";

/**
 * Every ElectroDB entity of the service, in one catalogue (DESIGN.md section 3; docs/decisions.md "Entities
 * are built on first use"). Each is constructed the first time it is used, not at import: a Lambda touches only a
 * few of them. ElectroDB's check of each model against its JSON schema runs in the tests (./model-check.ts).
 */
const catalogue = {
  user: buildUserEntity,
  referralCode: buildReferralCodeEntity,
  accessCode: buildAccessCodeEntity,
  workspace: buildWorkspaceEntity,
  membership: buildMembershipEntity,
  workspaceSettings: buildWorkspaceSettingsEntity,
  workspaceDeletion: buildWorkspaceDeletionEntity,
  usage: buildUsageEntity,
  billingAccount: buildBillingAccountEntity,
  creditBoost: buildCreditBoostEntity,
  creditHold: buildCreditHoldEntity,
  creditLedger: buildCreditLedgerEntity,
  paymentEvent: buildPaymentEventEntity,
  researchSource: buildResearchSourceEntity,
  insight: buildInsightEntity,
  recommendation: buildRecommendationEntity,
  document: buildDocumentEntity,
  documentIndexMark: buildDocumentIndexMarkEntity,
  revision: buildRevisionEntity,
  block: buildBlockEntity,
  annotation: buildAnnotationEntity,
  documentDeletion: buildDocumentDeletionEntity,
  agentRun: buildAgentRunEntity,
  guard: buildGuardEntity,
  conversation: buildConversationEntity,
  message: buildMessageEntity,
  messageFeedback: buildMessageFeedbackEntity,
  pendingAction: buildPendingActionEntity,
  waitlistEntry: buildWaitlistEntryEntity, waitlistReferral: buildWaitlistReferralEntity, growthCounter: buildGrowthCounterEntity,
  integration: buildIntegrationEntity, oauthState: buildOAuthStateEntity, issueLink: buildIssueLinkEntity,
  executionTicket: buildExecutionTicketEntity,
  entropyScan: buildEntropyScanEntity, entropyIssue: buildEntropyIssueEntity,
  memoryFact: buildMemoryFactEntity, memoryHead: buildMemoryHeadEntity, memoryOwed: buildMemoryOwedEntity,
  task: buildTaskEntity, taskWatcher: buildTaskWatcherEntity, researchCycle: buildCycleEntity,
  customSkill: buildCustomSkillEntity, skillSlug: buildSkillSlugEntity, skillInstall: buildSkillInstallEntity, skillFeedback: buildSkillFeedbackEntity, skillSuggestion: buildSkillSuggestionEntity, skillCounter: buildSkillCounterEntity,
};

export type EntityName = keyof typeof catalogue;
/** The entity builders by name (test/unit/db/model-check.test.ts checks every model). */
export const entityBuilders: { readonly [K in EntityName]: (typeof catalogue)[K] } = catalogue;
/** The entities by name, each typed from its model. */
export type Entities = { [K in EntityName]: ReturnType<(typeof catalogue)[K]> };

// The models are checked by the test suite, once, instead of by each entity's constructor (./model-check.ts).
skipModelCheckAtConstruction();

let built: Partial<Record<EntityName, Entity<any, any, any, any>>> = {};
let configuredFor: string | undefined;

const entities = {} as Entities;
for (const name of Object.keys(catalogue) as EntityName[]) {
  Object.defineProperty(entities, name, {
    enumerable: true,
    get: () => (built[name] ??= bind(catalogue[name]())),
  });
}

function bind<E extends Entity<any, any, any, any>>(entity: E): E {
  entity.setTableName(configuredFor!);
  entity.setClient(dynamoClient());
  return entity;
}

/**
 * The entities bound to the configured table and client: `db().entities.user.get(...)`, and
 * `db().pick("user", "referralCode")` for ElectroDB's `createWriteTransaction`, which needs the entities of the
 * transaction (and reads only those). When the configured table changes (tests, benchmarks), entities are rebuilt.
 */
export function db() {
  const table = Config.tableName();
  if (configuredFor !== table) {
    configuredFor = table;
    built = {};
  }
  return handle;
}

const handle = {
  entities,
  /** The named entities only, e.g. for `createWriteTransaction(db().pick("user", "referralCode"), fn)`. */
  pick<K extends EntityName>(...names: K[]): Pick<Entities, K> {
    return Object.fromEntries(names.map((n) => [n, entities[n]])) as Pick<Entities, K>;
  },
};
