import type { Context, ErrorHandler, NotFoundHandler } from "hono";
import { TrieRouter } from "hono/router/trie-router";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import type { AppEnv } from "./env.ts";
import { type Message, MSG } from "./messages.ts";

/** A request still pending at its deadline: answered with its endpoint's 500. */
export class DeadlineExceeded extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/** The one error body of the service. */
export type ErrorBody = { error: string };

/**
 * An error answer written by shared middleware (body limit, 404, 405): a
 * handler returns `c.json({ error }, status)` itself, which its route's
 * declaration types.
 */
export const errorResponse = (
  c: Context,
  status: ContentfulStatusCode,
  error: Message,
  headers?: Record<string, string>,
) => {
  // A route of another protocol (SCIM) answers every check in its own form.
  const form = (c as Context<AppEnv>).get("errorForm");
  return form
    ? form.respond(c, status, error, headers) as ReturnType<
      typeof c.json<ErrorBody>
    >
    : c.json<ErrorBody>({ error }, status, headers);
};

/**
 * The one handler of failures nothing foresaw: the endpoint's own 500
 * message goes to the client, the cause goes to the log under the request
 * id, never to the client.
 */
export const onError: ErrorHandler<AppEnv> = (err, c) => {
  const failure = c.get("failure") ?? MSG.internal;
  if (err instanceof DeadlineExceeded) {
    // Expected under a stalled client or database: one line, no stack (a
    // slow client must not be able to flood the log).
    c.get("log")?.warn("request deadline passed", {
      requestId: c.get("requestId"),
      method: c.req.method,
      path: c.req.path,
      answered: failure,
      afterMs: err.ms,
    });
    return errorResponse(c, 500, failure);
  }
  if (c.get("expired")) {
    // Work the deadline abandoned failed later (a stalled body that was
    // cut off): the request was answered and logged already.
    return errorResponse(c, 500, failure);
  }
  c.get("log")?.error("request failed", {
    requestId: c.get("requestId"),
    method: c.req.method,
    path: c.req.path,
    answered: failure,
    cause: err,
  });
  return errorResponse(c, 500, failure);
};

/**
 * 404, or 405 with `Allow` when the path is known under other methods
 * (here rather than in middleware: only requests that found no route pay
 * for it).
 */
export function onNotFound(
  routes: () => readonly { method: string; path: string }[],
): NotFoundHandler<AppEnv> {
  let known: TrieRouter<string[]> | undefined;
  const methodsOf = (path: string) => {
    if (!known) {
      const byPath = new Map<string, Set<string>>();
      for (const route of routes()) {
        if (route.method === "ALL" || route.method === "HEAD") continue;
        const methods = byPath.get(route.path) ?? new Set();
        methods.add(route.method);
        if (route.method === "GET") methods.add("HEAD");
        byPath.set(route.path, methods);
      }
      known = new TrieRouter();
      for (const [p, methods] of byPath) known.add("ALL", p, [...methods]);
    }
    return new Set(known.match("ALL", path)[0].flatMap(([m]) => m));
  };
  return (c) => {
    const allowed = methodsOf(c.req.path);
    if (allowed.size === 0 || allowed.has(c.req.method)) {
      return errorResponse(c, 404, MSG.notFound);
    }
    return errorResponse(c, 405, MSG.methodNotAllowed, {
      Allow: [...allowed].join(", "),
    });
  };
}
