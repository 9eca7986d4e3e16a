import { defineRoutes } from "../../lib/route";

/** The observability group's routes (filled in by the work of issues #21 to #23). */
export const observabilityRoutes = defineRoutes({});
