/**
 * A stand-in Linear (OAuth with PKCE, and the GraphQL operations the planner adapter sends) as `msw` handlers at
 * LINEAR_WEB_URL / LINEAR_API_URL-shaped addresses, so the settings are what reaches it. Each operation's answer is
 * typed by `Answers` (core/integration/planner/linear.ts), built from the SDK's generated schema types
 * (`LinearDocument`), and is then cut down to exactly the fields the request's document selects: a document that
 * selects a field the typed answer does not carry fails the test, so the adapter's documents, its types and Linear's
 * schema types cannot drift apart. Filters the stand-in does not understand fail too, rather than being ignored.
 * Real `@linear/sdk` and oauth4webapi run against it unchanged.
 */
import { createHash, randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse, type OperationDefinitionNode, type SelectionSetNode } from "graphql";
import { http, HttpResponse } from "msw";
import { StandIn } from "./standins";
import type { LinearDocument as L } from "@linear/sdk";
import type { Answers, CycleNode, IssueNode, MilestoneNode, ProjectNode, TeamNode, UserNode, Variables } from "../../core/integration/planner/linear";
/** The API's and frontend's addresses in the integration tests (as test/support/integrations.ts, which imports vitest: this file is also used by bench/integrations.ts). */
const API_URL = "https://api.r2d.test";
const APP_URL = "https://app.r2d.test";

export const LINEAR_WEB = "https://linear.test";
export const LINEAR_API = "https://api.linear.test";
const GRAPHQL = `${LINEAR_API}/graphql`;

type Op = keyof Answers;
type VarsOf<K extends Op> = K extends keyof Variables ? Variables[K] : Record<string, any>;

interface StoredIssue {
  id: string;
  number: number;
  teamId: string;
  title: string;
  description: string | null;
  priority: number;
  stateId: string;
  assigneeId: string | null;
  projectId: string | null;
  cycleId: string | null;
  labelIds: string[];
  dueDate: string | null;
  createdAt: string;
  updatedAt: string;
  /** Set when the issue is archived (Linear archives closed issues after a while): list queries leave it out unless `includeArchived`. */
  archivedAt?: string;
}

interface StoredTeam {
  id: string;
  key: string;
  name: string;
  states: TeamNode["states"]["nodes"];
  labels: TeamNode["labels"]["nodes"];
  projects: (ProjectNode & { milestones: MilestoneNode[] })[];
  cycles: CycleNode[];
  activeCycleId: string | null;
}

/** A failure the next matching request(s) get instead of an answer. */
export interface LinearFailure {
  operation: Op;
  /**
   * ratelimited: HTTP 400 with the RATELIMITED code (Linear's usual answer); 429: the plain status; auth: a refused
   * token; lost: the operation is carried out, then the connection drops before the answer.
   */
  kind: "ratelimited" | "429" | "auth" | "lost" | "held";
  /** held: the request waits this long, then is carried out and answered as usual (a stalled Linear). */
  holdMs?: number;
  headers?: Record<string, string>;
  times?: number;
}

/** Every GraphQL error Linear answers has this shape (message, extensions with type, code, user message). */
const gqlError = (status: number, message: string, extensions: Record<string, unknown>, headers: Record<string, string> = {}) =>
  HttpResponse.json({ errors: [{ message, extensions }], data: null }, { status, headers });

class NotFound extends Error {}

/** The answer cut to the document's selection; a selected field the answer does not carry is a test failure. */
export function project(sel: SelectionSetNode, value: unknown, path: string): unknown {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.map((v, i) => project(sel, v, `${path}[${i}]`));
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const s of sel.selections) {
    if (s.kind !== "Field") throw new Error(`stand-in Linear: unexpected ${s.kind} at ${path}`);
    const name = s.name.value;
    if (!(name in obj)) throw new Error(`stand-in Linear: the document selects ${path}.${name}, which the typed answer does not carry`);
    out[s.alias?.value ?? name] = s.selectionSet ? project(s.selectionSet, obj[name], `${path}.${name}`) : obj[name];
  }
  return out;
}

