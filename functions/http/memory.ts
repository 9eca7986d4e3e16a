import { httpGroup } from "../lib/http";
import { memoryRoutes } from "./routes/memory";
import { noContent, ok } from "../lib/route";
import * as Memory from "../../core/memory";

/** Memory: search, profile, and seeing and deleting what is remembered (spec 01 Memory; docs/decisions.md "Memory"). */
export const handler = httpGroup(memoryRoutes, {
  "memory.search": async ({ user, query }) => ok(await Memory.search(user.id, query)),
  "memory.profile": async ({ user, query }) => ok(await Memory.profile(user.id, query)),
  "memory.list": async ({ user, query }) => ok(await Memory.list(user.id, query)),
  "memory.forgetAll": async ({ user, query }) => ok(await Memory.forgetAll(user.id, query)),
  "memory.forget": async ({ user, params }) => {
    await Memory.forget(user.id, params.memory_id);
    return noContent();
  },
});
