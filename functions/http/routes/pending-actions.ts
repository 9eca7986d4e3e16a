import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  ApproveInput,
  BatchApproveInput,
  BatchApproveResult,
  BatchIdParam,
  ListPendingActionsQuery,
  PendingAction,
  PendingActionIdParam,
  PendingActionList,
  RejectInput,
} from "../../../core/pending-action/schema";

/**
 * Pending actions (spec 01 Pending actions): the agent's gated writes waiting for a member. Bodies are camelCase,
 * snake_case accepted. The id routes answer 404 for a row of a workspace the caller is not in (its existence is not
 * revealed), so they carry no workspaceScope (which promises a 403).
 */
export const pendingActionsRoutes = defineRoutes({
  "pending-actions.list": {
    method: "GET", path: "/api/pending-actions", group: "pending-actions", access: "user", workspaceScope: "query",
    summary: "Pending actions of a workspace, newest first, optionally of one status",
    query: ListPendingActionsQuery,
    responses: { 200: PendingActionList },
  },
  "pending-actions.get": {
    method: "GET", path: "/api/pending-actions/{pa_id}", group: "pending-actions", access: "user",
    summary: "One pending action",
    params: PendingActionIdParam,
    responses: { 200: PendingAction },
  },
  "pending-actions.approve": {
    method: "POST", path: "/api/pending-actions/{pa_id}/approve", group: "pending-actions", access: "user",
    summary: "Approve a pending action (optional userEdits shallow-merged into toolInput); executes asynchronously",
    params: PendingActionIdParam,
    body: ApproveInput,
    errors: ["INVALID_STATE"],
    responses: { 200: PendingAction },
  },
  "pending-actions.reject": {
    method: "POST", path: "/api/pending-actions/{pa_id}/reject", group: "pending-actions", access: "user",
    summary: "Reject a pending action; its tool never runs",
    params: PendingActionIdParam,
    body: RejectInput,
    errors: ["INVALID_STATE"],
    responses: { 200: PendingAction },
  },
  "pending-actions.batchApprove": {
    method: "POST", path: "/api/pending-actions/batch/{batch_id}/approve", group: "pending-actions", access: "user",
    summary: "Approve (or, with exclude, reject) the listed rows of a batch {mission_id}:{tool_name}",
    params: BatchIdParam,
    body: BatchApproveInput,
    errors: ["INVALID_STATE", "SERVICE_UNAVAILABLE", "INVARIANT_VIOLATION"],
    responses: { 200: BatchApproveResult },
  },
} satisfies Record<string, RouteSpec>);
