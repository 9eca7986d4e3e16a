import * as z from "zod";

/**
 * The ticket tool's status (spec 02 Integration status fields: connected, connected_at, cloud_id), plus
 * `needs_reconnect` (as the code host's) and the site's name and address, so the user can verify the connected site.
 */
export const TicketsStatus = z
  .object({
    connected: z.boolean(),
    connected_at: z.string().nullable().describe("when the current (or, after a disconnect, the last) grant was made"),
    cloud_id: z.string().nullable().describe("the Atlassian site the grant reaches"),
    needs_reconnect: z.boolean().describe("the grant expired or was revoked: connect again"),
    site_name: z.string().nullable(),
    site_url: z.string().nullable(),
  })
  .meta({ id: "TicketsStatus" });
export type TicketsStatus = z.infer<typeof TicketsStatus>;

/** `GET /projects` query: one Jira page (50 projects), `search` matched by Jira against the key and name. */
export const TicketProjectsQuery = z.object({
  workspace_id: z.uuid(),
  search: z.string().trim().max(200).optional(),
  page: z.coerce.number().int().min(1).max(1000).default(1),
});
export type TicketProjectsQuery = z.infer<typeof TicketProjectsQuery>;

export const TicketProjectView = z.object({
  id: z.string(),
  key: z.string(),
  name: z.string(),
  project_type_key: z.string().nullable(),
  style: z.string().nullable().describe("classic (company-managed) or next-gen (team-managed)"),
  avatar_url: z.string().nullable(),
});

export const TicketProjectList = z
  .object({ projects: z.array(TicketProjectView), page: z.int(), has_more: z.boolean(), total: z.int() })
  .meta({ id: "TicketProjectList" });
export type TicketProjectList = z.infer<typeof TicketProjectList>;