export class LinearStandIn extends StandIn<LinearFailure> {
  readonly clientId = "lin-client-id";
  readonly clientSecret = "lin-client-secret";
  readonly org = { id: randomUUID(), name: "Acme Robotics", logoUrl: "https://linear.test/logo.png", urlKey: "acme" };
  readonly viewer: UserNode = { id: randomUUID(), name: "Ada Lovelace", displayName: "ada", email: "ada@acme.test", active: true };
  readonly users: UserNode[] = [
    this.viewer,
    { id: randomUUID(), name: "Grace Hopper", displayName: "grace", email: "grace@acme.test", active: true },
    { id: randomUUID(), name: "Grace Kelly", displayName: "gkelly", email: "kelly@acme.test", active: true },
    { id: randomUUID(), name: "Alan Turing", displayName: "alan", email: "alan@acme.test", active: true },
  ];
  readonly teams: StoredTeam[] = [];
  readonly issues = new Map<string, StoredIssue>();
  readonly comments = new Map<string, { id: string; issueId: string; body: string; url: string }>();
  /** Every GraphQL request: its operation and the status answered. */
  readonly requests: { operation: string; status: number }[] = [];
  /**
   * Seconds the access tokens issued next live, with a refresh token beside them that is replaced on each refresh
   * (Linear's OAuth apps with refresh tokens). Unset (default): a long-lived token and no refresh token.
   */
  accessTtlSeconds: number | undefined;
  /** Token endpoint calls by grant type. */
  readonly tokenCalls = { authorization_code: 0, refresh_token: 0 };
  private readonly codes = new Map<string, { challenge: string; redirectUri: string }>();
  /** Access token → when it expires (epoch ms). */
  private readonly tokens = new Map<string, number>();
  private readonly refreshTokens = new Set<string>();

  constructor() {
    super();
    this.addTeam("ENG", "Engineering", { cycles: true });
    this.addTeam("DES", "Design", { cycles: false });
  }

  /** A team with Linear's default workflow (stored out of position order: the API sorts), labels and two projects. */
  addTeam(key: string, name: string, opts: { cycles: boolean }): StoredTeam {
    const id = randomUUID();
    const state = (n: string, type: string, position: number) => ({ id: randomUUID(), name: n, type, position, color: "#bec2c8" });
    const now = Date.now();
    const cycle = (n: number, startDays: number): CycleNode => ({
      id: randomUUID(), number: n, name: `Cycle ${n}`, progress: 0.25,
      startsAt: new Date(now + startDays * 86_400_000).toISOString(), endsAt: new Date(now + (startDays + 14) * 86_400_000).toISOString(),
    });
    const cycles = opts.cycles ? [cycle(1, -20), cycle(2, -6), cycle(3, 8)] : [];
    const team: StoredTeam = {
      id, key, name,
      states: [state("Done", "completed", 4), state("Backlog", "backlog", 0), state("In Progress", "started", 2), state("Todo", "unstarted", 1), state("In Review", "started", 3), state("Canceled", "canceled", 5), state("Duplicate", "duplicate", 6), state("Triage", "triage", -1)],
      labels: [{ id: randomUUID(), name: "Bug", color: "#eb5757" }, { id: randomUUID(), name: "Feature", color: "#bb87fc" }, { id: randomUUID(), name: "Research", color: "#4ea7fc" }],
      projects: ["Mobile onboarding", "Mobile payments"].map((p) => ({
        id: randomUUID(), name: `${p}`, state: "started", description: `${p} for ${name}`, url: `${LINEAR_WEB}/acme/project/${p.toLowerCase().replace(/ /g, "-")}`,
        progress: 0.4, startDate: "2026-01-05", targetDate: "2026-03-31",
        milestones: [{ id: randomUUID(), name: "Beta", targetDate: "2026-02-15" }],
      })),
      cycles, activeCycleId: opts.cycles ? cycles[1]!.id : null,
    };
    this.teams.push(team);
    return team;
  }

  team(key: string): StoredTeam {
    const t = this.teams.find((x) => x.key === key);
    if (!t) throw new Error(`no team ${key}`);
    return t;
  }

  stateOf(teamKey: string, name: string) {
    return this.team(teamKey).states.find((s) => s.name === name)!;
  }

  /** Move an issue to a workflow state by its name (a developer in Linear). */
  moveTo(issueId: string, stateName: string): void {
    const issue = this.issues.get(issueId)!;
    const team = this.teams.find((t) => t.id === issue.teamId)!;
    issue.stateId = team.states.find((s) => s.name === stateName)!.id;
    issue.updatedAt = new Date().toISOString();
  }

