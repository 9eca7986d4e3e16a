import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  BatchStatusInput,
  BatchStatusResult,
  CreateRecommendationInput,
  ListRecommendationsQuery,
  Recommendation,
  RecommendationIdParam,
  RecommendationList,
  StatusChangeInput,
  UpdateRecommendationInput,
} from "../../../core/recommendation/schema";

/** Recommendations (spec 01 Recommendations). */
export const recommendationsRoutes = defineRoutes({
  "recommendations.create": {
    method: "POST", path: "/api/recommendations", group: "recommendations", access: "user", workspaceScope: "body",
    summary: "Create a recommendation by hand (status suggested)",
    body: CreateRecommendationInput,
    responses: { 201: Recommendation },
  },
  "recommendations.list": {
    method: "GET", path: "/api/recommendations", group: "recommendations", access: "user", workspaceScope: "query",
    summary: "Recommendations of a workspace",
    query: ListRecommendationsQuery,
    responses: { 200: RecommendationList },
  },
  "recommendations.batchStatus": {
    method: "PATCH", path: "/api/recommendations/batch/status", group: "recommendations", access: "user", workspaceScope: "body",
    summary: "Change the status of several recommendations; invalid transitions are reported per item",
    body: BatchStatusInput,
    errors: ["CONFLICT"],
    responses: { 200: BatchStatusResult },
  },
  "recommendations.get": {
    method: "GET", path: "/api/recommendations/{recommendation_id}", group: "recommendations", access: "user", workspaceScope: "resource",
    summary: "One recommendation",
    params: RecommendationIdParam,
    responses: { 200: Recommendation },
  },
  "recommendations.update": {
    method: "PATCH", path: "/api/recommendations/{recommendation_id}", group: "recommendations", access: "user", workspaceScope: "resource",
    summary: "Change fields (not status); null clears an optional field",
    params: RecommendationIdParam,
    body: UpdateRecommendationInput,
    responses: { 200: Recommendation },
  },
  "recommendations.delete": {
    method: "DELETE", path: "/api/recommendations/{recommendation_id}", group: "recommendations", access: "user", workspaceScope: "resource",
    summary: "Delete a recommendation",
    params: RecommendationIdParam,
    responses: { 204: null },
  },
  "recommendations.status": {
    method: "PATCH", path: "/api/recommendations/{recommendation_id}/status", group: "recommendations", access: "user", workspaceScope: "resource",
    summary: "Change status through the transition table (invalid: 422 INVALID_TRANSITION with valid_transitions)",
    params: RecommendationIdParam,
    body: StatusChangeInput,
    errors: ["INVALID_TRANSITION", "CONFLICT"],
    responses: { 200: Recommendation },
  },
} satisfies Record<string, RouteSpec>);
