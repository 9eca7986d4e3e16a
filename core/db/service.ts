import { Service } from "electrodb";
import { Config } from "../config";
import { dynamoClient } from "./client";
import { AccessCodeEntity, ReferralCodeEntity, UserEntity } from "../user/user.entity";
import {
  MembershipEntity,
  SubscriptionEntity,
  WorkspaceEntity,
  WorkspaceSettingsEntity,
} from "../workspace/workspace.entity";
import { UsageEntity } from "../billing/usage.entity";
import { ResearchSourceEntity } from "../research/research-source.entity";
import { InsightEntity } from "../insight/insight.entity";
import { RecommendationEntity } from "../recommendation/recommendation.entity";
import { AgentRunEntity, GuardEntity } from "../agent/agent-run.entity";
import { AnnotationEntity, BlockEntity, DocumentEntity, RevisionEntity } from "../document/document.entity";

/** Every ElectroDB entity of the service, registered once (DESIGN.md section 3). */
const service = new Service({
  user: UserEntity,
  referralCode: ReferralCodeEntity,
  accessCode: AccessCodeEntity,
  workspace: WorkspaceEntity,
  membership: MembershipEntity,
  workspaceSettings: WorkspaceSettingsEntity,
  subscription: SubscriptionEntity,
  usage: UsageEntity,
  researchSource: ResearchSourceEntity,
  insight: InsightEntity,
  recommendation: RecommendationEntity,
  document: DocumentEntity,
  revision: RevisionEntity,
  block: BlockEntity,
  annotation: AnnotationEntity,
  agentRun: AgentRunEntity,
  guard: GuardEntity,
});

let configuredFor: string | undefined;

/** The service bound to the configured table and client. */
export function db() {
  const table = Config.tableName();
  if (configuredFor !== table) {
    service.setTableName(table);
    service.setClient(dynamoClient());
    configuredFor = table;
  }
  return service;
}
