/**
 * Several stand-in providers in one process: `msw` servers do not compose (the last to listen intercepts alone), so
 * the stand-ins' handlers are served by one server.
 */
import { setupServer, type SetupServer } from "msw/node";
import type { RequestHandler } from "msw";

/** Listen with every stand-in's handlers on one server; close it with `close()`. */
export function listenTogether(...standIns: { mswHandlers(): RequestHandler[] }[]): SetupServer {
  const server = setupServer(...standIns.flatMap((s) => s.mswHandlers()));
  server.listen({ onUnhandledFrame: "bypass" });
  return server;
}

/**
 * What every stand-in provider shares: listening alone or through {@link listenTogether}, and failures a test queues
 * (`fail`) that the handlers consume (`takeFailure`), each answering `times` requests (default 1).
 */
export abstract class StandIn<F extends { times?: number }> {
  protected failures: F[] = [];
  private server: SetupServer | undefined;

  /** The provider's request handlers. */
  protected abstract handlers(): RequestHandler[];

  /** Start intercepting (other traffic, DynamoDB Local and S3, passes through). */
  listen(): this {
    this.server = setupServer(...this.handlers());
    this.server.listen({ onUnhandledFrame: "bypass" });
    return this;
  }

  close(): void {
    this.server?.close();
  }

  /**
   * The stand-in's handlers, for one `msw` server shared with other stand-ins: two servers in one process do not
   * compose, the last one listening answers alone.
   */
  mswHandlers(): RequestHandler[] {
    return this.handlers();
  }

  /** Answer the next request(s) the failure matches with it (rate limits, revoked tokens, lost answers). */
  fail(failure: F): void {
    this.failures.push({ times: 1, ...failure });
  }

  /** Drop every queued failure (one a test queued for more requests than were made). */
  clearFailures(): void {
    this.failures = [];
  }

  /** The first queued failure `matches` accepts, counted as used once (dropped when its `times` run out). */
  protected takeFailure(matches: (f: F) => boolean): F | undefined {
    const failure = this.failures.find(matches);
    if (!failure) return undefined;
    failure.times = (failure.times ?? 1) - 1;
    if (failure.times <= 0) this.failures = this.failures.filter((f) => f !== failure);
    return failure;
  }
}
