/**
 * The `Planner` port on Linear (DESIGN.md 6.4): `@linear/sdk`'s client (its GraphQL transport and its error types),
 * pointed at LINEAR_API_URL + "/graphql" so Linear's own address and stand-ins work alike. Each call is one GraphQL
 * document of our own that selects exactly what the port returns: the SDK's model objects fetch every relation
 * (state, team, assignee) with a request of its own, and Linear counts requests and query complexity per hour.
 * The responses are typed by the SDK's generated schema types (`LinearDocument`), so a field that Linear does not
 * have does not compile. Rate limits are never waited out here: they come back as `ProviderError` `rate_limited`
 * with Linear's wait (retry-after, else the reset of the exhausted budget).
 */
import type { LinearClient, LinearDocument as L } from "@linear/sdk";
import { Config } from "../../config";
import { isTransportFailure, noAnswer, ProviderError } from "../errors";
import { markAnswered, timeoutSignal } from "../timeout";
import type { IssueCreate, IssueQuery, IssueUpdate, Planner, PlannerCycle, PlannerIssue, PlannerProject, PlannerTeam } from "./port";

// The SDK (1.7 MB) loads with the first Linear call, not with every Lambda that reaches this port (issue #24 cold starts).
const LinearSdk = () => import("@linear/sdk");

/** The JSON form of an SDK schema type: Linear's DateTime arrives as an ISO string, not a Date. */
export type Wire<T> = T extends Date ? string : T extends (infer U)[] ? Wire<U>[] : T extends object ? { [K in keyof T]: Wire<T[K]> } : T;

/** The issue fields every document selects (ISSUE_FIELDS), as Linear answers them. */
export type IssueNode = Wire<Pick<L.Issue, "id" | "identifier" | "title" | "description" | "url" | "priority" | "priorityLabel" | "dueDate" | "createdAt" | "updatedAt">> & {
  state: Pick<L.WorkflowState, "id" | "name" | "type">;
  assignee?: Pick<L.User, "id" | "name" | "displayName"> | null;
  project?: Pick<L.Project, "id" | "name"> | null;
  cycle?: Pick<L.Cycle, "id" | "number" | "name"> | null;
  team: Pick<L.Team, "id" | "key">;
  labels: { nodes: Pick<L.IssueLabel, "id" | "name">[] };
};
export type TeamNode = Pick<L.Team, "id" | "key" | "name"> & {
  projects: { nodes: Pick<L.Project, "id" | "name" | "state">[] };
  states: { nodes: Pick<L.WorkflowState, "id" | "name" | "type" | "position" | "color">[] };
  labels: { nodes: Pick<L.IssueLabel, "id" | "name" | "color">[] };
};
export type CycleNode = Wire<Pick<L.Cycle, "id" | "number" | "name" | "startsAt" | "endsAt" | "progress">>;
export type ProjectNode = Wire<Pick<L.Project, "id" | "name" | "state" | "description" | "url" | "progress" | "startDate" | "targetDate">>;
export type MilestoneNode = Wire<Pick<L.ProjectMilestone, "id" | "name" | "targetDate">>;
export type UserNode = Pick<L.User, "id" | "name" | "displayName" | "email" | "active">;
export type ViewerNode = Pick<L.User, "id" | "name" | "email"> & { organization: Pick<L.Organization, "id" | "name" | "logoUrl" | "urlKey"> };
export type CommentNode = Pick<L.Comment, "id" | "url">;
type PageInfoNode = Pick<L.PageInfo, "hasNextPage" | "endCursor">;

