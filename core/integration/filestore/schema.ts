import * as z from "zod";

/** The file store's status (spec 02 Integration status fields), plus `needs_reconnect` as the code host's. */
export const FilestoreStatus = z
  .object({
    connected: z.boolean(),
    needs_reconnect: z.boolean().describe("the grant expired or was revoked: connect again"),
    account_email: z.string().nullable(),
    account_name: z.string().nullable(),
    account_avatar_url: z.string().nullable(),
    last_synced_at: z.string().nullable(),
  })
  .meta({ id: "FilestoreStatus" });
export type FilestoreStatus = z.infer<typeof FilestoreStatus>;
