import { defineRoutes } from "../../lib/route";

/** The memory group's routes (filled in by the work of issues #21 to #23). */
export const memoryRoutes = defineRoutes({});
