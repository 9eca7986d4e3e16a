import { defineRoutes } from "../../lib/route";

/** The tasks group's routes (filled in by the work of issues #21 to #23). */
export const tasksRoutes = defineRoutes({});
