/**
 * The turn budget of one query (spec 02 Limits: max_turns, 1 to 30 model calls per query). The first run, its
 * quality repairs and a mission's (or swarm's) threads all draw on the one budget, so a query never makes more model
 * calls of the agent loop than it asked for, and its `turn` events count up across them.
 */
export class TurnBudget {
  private used = 0;

  constructor(readonly max: number) {}

  /** Turns not yet taken. */
  get left(): number {
    return this.max - this.used;
  }

  /** The next turn's number (from 1, across the query), or undefined when the budget is used up. */
  readonly take = (): number | undefined => (this.used < this.max ? ++this.used : undefined);
}