  /** An issue created in Linear by someone else. */
  addIssue(teamKey: string, fields: Partial<StoredIssue> & { title: string }): StoredIssue {
    const team = this.team(teamKey);
    const now = new Date().toISOString();
    const issue: StoredIssue = {
      id: randomUUID(), number: [...this.issues.values()].filter((i) => i.teamId === team.id).length + 1, teamId: team.id, description: null, priority: 0,
      stateId: team.states.find((s) => s.type === "backlog")!.id, assigneeId: null, projectId: null, cycleId: null, labelIds: [], dueDate: null, createdAt: now, updatedAt: now,
      ...fields,
    };
    this.issues.set(issue.id, issue);
    return issue;
  }

  /** Archive an issue (Linear's auto-archive of closed issues, or a person): left out of `issues` unless `includeArchived`. */
  archive(issueId: string): void {
    this.issues.get(issueId)!.archivedAt = new Date().toISOString();
  }

  revokeAll(): void {
    this.tokens.clear();
    this.refreshTokens.clear();
  }

  /** A token endpoint answer: a long-lived token, or (accessTtlSeconds set) an expiring one with its refresh token. */
  private newToken() {
    const token = `lin_oauth_${randomBytes(18).toString("hex")}`;
    if (this.accessTtlSeconds === undefined) {
      this.tokens.set(token, Date.now() + 315_705_599_000);
      return { access_token: token, token_type: "Bearer", expires_in: 315_705_599, scope: "read write" };
    }
    const refresh = `lin_refresh_${randomBytes(18).toString("hex")}`;
    this.tokens.set(token, Date.now() + this.accessTtlSeconds * 1000);
    this.refreshTokens.add(refresh);
    return { access_token: token, token_type: "Bearer", expires_in: this.accessTtlSeconds, refresh_token: refresh, scope: "read write" };
  }

  /** Requests of one operation since `mark` (an index into `requests`). */
  count(operation: Op, mark = 0): number {
    return this.requests.slice(mark).filter((r) => r.operation === operation).length;
  }

  /** What the browser does with an auth_url: checked as Linear would (client, redirect URI, scopes, S256). */
  authorize(authUrl: string): { code: string; state: string } {
    const url = new URL(authUrl);
    if (`${url.origin}${url.pathname}` !== `${LINEAR_WEB}/oauth/authorize`) throw new Error(`unexpected authorize URL ${authUrl}`);
    if (url.searchParams.get("client_id") !== this.clientId) throw new Error("unknown client_id");
    if (url.searchParams.get("response_type") !== "code") throw new Error("response_type=code expected");
    if (url.searchParams.get("scope") !== "read,write") throw new Error(`Linear takes comma-separated scopes, got ${url.searchParams.get("scope")}`);
    if (url.searchParams.get("code_challenge_method") !== "S256") throw new Error("PKCE S256 expected");
    const code = randomBytes(10).toString("hex");
    this.codes.set(code, { challenge: url.searchParams.get("code_challenge")!, redirectUri: url.searchParams.get("redirect_uri")! });
    return { code, state: url.searchParams.get("state")! };
  }

  private issueNode(i: StoredIssue): IssueNode {
    const team = this.teams.find((t) => t.id === i.teamId)!;
    const state = team.states.find((s) => s.id === i.stateId)!;
    const user = this.users.find((u) => u.id === i.assigneeId);
    const proj = team.projects.find((p) => p.id === i.projectId);
    const cycle = team.cycles.find((c) => c.id === i.cycleId);
    const priorityLabel = ["No priority", "Urgent", "High", "Medium", "Low"][i.priority]!;
    return {
      id: i.id, identifier: `${team.key}-${i.number}`, title: i.title, description: i.description, url: `${LINEAR_WEB}/acme/issue/${team.key}-${i.number}`,
      priority: i.priority, priorityLabel, dueDate: i.dueDate, createdAt: i.createdAt, updatedAt: i.updatedAt,
      state: { id: state.id, name: state.name, type: state.type },
      assignee: user ? { id: user.id, name: user.name, displayName: user.displayName } : null,
      project: proj ? { id: proj.id, name: proj.name } : null,
      cycle: cycle ? { id: cycle.id, number: cycle.number, name: cycle.name } : null,
      team: { id: team.id, key: team.key },
      labels: { nodes: team.labels.filter((l) => i.labelIds.includes(l.id)).map((l) => ({ id: l.id, name: l.name })) },
    };
  }

  private teamNode(t: StoredTeam): TeamNode {
    return {
      id: t.id, key: t.key, name: t.name,
      projects: { nodes: t.projects.map((p) => ({ id: p.id, name: p.name, state: p.state })) },
      states: { nodes: t.states }, labels: { nodes: t.labels },
    };
  }

