/** Partition key of a workspace: every item of the workspace lives under it (DESIGN.md 3, single table). */
export const partitionOf = (workspaceId: string) => `ws#${workspaceId}`;