/** Each document's answer (`data`), keyed by operation name: what the stand-in Linear serves in the tests. */
export interface Answers {
  PlannerViewer: { viewer: ViewerNode };
  PlannerTeams: { teams: { nodes: TeamNode[]; pageInfo: PageInfoNode } };
  PlannerTeam: { team: TeamNode | null };
  PlannerIssue: { issue: IssueNode | null };
  PlannerIssues: { issues: { nodes: IssueNode[] } };
  PlannerSearch: { searchIssues: { nodes: IssueNode[] } };
  PlannerIssueCreate: { issueCreate: Pick<L.IssuePayload, "success"> & { issue: IssueNode | null } };
  PlannerIssueUpdate: { issueUpdate: Pick<L.IssuePayload, "success"> & { issue: IssueNode | null } };
  PlannerCommentCreate: { commentCreate: Pick<L.CommentPayload, "success"> & { comment: CommentNode } };
  PlannerComment: { comment: CommentNode | null };
  PlannerUsers: { users: { nodes: UserNode[] } };
  PlannerActiveCycle: { team: { activeCycle: CycleNode | null } | null };
  PlannerCycle: { cycle: (CycleNode & { issues: { nodes: IssueNode[] } }) | null };
  PlannerProject: { project: (ProjectNode & { projectMilestones: { nodes: MilestoneNode[] }; issues: { nodes: IssueNode[] } }) | null };
  PlannerProjects: { team: { projects: { nodes: ProjectNode[] } } | null };
}

/** Linear's largest page. */
export const MAX_PAGE = 250;
/** Teams a page of PlannerTeams: each carries three nested lists of up to 50, so the query stays well under Linear's complexity cap of a single query. */
const TEAMS_PAGE = 25;
const NESTED = 50;
/** Pages of teams read at most (200 teams). */
const MAX_TEAM_PAGES = 8;

const ISSUE_FIELDS = `id identifier title description url priority priorityLabel dueDate createdAt updatedAt
  state { id name type } assignee { id name displayName } project { id name } cycle { id number name } team { id key }
  labels(first: ${NESTED}) { nodes { id name } }`;
const TEAM_FIELDS = `id key name
  projects(first: ${NESTED}) { nodes { id name state } }
  states(first: ${NESTED}) { nodes { id name type position color } }
  labels(first: ${NESTED}) { nodes { id name color } }`;
const CYCLE_FIELDS = "id number name startsAt endsAt progress";
const PROJECT_FIELDS = "id name state description url progress startDate targetDate";

const DOCS: Record<keyof Answers, string> = {
  PlannerViewer: "query PlannerViewer { viewer { id name email organization { id name logoUrl urlKey } } }",
  PlannerTeams: `query PlannerTeams($first: Int!, $after: String) { teams(first: $first, after: $after) { nodes { ${TEAM_FIELDS} } pageInfo { hasNextPage endCursor } } }`,
  PlannerTeam: `query PlannerTeam($id: String!) { team(id: $id) { ${TEAM_FIELDS} } }`,
  PlannerIssue: `query PlannerIssue($id: String!) { issue(id: $id) { ${ISSUE_FIELDS} } }`,
  PlannerIssues: `query PlannerIssues($filter: IssueFilter, $first: Int!, $includeArchived: Boolean) { issues(filter: $filter, first: $first, includeArchived: $includeArchived, orderBy: updatedAt) { nodes { ${ISSUE_FIELDS} } } }`,
  PlannerSearch: `query PlannerSearch($term: String!, $first: Int!, $teamId: String) { searchIssues(term: $term, first: $first, teamId: $teamId) { nodes { ${ISSUE_FIELDS} } } }`,
  PlannerIssueCreate: `mutation PlannerIssueCreate($input: IssueCreateInput!) { issueCreate(input: $input) { success issue { ${ISSUE_FIELDS} } } }`,
  PlannerIssueUpdate: `mutation PlannerIssueUpdate($id: String!, $input: IssueUpdateInput!) { issueUpdate(id: $id, input: $input) { success issue { ${ISSUE_FIELDS} } } }`,
  PlannerCommentCreate: "mutation PlannerCommentCreate($input: CommentCreateInput!) { commentCreate(input: $input) { success comment { id url } } }",
  PlannerComment: "query PlannerComment($id: String!) { comment(id: $id) { id url } }",
  PlannerUsers: `query PlannerUsers($first: Int!) { users(first: $first) { nodes { id name displayName email active } } }`,
  PlannerActiveCycle: `query PlannerActiveCycle($teamId: String!) { team(id: $teamId) { activeCycle { ${CYCLE_FIELDS} } } }`,
  PlannerCycle: `query PlannerCycle($id: String!, $first: Int!) { cycle(id: $id) { ${CYCLE_FIELDS} issues(first: $first) { nodes { ${ISSUE_FIELDS} } } } }`,
  PlannerProject: `query PlannerProject($id: String!, $first: Int!) { project(id: $id) { ${PROJECT_FIELDS} projectMilestones(first: ${NESTED}) { nodes { id name targetDate } } issues(first: $first) { nodes { ${ISSUE_FIELDS} } } } }`,
  PlannerProjects: `query PlannerProjects($teamId: String!, $first: Int!) { team(id: $teamId) { projects(first: $first) { nodes { ${PROJECT_FIELDS} } } } }`,
};