  private findIssue(idOrIdentifier: string): StoredIssue | undefined {
    return this.issues.get(idOrIdentifier) ?? [...this.issues.values()].find((i) => this.issueNode(i).identifier === idOrIdentifier.toUpperCase());
  }

  /** The issues a filter selects; a filter key the stand-in does not know fails the test instead of being ignored. */
  private matches(i: StoredIssue, f: L.IssueFilter): boolean {
    const known = new Set(["id", "team", "state", "assignee", "project", "labels", "cycle"]);
    for (const k of Object.keys(f)) if (!known.has(k)) throw new Error(`stand-in Linear: filter ${k} not understood`);
    const state = this.teams.flatMap((t) => t.states).find((s) => s.id === i.stateId)!;
    if (f.id?.in && !f.id.in.includes(i.id)) return false;
    if (f.team?.id?.eq && i.teamId !== f.team.id.eq) return false;
    if (f.state?.type?.in && !f.state.type.in.includes(state.type)) return false;
    if (f.state?.type?.nin && f.state.type.nin.includes(state.type)) return false;
    if (f.assignee?.id?.eq && i.assigneeId !== f.assignee.id.eq) return false;
    if (f.project?.id?.eq && i.projectId !== f.project.id.eq) return false;
    if (f.labels?.some?.id?.eq && !i.labelIds.includes(f.labels.some.id.eq)) return false;
    if (f.cycle?.id?.eq && i.cycleId !== f.cycle.id.eq) return false;
    return true;
  }

  private sortedIssues(filter: L.IssueFilter, includeArchived = false) {
    return [...this.issues.values()].filter((i) => (includeArchived || !i.archivedAt) && this.matches(i, filter)).sort((a, b) => b.updatedAt.localeCompare(a.updatedAt) || b.number - a.number);
  }

