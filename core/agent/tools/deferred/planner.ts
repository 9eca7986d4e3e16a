/** The planner operations the planner tools call (loaded on first use: ../lazy.ts). */
export { allLinks, applyIssue, createIssue, createOrFind, selectedTeam, toLinkView, v4From, withPlanner } from "../../../integration/planner";