/** The variables each document takes, typed by the SDK's input types where Linear defines one. */
export interface Variables {
  PlannerIssues: { filter: L.IssueFilter; first: number } & Pick<L.QueryIssuesArgs, "includeArchived">;
  PlannerIssueCreate: { input: L.IssueCreateInput };
  PlannerIssueUpdate: { id: string; input: L.IssueUpdateInput };
  PlannerCommentCreate: { input: L.CommentCreateInput };
}

/**
 * A Linear client for one access token, at LINEAR_API_URL/graphql. `signal` goes into every request's RequestInit
 * (the SDK spreads its options into fetch's): a client made per request with the provider request timeout's signal
 * (../timeout.ts) bounds that request, its body included.
 */
export async function linearClient(accessToken: string, signal?: AbortSignal): Promise<LinearClient> {
  const { LinearClient } = await LinearSdk();
  return new LinearClient({ accessToken, apiUrl: `${Config.linearApiUrl()}/graphql`, ...(signal ? { signal } : {}) });
}

interface RawGraphQLError {
  message?: string;
  extensions?: { code?: string; type?: string; userPresentableMessage?: string };
}

/** A reset header as seconds from now: Linear sends epoch milliseconds; a value in seconds is accepted too. */
const secondsUntil = (reset: number, now: number) => Math.max(1, Math.ceil(((reset > 1e12 ? reset : reset * 1000) - now) / 1000));

/**
 * Seconds until Linear accepts again: `retry-after`, else the reset of whichever budget (requests, complexity) is
 * spent (`x-ratelimit-*-remaining` 0), else the later of the two resets, else 60.
 */
export function retryAfterOf(get: (name: string) => string | null | undefined, now = Date.now()): number {
  const after = Number(get("retry-after"));
  if (get("retry-after") && Number.isFinite(after) && after >= 0) return Math.max(1, Math.ceil(after));
  const resets: number[] = [];
  for (const budget of ["requests", "complexity"]) {
    const reset = Number(get(`x-ratelimit-${budget}-reset`));
    if (!Number.isFinite(reset) || reset <= 0) continue;
    if (get(`x-ratelimit-${budget}-remaining`) === "0") return secondsUntil(reset, now);
    resets.push(reset);
  }
  return resets.length ? secondsUntil(Math.max(...resets), now) : 60;
}

/**
 * Translate an SDK error into the port's terms. Linear signals a rate limit with HTTP 429, or with HTTP 400 and the
 * `RATELIMITED` code in the error's extensions (the SDK then reports an unknown error): both are `rate_limited`. A
 * request that got no answer (the SDK passes fetch's `TypeError: fetch failed` through, as it does an abort) is
 * `unknown`, as GitHub's and Jira's are: 503 over HTTP. Anything else that is not the SDK's error is a defect and
 * passes unchanged.
 */