  /** One resolver per operation, answering the SDK-typed `Answers[K]`. */
  private readonly resolvers: { [K in Op]: (v: VarsOf<K>) => Answers[K] } = {
    PlannerViewer: () => ({ viewer: { id: this.viewer.id, name: this.viewer.name, email: this.viewer.email, organization: this.org } }),
    PlannerTeams: (v) => {
      const start = v.after ? Number(v.after) : 0;
      const page = this.teams.slice(start, start + v.first);
      const next = start + page.length;
      return { teams: { nodes: page.map((t) => this.teamNode(t)), pageInfo: { hasNextPage: next < this.teams.length, endCursor: next < this.teams.length ? String(next) : null } } };
    },
    PlannerTeam: (v) => {
      const t = this.teams.find((x) => x.id === v.id);
      if (!t) throw new NotFound("Team");
      return { team: this.teamNode(t) };
    },
    PlannerIssue: (v) => {
      const i = this.findIssue(v.id);
      if (!i) throw new NotFound("Issue");
      return { issue: this.issueNode(i) };
    },
    PlannerIssues: (v) => ({ issues: { nodes: this.sortedIssues(v.filter, v.includeArchived === true).slice(0, v.first).map((i) => this.issueNode(i)) } }),
    PlannerSearch: (v) => {
      const term = String(v.term).toLowerCase();
      const hits = this.sortedIssues(v.teamId ? { team: { id: { eq: v.teamId } } } : {}).filter((i) => `${i.title} ${i.description ?? ""}`.toLowerCase().includes(term));
      return { searchIssues: { nodes: hits.slice(0, v.first).map((i) => this.issueNode(i)) } };
    },
    PlannerIssueCreate: ({ input }) => {
      const team = this.teams.find((t) => t.id === input.teamId);
      if (!team) throw new NotFound("Team");
      if (input.id && this.issues.has(input.id)) throw new Error("stand-in Linear: an issue with this id already exists (a replay created twice)");
      if (input.id && !/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(input.id)) throw new Error(`stand-in Linear: id ${input.id} is not in UUID v4 format`);
      if (input.projectId && !team.projects.some((p) => p.id === input.projectId)) throw new NotFound("Project");
      if ((input.labelIds ?? []).some((l) => !team.labels.some((x) => x.id === l))) throw new NotFound("IssueLabel");
      if (input.stateId && !team.states.some((s) => s.id === input.stateId)) throw new NotFound("WorkflowState");
      const issue = this.addIssue(team.key, {
        ...(input.id ? { id: input.id } : {}), title: input.title ?? "", description: input.description ?? null, priority: input.priority ?? 0,
        ...(input.stateId ? { stateId: input.stateId } : {}), projectId: input.projectId ?? null, labelIds: input.labelIds ?? [],
      });
      return { issueCreate: { success: true, issue: this.issueNode(issue) } };
    },
    PlannerIssueUpdate: ({ id, input }) => {
      const i = this.findIssue(id);
      if (!i) throw new NotFound("Issue");
      const team = this.teams.find((t) => t.id === i.teamId)!;
      if (input.stateId && !team.states.some((s) => s.id === input.stateId)) throw new NotFound("WorkflowState");
      if (input.cycleId && !team.cycles.some((c) => c.id === input.cycleId)) throw new NotFound("Cycle");
      Object.assign(i, {
        ...(input.title != null ? { title: input.title } : {}), ...(input.description != null ? { description: input.description } : {}),
        ...(input.stateId ? { stateId: input.stateId } : {}), ...(input.assigneeId ? { assigneeId: input.assigneeId } : {}),
        ...(input.priority != null ? { priority: input.priority } : {}), ...(input.dueDate ? { dueDate: String(input.dueDate) } : {}),
        ...(input.cycleId !== undefined ? { cycleId: input.cycleId } : {}), updatedAt: new Date().toISOString(),
      });
      return { issueUpdate: { success: true, issue: this.issueNode(i) } };
    },
    PlannerCommentCreate: ({ input }) => {
      const issue = this.findIssue(input.issueId ?? "");
      if (!issue) throw new NotFound("Issue");
      const id = input.id ?? randomUUID();
      if (this.comments.has(id)) throw new Error("stand-in Linear: a comment with this id already exists (a replay commented twice)");
      const comment = { id, issueId: issue.id, body: input.body ?? "", url: `${this.issueNode(issue).url}#comment-${id.slice(0, 8)}` };
      this.comments.set(id, comment);
      return { commentCreate: { success: true, comment: { id, url: comment.url } } };
    },
    PlannerComment: (v) => {
      const c = this.comments.get(v.id);
      if (!c) throw new NotFound("Comment");
      return { comment: { id: c.id, url: c.url } };
    },
    PlannerUsers: (v) => ({ users: { nodes: this.users.slice(0, v.first) } }),
    PlannerActiveCycle: (v) => {
      const t = this.teams.find((x) => x.id === v.teamId);
      if (!t) throw new NotFound("Team");
      return { team: { activeCycle: t.cycles.find((c) => c.id === t.activeCycleId) ?? null } };
    },
    PlannerCycle: (v) => {
      const c = this.teams.flatMap((t) => t.cycles).find((x) => x.id === v.id);
      if (!c) throw new NotFound("Cycle");
      return { cycle: { ...c, issues: { nodes: this.sortedIssues({ cycle: { id: { eq: c.id } } }).slice(0, v.first).map((i) => this.issueNode(i)) } } };
    },
    PlannerProject: (v) => {
      const p = this.teams.flatMap((t) => t.projects).find((x) => x.id === v.id);
      if (!p) throw new NotFound("Project");
      const { milestones, ...rest } = p;
      return { project: { ...rest, projectMilestones: { nodes: milestones }, issues: { nodes: this.sortedIssues({ project: { id: { eq: p.id } } }).slice(0, v.first).map((i) => this.issueNode(i)) } } };
    },
    PlannerProjects: (v) => {
      const t = this.teams.find((x) => x.id === v.teamId);
      if (!t) throw new NotFound("Team");
      return { team: { projects: { nodes: t.projects.slice(0, v.first).map(({ milestones: _m, ...p }) => p) } } };
    },
  };

