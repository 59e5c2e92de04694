import type { Context, Handler } from "hono";
import type { Sessions } from "../auth/session.ts";
import type { Logger } from "../log.ts";
import type { AppEnv } from "./env.ts";
import type { Deadline } from "./endpoint.ts";
import { onError } from "./errors.ts";
import { clientIp } from "./origin.ts";
import { answerHeaders } from "./security-headers.ts";

/** What answers a request inside its scope. */
export type Serve = (c: Context<AppEnv>) => Response | Promise<Response>;

/** The handler of every route, made by `RequestScope.handler`. */
export type ScopedHandler = (c: Context<AppEnv>) => Promise<Response>;

/**
 * What every request is served in: its id, the services guards and
 * handlers reach through the context, its deadline (`deadline`), the id and
 * security headers of its answer (`answerHeaders`, on the deadline's 500
 * and every other failure too) and one access log line.
 *
 * Each route's handler enters it (`handler`), rather than the app running
 * it as middleware: with one handler per route Hono answers without its
 * middleware chain (two async steps and their closures less on every
 * request). `assertCovers` makes a route registered without it an error at
 * start-up, not a request without its headers.
 */
export interface RequestScope {
  handler(serve: Serve): ScopedHandler;
  /** Throws unless every route but `ALL` middleware enters the scope. */
  assertCovers(
    routes: readonly { method: string; path: string; handler: Handler }[],
  ): void;
}

/** What a client's own X-Request-Id may hold to be believed (from a trusted proxy). */
const FORWARDED_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestScope(
  { log, sessions, trustProxy, deadline }: {
    log: Logger;
    sessions: Sessions;
    trustProxy: boolean;
    deadline: Deadline;
  },
): RequestScope {
  const headers = answerHeaders({ trustProxy });
  // A per-process prefix and a counter: unique enough for logs, and far
  // cheaper per request than a random UUID.
  const instance = crypto.randomUUID().slice(0, 8);
  let requests = 0;
  const made = new WeakSet<Handler>();

  const serveIn = async (c: Context<AppEnv>, serve: Serve) => {
    // A client's own X-Request-Id is believed only from a trusted proxy;
    // otherwise any client could forge the correlation of log lines.
    const forwarded = trustProxy ? c.req.header("x-request-id") : undefined;
    const requestId = forwarded && FORWARDED_ID.test(forwarded)
      ? forwarded
      : `${instance}-${++requests}`;
    c.set("requestId", requestId);
    c.set("log", log);
    c.set("sessions", sessions);
    // Whole milliseconds are what the line says: Date.now is a builtin,
    // performance.now a call into the runtime.
    const started = log.enabled("info") ? Date.now() : -1;
    let res: Response;
    try {
      res = await deadline(c, serve);
    } catch (e) {
      // What Hono's error handler would answer, here so that the answer
      // gets its headers and its log line.
      res = await onError(e as Error, c);
    }
    res = await headers(c, requestId, res);
    if (started >= 0) {
      log.request({
        requestId,
        method: c.req.method,
        path: c.req.path,
        status: res.status,
        ip: clientIp(c, trustProxy),
        ms: Math.max(0, Date.now() - started),
      });
    }
    return res;
  };

  return {
    handler(serve) {
      const handler: ScopedHandler = (c) => serveIn(c, serve);
      made.add(handler);
      return handler;
    },
    assertCovers(routes) {
      const outside = routes.filter((r) =>
        r.method !== "ALL" && !made.has(r.handler)
      );
      if (outside.length > 0) {
        throw new Error(
          `routes outside the request scope: ${
            outside.map((r) => `${r.method} ${r.path}`).join(", ")
          }`,
        );
      }
    },
  };
}