export async function translate(err: unknown): Promise<unknown> {
  const { LinearError } = await LinearSdk();
  if (!(err instanceof LinearError)) {
    return isTransportFailure(err) ? noAnswer(err) : err;
  }
  const raw = err.raw as { response?: { errors?: RawGraphQLError[]; headers?: { get(name: string): string | null } } } | undefined;
  const errors = raw?.response?.errors ?? [];
  const codes = errors.map((e) => e.extensions?.code ?? "");
  const message = errors[0]?.extensions?.userPresentableMessage ?? errors[0]?.message ?? err.message;
  const get = (name: string) => raw?.response?.headers?.get(name);
  if (err.type === "Ratelimited" || err.status === 429 || codes.includes("RATELIMITED")) return new ProviderError("rate_limited", message, retryAfterOf(get));
  if (codes.includes("AUTHENTICATION_ERROR") || err.status === 401 || err.type === "AuthenticationError") return new ProviderError("auth_expired", message);
  if (err.type === "Forbidden" || codes.includes("FORBIDDEN")) return new ProviderError("forbidden", message);
  if (errors.some((e) => /not found|could not find/i.test(`${e.message ?? ""} ${e.extensions?.userPresentableMessage ?? ""}`))) return new ProviderError("not_found", message);
  if (err.type === "InvalidInput" || err.type === "UserError" || codes.includes("INVALID_INPUT")) return new ProviderError("validation", message);
  // Answered below 500 (with a response), Linear's processing of the request ended, which a push reads to release its
  // lease; a 5xx (a gateway that stopped waiting) or a network error wrapped without a response may still be carried out.
  return typeof err.status === "number" && err.status < 500 && raw?.response ? markAnswered(new ProviderError("unknown", message)) : new ProviderError("unknown", message);
}

const toIssue = (i: IssueNode): PlannerIssue => ({
  id: i.id,
  identifier: i.identifier,
  title: i.title,
  description: i.description ?? null,
  url: i.url,
  priority: i.priority,
  priority_label: i.priorityLabel,
  state: i.state ? { id: i.state.id, name: i.state.name, type: stateTypeOf(i.state.type) } : null,
  assignee: i.assignee ? { id: i.assignee.id, name: i.assignee.displayName || i.assignee.name } : null,
  project: i.project ? { id: i.project.id, name: i.project.name } : null,
  cycle: i.cycle ? { id: i.cycle.id, number: i.cycle.number, name: i.cycle.name ?? null } : null,
  team: { id: i.team.id, key: i.team.key },
  labels: i.labels.nodes.map((l) => ({ id: l.id, name: l.name })),
  due_date: (i.dueDate as string | null | undefined) ?? null,
  created_at: i.createdAt,
  updated_at: i.updatedAt,
});

/**
 * A workflow state's type in the spec's words (spec 02: "completed or cancelled"): Linear spells it `canceled`, and
 * its Duplicate state has the type `duplicate`; both close an issue without doing it, so both are `cancelled` here.
 */
export const stateTypeOf = (type: string): string => (type === "canceled" || type === "duplicate" ? "cancelled" : type);

/** A state-type filter in the spec's words as Linear's: `cancelled` asks for both of Linear's types that mean it. */
function linearTypeFilter(f: NonNullable<IssueQuery["stateTypes"]>): L.StringComparator {
  const own = (types: readonly string[]) => [...new Set(types.flatMap((t) => (t === "cancelled" ? ["canceled", "duplicate"] : [t])))];
  return { ...(f.in ? { in: own(f.in) } : {}), ...(f.nin ? { nin: own(f.nin) } : {}) };
}

const toTeam = (t: TeamNode): PlannerTeam => ({
  id: t.id,
  key: t.key,
  name: t.name,
  projects: t.projects.nodes.map((p) => ({ id: p.id, name: p.name, state: p.state })),
  states: [...t.states.nodes].sort((a, b) => a.position - b.position).map((s) => ({ id: s.id, name: s.name, type: stateTypeOf(s.type), position: s.position, color: s.color })),
  labels: t.labels.nodes.map((l) => ({ id: l.id, name: l.name, color: l.color })),
});

