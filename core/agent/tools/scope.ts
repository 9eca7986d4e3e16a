import { Errors } from "../../error";

/**
 * An item fetched by id alone must belong to the run's workspace: the core operations check the caller's membership
 * of the item's own workspace, and this keeps a tool from acting on another workspace the caller also belongs to.
 * Such an item is "not found" here. @throws AppError NOT_FOUND.
 */
export function inWorkspace<T extends { workspace_id: string }>(ctx: { workspaceId: string }, item: T, what: string): T {
  if (item.workspace_id !== ctx.workspaceId) throw Errors.notFound(what);
  return item;
}