  protected handlers() {
    return [
      http.post(GRAPHQL, async ({ request }) => {
        const body = (await request.json()) as { query: string; variables?: Record<string, unknown> };
        const doc = parse(body.query);
        const op = doc.definitions.find((d): d is OperationDefinitionNode => d.kind === "OperationDefinition")!;
        const name = op.name?.value as Op;
        const log = (status: number) => this.requests.push({ operation: name, status });
        let failure = this.takeFailure((f) => f.operation === name);
        if (failure?.kind === "held") {
          await new Promise((resolve) => setTimeout(resolve, failure!.holdMs ?? 0));
          failure = undefined;
        }
        if (failure && failure.kind === "lost") {
          project(op.selectionSet, (this.resolvers[name] as (v: Record<string, unknown>) => unknown)(body.variables ?? {}), name);
          log(200);
          return HttpResponse.error();
        }
        if (failure) {
          if (failure.kind === "auth") {
            log(400);
            return gqlError(400, "Authentication required, not authenticated", { type: "authentication error", code: "AUTHENTICATION_ERROR", userPresentableMessage: "You need to authenticate to access this operation." });
          }
          const status = failure.kind === "429" ? 429 : 400;
          log(status);
          return gqlError(status, "Rate limit exceeded", { code: "RATELIMITED", statusCode: 429, userPresentableMessage: "Too many requests; try again later." }, failure.headers);
        }
        const token = request.headers.get("authorization")?.replace(/^Bearer /, "");
        if (!token || !((this.tokens.get(token) ?? 0) > Date.now())) {
          log(400);
          return gqlError(400, "Authentication required, not authenticated", { type: "authentication error", code: "AUTHENTICATION_ERROR", userPresentableMessage: "You need to authenticate to access this operation." });
        }
        const resolver = this.resolvers[name] as ((v: Record<string, unknown>) => unknown) | undefined;
        if (!resolver) throw new Error(`stand-in Linear: no operation ${name}`);
        try {
          const data = project(op.selectionSet, resolver(body.variables ?? {}), name);
          log(200);
          return HttpResponse.json({ data }, { headers: { "x-ratelimit-requests-limit": "5000", "x-ratelimit-requests-remaining": "4999", "x-complexity": "10" } });
        } catch (err) {
          if (!(err instanceof NotFound)) throw err;
          log(400);
          return gqlError(400, `Entity not found: ${err.message}`, { type: "invalid input", code: "INVALID_INPUT", userPresentableMessage: `Could not find referenced ${err.message}.` });
        }
      }),
      http.post(`${LINEAR_API}/oauth/token`, async ({ request }) => {
        const form = new URLSearchParams(await request.text());
        if (form.get("grant_type") === "refresh_token") {
          this.tokenCalls.refresh_token++;
          if (form.get("client_id") !== this.clientId || form.get("client_secret") !== this.clientSecret) return HttpResponse.json({ error: "invalid_client" }, { status: 401 });
          if (!this.refreshTokens.delete(form.get("refresh_token") ?? "")) return HttpResponse.json({ error: "invalid_grant", error_description: "Invalid refresh token" }, { status: 400 });
          return HttpResponse.json(this.newToken());
        }
        this.tokenCalls.authorization_code++;
        const grant = this.codes.get(form.get("code") ?? "");
        const challenge = createHash("sha256").update(form.get("code_verifier") ?? "").digest("base64url");
        if (!grant || form.get("client_id") !== this.clientId || form.get("client_secret") !== this.clientSecret || form.get("grant_type") !== "authorization_code") {
          return HttpResponse.json({ error: "invalid_grant", error_description: "Invalid authorization code" }, { status: 400 });
        }
        if (grant.redirectUri !== form.get("redirect_uri") || grant.challenge !== challenge) return HttpResponse.json({ error: "invalid_grant" }, { status: 400 });
        this.codes.delete(form.get("code")!);
        return HttpResponse.json(this.newToken());
      }),
    ];
  }
}

/** Point the Linear settings (and the API's own addresses, a fresh token key) at the stand-in. */
export function useLinearSettings(linear: LinearStandIn): void {
  Object.assign(process.env, {
    LINEAR_API_URL: LINEAR_API,
    LINEAR_WEB_URL: LINEAR_WEB,
    LINEAR_CLIENT_ID: linear.clientId,
    LINEAR_CLIENT_SECRET: linear.clientSecret,
    API_URL,
    APP_URL,
    TOKEN_KEY_FILE: join(mkdtempSync(join(tmpdir(), "r2d-keys-")), "integration-tokens.key"),
  });
}

/** Connect Linear through the public API as a browser would: connect, authorize at the stand-in, callback. */
export async function connectLinear(linear: LinearStandIn, token: string, workspaceId: string) {
  const { call } = await import("./api");
  const connect = await call("POST", "/api/integrations/planner/connect", { token, body: { workspace_id: workspaceId } });
  if (connect.status !== 200) throw new Error(`connect: ${connect.status} ${connect.text}`);
  const { code, state } = linear.authorize(connect.body.auth_url);
  if (state !== connect.body.state) throw new Error("state changed on the way");
  const cb = await call("GET", "/api/integrations/planner/callback", { query: { code, state } });
  if (cb.status !== 302 || cb.headers.location !== `${APP_URL}/settings/integrations?planner=connected`) throw new Error(`callback: ${cb.status} ${String(cb.headers.location)}`);
  return { state, code };
}