const toCycle = (c: CycleNode): PlannerCycle => ({ id: c.id, number: c.number, name: c.name ?? null, starts_at: c.startsAt, ends_at: c.endsAt, progress: c.progress });

const toProject = (p: ProjectNode): PlannerProject => ({
  id: p.id, name: p.name, state: p.state, description: p.description, url: p.url, progress: p.progress,
  start_date: (p.startDate as string | null | undefined) ?? null, target_date: (p.targetDate as string | null | undefined) ?? null,
});

/** The `Planner` port over one Linear token. */
export function linear(accessToken: string): Planner {
  // One client a request, each with its own timeout signal (PROVIDER_REQUEST_TIMEOUT_SECONDS): the SDK has no timeout,
  // and its options are a client's, not a request's. The abort (a TimeoutError) is no answer: `unknown`.
  async function run<K extends keyof Answers>(op: K, variables: K extends keyof Variables ? Variables[K] : Record<string, unknown> = {} as never): Promise<Answers[K]> {
    try {
      const client = await linearClient(accessToken, timeoutSignal("Linear"));
      const res = await client.client.rawRequest<Answers[K], Record<string, unknown>>(DOCS[op], variables as Record<string, unknown>);
      return res.data as Answers[K];
    } catch (err) {
      throw await translate(err);
    }
  }
  /** A lookup whose absence Linear answers with an error ("Entity not found") is null here. */
  async function orNull<T>(fn: () => Promise<T>): Promise<T | null> {
    try {
      return await fn();
    } catch (err) {
      if (err instanceof ProviderError && err.failure === "not_found") return null;
      throw err;
    }
  }

  return {
    async viewer() {
      const { viewer } = await run("PlannerViewer");
      return { user_name: viewer.name, user_email: viewer.email ?? null, org_name: viewer.organization.name, org_logo_url: viewer.organization.logoUrl ?? null };
    },

    async teams() {
      const teams: PlannerTeam[] = [];
      let after: string | undefined;
      for (let page = 0; page < MAX_TEAM_PAGES; page++) {
        const { teams: conn } = await run("PlannerTeams", { first: TEAMS_PAGE, ...(after ? { after } : {}) });
        teams.push(...conn.nodes.map(toTeam));
        if (!conn.pageInfo.hasNextPage || !conn.pageInfo.endCursor) break;
        after = conn.pageInfo.endCursor;
      }
      return teams;
    },

    async team(teamId) {
      const res = await orNull(() => run("PlannerTeam", { id: teamId }));
      return res?.team ? toTeam(res.team) : null;
    },

    async createIssue(input: IssueCreate) {
      const { issueCreate } = await run("PlannerIssueCreate", {
        input: {
          teamId: input.teamId, title: input.title, description: input.description,
          ...(input.id ? { id: input.id } : {}),
          ...(input.projectId ? { projectId: input.projectId } : {}),
          ...(input.labelIds?.length ? { labelIds: input.labelIds } : {}),
          ...(input.stateId ? { stateId: input.stateId } : {}),
          ...(input.priority !== undefined ? { priority: input.priority } : {}),
        },
      });
      if (!issueCreate.success || !issueCreate.issue) throw new ProviderError("unknown", "Linear did not create the issue");
      return toIssue(issueCreate.issue);
    },

    async getIssue(idOrIdentifier) {
      const res = await orNull(() => run("PlannerIssue", { id: idOrIdentifier }));
      return res?.issue ? toIssue(res.issue) : null;
    },

    async issuesByIds(ids) {
      const out: PlannerIssue[] = [];
      // One request per 250 links (Linear's largest page), however many links a workspace has below that.
      for (let i = 0; i < ids.length; i += MAX_PAGE) {
        const chunk = ids.slice(i, i + MAX_PAGE);
        // Archived issues too: Linear archives completed and cancelled issues after a while (and a person can), and a
        // read by id must still see their state, or a synced ticket or link would never learn it was done.
        const { issues } = await run("PlannerIssues", { filter: { id: { in: chunk } }, first: chunk.length, includeArchived: true });
        out.push(...issues.nodes.map(toIssue));
      }
      return out;
    },

    async queryIssues(q: IssueQuery, first) {
      const filter: L.IssueFilter = {
        team: { id: { eq: q.teamId } },
        ...(q.stateTypes ? { state: { type: linearTypeFilter(q.stateTypes) } } : {}),
        ...(q.assigneeId ? { assignee: { id: { eq: q.assigneeId } } } : {}),
        ...(q.projectId ? { project: { id: { eq: q.projectId } } } : {}),
        ...(q.labelId ? { labels: { some: { id: { eq: q.labelId } } } } : {}),
        ...(q.cycleId ? { cycle: { id: { eq: q.cycleId } } } : {}),
      };
      const { issues } = await run("PlannerIssues", { filter, first });
      return issues.nodes.map(toIssue);
    },

    async searchIssues(term, opts) {
      const { searchIssues } = await run("PlannerSearch", { term, first: opts.first, ...(opts.teamId ? { teamId: opts.teamId } : {}) });
      return searchIssues.nodes.map(toIssue);
    },

    async updateIssue(id, input: IssueUpdate) {
      const { issueUpdate } = await run("PlannerIssueUpdate", {
        id,
        input: {
          ...(input.title !== undefined ? { title: input.title } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.stateId ? { stateId: input.stateId } : {}),
          ...(input.assigneeId ? { assigneeId: input.assigneeId } : {}),
          ...(input.priority !== undefined ? { priority: input.priority } : {}),
          ...(input.dueDate ? { dueDate: input.dueDate } : {}),
          ...(input.cycleId !== undefined ? { cycleId: input.cycleId } : {}),
        },
      });
      if (!issueUpdate.success || !issueUpdate.issue) throw new ProviderError("unknown", "Linear did not update the issue");
      return toIssue(issueUpdate.issue);
    },

    async createComment(input) {
      const { commentCreate } = await run("PlannerCommentCreate", { input: { id: input.id, issueId: input.issueId, body: input.body } });
      if (!commentCreate.success) throw new ProviderError("unknown", "Linear did not create the comment");
      return { id: commentCreate.comment.id, url: commentCreate.comment.url };
    },

    async getComment(id) {
      const res = await orNull(() => run("PlannerComment", { id }));
      return res?.comment ? { id: res.comment.id, url: res.comment.url } : null;
    },

    async users() {
      const { users } = await run("PlannerUsers", { first: MAX_PAGE });
      return users.nodes.filter((u) => u.active).map((u) => ({ id: u.id, name: u.name, display_name: u.displayName, email: u.email }));
    },

    async activeCycle(teamId) {
      const { team } = await run("PlannerActiveCycle", { teamId });
      return team?.activeCycle ? toCycle(team.activeCycle) : null;
    },

    async cycle(id) {
      const res = await orNull(() => run("PlannerCycle", { id, first: MAX_PAGE }));
      return res?.cycle ? { cycle: toCycle(res.cycle), issues: res.cycle.issues.nodes.map(toIssue) } : null;
    },

    async project(id) {
      const res = await orNull(() => run("PlannerProject", { id, first: 100 }));
      if (!res?.project) return null;
      const p = res.project;
      return {
        project: toProject(p),
        milestones: p.projectMilestones.nodes.map((m) => ({ id: m.id, name: m.name, target_date: (m.targetDate as string | null | undefined) ?? null })),
        issues: p.issues.nodes.map(toIssue),
      };
    },

    async projects(teamId) {
      const { team } = await run("PlannerProjects", { teamId, first: 100 });
      return (team?.projects.nodes ?? []).map(toProject);
    },
  } satisfies Planner;
}
