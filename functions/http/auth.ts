import { httpGroup } from "../lib/http";
import { authRoutes } from "./routes/auth";
import { ok } from "../lib/route";
import * as User from "../../core/user";

/** Access codes live with growth (its Google Sheets client too): loaded on the first redeem, not for every profile read. */
const Growth = () => import("../../core/growth");

/** Account endpoints (spec 01 Account; DESIGN.md section 5 redeem-code). */
export const handler = httpGroup(authRoutes, {
  "auth.me": ({ user }) => ok(User.toProfile(user)),
  "auth.redeemCode": async ({ user, body }) => ok(User.toProfile(await (await Growth()).redeemAccessCode(user, body.code))),
});
