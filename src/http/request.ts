import type { Context, MiddlewareHandler } from "hono";
import type { Sessions } from "../auth/session.ts";
import type { Logger } from "../log.ts";
import type { AppEnv } from "./env.ts";
import type { Deadline } from "./endpoint.ts";
import { clientIp } from "./origin.ts";
import { answerHeaders } from "./security-headers.ts";

/** What a client's own X-Request-Id may hold to be believed (from a trusted proxy). */
const FORWARDED_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * What every request starts with, in one layer of middleware (each layer,
 * and each async call in it, costs time on every request): its id, the
 * services guards and handlers reach through the context, its deadline
 * (`deadline`), the id and security headers of its answer (`answerHeaders`,
 * around the deadline so that its 500 carries them too) and one access log
 * line.
 */
export function requestScope(
  { log, sessions, trustProxy, deadline }: {
    log: Logger;
    sessions: Sessions;
    trustProxy: boolean;
    deadline: Deadline;
  },
): MiddlewareHandler<AppEnv> {
  const headers = answerHeaders({ trustProxy });
  // A per-process prefix and a counter: unique enough for logs, and far
  // cheaper per request than a random UUID.
  const instance = crypto.randomUUID().slice(0, 8);
  let requests = 0;
  const logged = async (
    c: Context<AppEnv>,
    requestId: string,
    started: number,
    answered: Promise<unknown>,
  ) => {
    await answered;
    log.request({
      requestId,
      method: c.req.method,
      path: c.req.path,
      status: c.res.status,
      ip: clientIp(c, trustProxy),
      ms: Math.round(performance.now() - started),
    });
  };
  return (c, next) => {
    // A client's own X-Request-Id is believed only from a trusted proxy;
    // otherwise any client could forge the correlation of log lines.
    const forwarded = trustProxy ? c.req.header("x-request-id") : undefined;
    const requestId = forwarded && FORWARDED_ID.test(forwarded)
      ? forwarded
      : `${instance}-${++requests}`;
    c.set("requestId", requestId);
    c.set("log", log);
    c.set("sessions", sessions);
    const inner = () => deadline(c, next);
    if (!log.enabled("info")) return headers(c, requestId, inner);
    return logged(
      c,
      requestId,
      performance.now(),
      headers(c, requestId, inner),
    );
  };
}
