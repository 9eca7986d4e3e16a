import { defineRoutes, type RouteSpec } from "../../lib/route";
import {
  ForgetAllQuery,
  ForgetAllResult,
  ListMemoryQuery,
  MemoryIdParam,
  MemoryList,
  MemoryProfile,
  MemorySearchResult,
  ProfileQuery,
  SearchMemoryQuery,
} from "../../../core/memory/schema";

/**
 * Memory (spec 01 Memory; DESIGN.md 6.6): search and profile exactly as the spec, plus our own routes through which a
 * person sees and deletes what is remembered about them (docs/decisions.md "Memory"). Every route answers only the
 * caller's own facts. Search and profile take an optional workspace_id (without it: every workspace the caller is in).
 */
export const memoryRoutes = defineRoutes({
  "memory.search": {
    method: "GET", path: "/api/memory/search", group: "memory", access: "user", workspaceScope: "query",
    summary: "Search the caller's remembered facts by meaning (current facts only); empty when memory is unavailable",
    query: SearchMemoryQuery,
    responses: { 200: MemorySearchResult },
  },
  "memory.profile": {
    method: "GET", path: "/api/memory/profile", group: "memory", access: "user", workspaceScope: "query",
    summary: "The caller's memory profile: static facts and recent dynamic context; empty lists and is_available false when unavailable",
    query: ProfileQuery,
    responses: { 200: MemoryProfile },
  },
  "memory.list": {
    method: "GET", path: "/api/memory", group: "memory", access: "user", workspaceScope: "query",
    summary: "Everything remembered about the caller in a workspace, superseded facts included, newest first",
    query: ListMemoryQuery,
    responses: { 200: MemoryList },
  },
  "memory.forgetAll": {
    method: "DELETE", path: "/api/memory", group: "memory", access: "user", workspaceScope: "query",
    summary: "Delete everything remembered about the caller in a workspace, history included",
    query: ForgetAllQuery,
    errors: ["CONFLICT"],
    responses: { 200: ForgetAllResult },
  },
  "memory.forget": {
    method: "DELETE", path: "/api/memory/{memory_id}", group: "memory", access: "user", workspaceScope: "resource",
    summary: "Delete one of the caller's remembered facts (another user's answers 404)",
    params: MemoryIdParam,
    errors: ["CONFLICT"],
    responses: { 204: null },
  },
} satisfies Record<string, RouteSpec>);
