import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  DocumentTicketsParams,
  ExecutionTicket,
  GenerateTicketsInput,
  GenerateTicketsResult,
  ListTicketsQuery,
  PushTicketsInput,
  PushTicketsResult,
  ReviewTicketInput,
  SyncTicketsInput,
  SyncTicketsResult,
  TicketList,
  TicketParams,
} from "../../../core/ticket/schema";

/**
 * Execution tickets (spec 02 "Execution tickets (/api/execution)"; DESIGN.md 6.4). No route-level plan gate: the spec
 * gates only the integration prefixes, and push serves three platforms with two different flags, so push and sync
 * check the platform's flag in core (has_codehost, has_integrations) and answer the same 403 FORBIDDEN naming the feature.
 */
export const ticketsRoutes = defineRoutes({
  "tickets.generate": {
    method: "POST", path: "/api/execution/generate", group: "tickets", access: "user", workspaceScope: "body",
    summary: "Generate one ticket per block of the included types, each field traced to its block; the body cites the block's insights with their verbatim quotes and sources",
    body: GenerateTicketsInput,
    responses: { 200: GenerateTicketsResult },
    // The document item kept colliding with other writes while the tickets were written (core/ticket writeTicket).
    errors: ["CONFLICT"],
  },
  "tickets.list": {
    method: "GET", path: "/api/execution/{document_id}/tickets", group: "tickets", access: "user", workspaceScope: "resource",
    summary: "The document's execution tickets, filtered by status",
    params: DocumentTicketsParams, query: ListTicketsQuery,
    responses: { 200: TicketList },
  },
  "tickets.review": {
    method: "PATCH", path: "/api/execution/tickets/{ticket_id}", group: "tickets", access: "user", workspaceScope: "resource",
    summary: "Review a ticket: apply the edits and mark it reviewed (a pushed or synced ticket is the tracker's now: 422)",
    params: TicketParams, body: ReviewTicketInput,
    errors: ["INVALID_TRANSITION", "CONFLICT"],
    responses: { 200: ExecutionTicket },
  },
  "tickets.push": {
    method: "POST", path: "/api/execution/push", group: "tickets", access: "user", workspaceScope: "body",
    summary: "Push tickets (default: every reviewed one) to the platform's active integration, one issue each; a rate limit queues the rest",
    body: PushTicketsInput,
    errors: ["NO_ACTIVE_INTEGRATION", "REPO_NOT_SELECTED", "NO_TEAM_SELECTED", "CODEHOST_TOKEN_ERROR", "PLANNER_TOKEN_ERROR", "TICKETS_TOKEN_ERROR", "SERVICE_UNAVAILABLE"],
    responses: { 200: PushTicketsResult },
  },
  "tickets.sync": {
    method: "POST", path: "/api/execution/sync", group: "tickets", access: "user", workspaceScope: "body",
    summary: "Read each pushed ticket's status category from its tracker (one-way); a rate limit queues the rest",
    body: SyncTicketsInput,
    errors: ["NO_ACTIVE_INTEGRATION", "CODEHOST_TOKEN_ERROR", "PLANNER_TOKEN_ERROR", "TICKETS_TOKEN_ERROR", "SERVICE_UNAVAILABLE"],
    counts: "integration_sync",
    responses: { 200: SyncTicketsResult },
  },
} satisfies Record<string, RouteSpec>);
