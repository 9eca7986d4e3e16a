import * as Recommendation from "../recommendation";
import { RECOMMENDATION_TRANSITIONS, type RecommendationStatus } from "../recommendation/status";
import { AppError } from "../error";

/**
 * The shortest walk from `from` to implemented through the recommendation table (spec 01), never through rejected:
 * suggested → accepted → in_progress → implemented, accepted → in_progress → implemented, in_progress → implemented.
 * Empty for implemented and rejected (a closed issue leaves those alone, spec 02).
 */
export function pathToImplemented(from: RecommendationStatus): RecommendationStatus[] {
  if (from === "implemented" || from === "rejected") return [];
  const prev = new Map<RecommendationStatus, RecommendationStatus>();
  const queue: RecommendationStatus[] = [from];
  const seen = new Set<RecommendationStatus>([from]);
  while (queue.length) {
    const at = queue.shift()!;
    for (const next of RECOMMENDATION_TRANSITIONS[at]) {
      if (seen.has(next) || next === "rejected") continue;
      seen.add(next);
      prev.set(next, at);
      if (next === "implemented") {
        const path: RecommendationStatus[] = [];
        for (let s: RecommendationStatus | undefined = next; s && s !== from; s = prev.get(s)) path.unshift(s);
        return path;
      }
      queue.push(next);
    }
  }
  return [];
}

/**
 * A linked issue closed as done (spec 01 "Status also moves to implemented when a linked external issue closes"):
 * move the recommendation to implemented through the existing status operation, one allowed step at a time (each a
 * conditional write), unless it is implemented or rejected. A concurrent change is re-read and walked again once.
 * A recommendation deleted since its issue was linked (links outlive it) has nothing to move: the sync goes on.
 * @returns true when the recommendation moved
 */
export async function markImplemented(userId: string, recommendationId: string): Promise<boolean> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const current = await Recommendation.get(userId, recommendationId);
      const path = pathToImplemented(current.status);
      if (path.length === 0) return false;
      for (const status of path) await Recommendation.changeStatus(userId, recommendationId, { status });
      return true;
    } catch (err) {
      if (err instanceof AppError && err.code === "NOT_FOUND") return false;
      if (!(err instanceof AppError) || (err.code !== "CONFLICT" && err.code !== "INVALID_TRANSITION")) throw err;
    }
  }
  return false;
}
