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

/** Every ElectroDB entity of the service, registered once (DESIGN.md section 3). */
const service = new Service({
  user: UserEntity,
  referralCode: ReferralCodeEntity,
  accessCode: AccessCodeEntity,
  workspace: WorkspaceEntity,
  membership: MembershipEntity,
  workspaceSettings: WorkspaceSettingsEntity,
  subscription: SubscriptionEntity,
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
