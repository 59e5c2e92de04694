import type { OpenAPIHono, RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler, Next } from "hono";
import { readJsonBody } from "./body.ts";
import type { AppEnv } from "./env.ts";
import { DeadlineExceeded, onError } from "./errors.ts";
import {
  bodyOf,
  type Check,
  failureOf,
  invalidOrder,
  withRequestId,
} from "./openapi.ts";
import { answerInvalid, validationHook } from "./validation.ts";

/**
 * Serves a route as its declaration says, which is the one place of its
 * contract: its `middleware` (the guard) runs first; a `jsonBody` is read
 * once and judged by its schema; its `checks` (see `route`), in their
 * order, rank broken rules (the first listed 400 is answered), and its 500
 * check's message answers any failure nothing foresaw. The route is
 * documented whole, but zod-openapi only validates its parameters: it
 * would refuse a body whose Content-Type is not JSON, which the contract
 * reads as JSON all the same.
 */
export function mount<R extends RouteConfig & { checks?: readonly Check[] }>(
  app: OpenAPIHono<AppEnv>,
  route: R,
  handler: RouteHandler<R, AppEnv>,
) {
  const { middleware, hide: _, checks = [], ...config } = route;
  const declared = { ...config, responses: withRequestId(config.responses) };
  app.openAPIRegistry.registerPath(declared);
  if (declared.method === "get") {
    app.openAPIRegistry.registerPath(headOf(declared));
  }
  const answer = answerInvalid(invalidOrder(checks));
  const failure = failureOf(checks);
  const body = bodyOf(route.request?.body);
  // The guard is called from the layer that names the failure: one layer
  // of middleware less on every request.
  const [guard, ...more] = [middleware ?? []].flat();
  const chain: MiddlewareHandler<AppEnv>[] = [
    (c, next) => {
      c.set("failure", failure);
      return guard ? guard(c, next) : next();
    },
    ...more,
    ...(body
      ? [readJsonBody(body.schema, body.malformed!, body.compareOnly!, answer)]
      : []),
  ];
  app.openapi(
    {
      ...route,
      hide: true,
      middleware: chain,
      request: route.request && { ...route.request, body: undefined },
    },
    handler,
    // Typed for any route: it only ever answers the route's declared 400.
    validationHook(answer) as never,
  );
}

/**
 * Mounts each of `handlers` on the route of its name in `routes` (a routes
 * module, or an object of routes), in the order `handlers` lists them,
 * which is the order of the operations in the document.
 */
export function mountAll<R, K extends keyof R & string>(
  app: OpenAPIHono<AppEnv>,
  routes: R,
  handlers: {
    [N in K]: R[N] extends RouteConfig ? RouteHandler<R[N], AppEnv> : never;
  },
) {
  for (const name of Object.keys(handlers) as K[]) {
    // The signature pairs each handler with its route's type.
    mount(app, routes[name] as RouteConfig, handlers[name] as never);
  }
}

/**
 * The HEAD twin of a GET route, for the document: Hono answers HEAD with
 * the GET's status and headers (`ETag` included, so a 304 too) and no body.
 */
function headOf(get: Omit<RouteConfig, "middleware" | "hide">): RouteConfig {
  const responses = Object.fromEntries(
    Object.entries(get.responses).map(([status, r]) => {
      const { description, headers } = r as {
        description: string;
        headers?: unknown;
      };
      return [status, headers ? { description, headers } : { description }];
    }),
  );
  return {
    ...get,
    method: "head",
    operationId: get.operationId && `${get.operationId}Head`,
    summary: get.summary && `${get.summary}: headers only (HEAD)`,
    description:
      `As \`GET ${get.path}\` with the same checks, status and headers, without a body.`,
    responses: responses as RouteConfig["responses"],
  };
}

/** The deadline of requests, as middleware. */
export type Deadline = (c: Context<AppEnv>, next: Next) => Promise<void>;

/** A request in flight, in arrival order: a list each can leave at once. */
interface InFlight {
  at: number;
  expire: () => void;
  prev?: InFlight;
  next?: InFlight;
}

/**
 * Answers with the endpoint's failure message once `ms` pass, whatever is
 * still pending (a database that stopped answering): no request hangs.
 * Requests share the one timeout, so they expire in arrival order: one
 * timer serves all that are in flight (a timer per request costs more than
 * the rest of the middleware together), and they wait in a linked list that
 * each leaves as it ends: an entry that left is garbage at once, where a
 * Set keeps deleted entries reachable and busies the collector on every
 * request. Work left pending goes on in the background, so `writeBy` leaves
 * a whole statement (at most `statementMs`) before the deadline: the store
 * begins no write past it, so what the client was told failed is not
 * applied later.
 */
export function deadline(ms: number, statementMs: number): Deadline {
  let first: InFlight | undefined;
  let last: InFlight | undefined;
  const join = (entry: InFlight) => {
    entry.prev = last;
    if (last) last.next = entry;
    else first = entry;
    last = entry;
  };
  const leave = (entry: InFlight) => {
    if (entry.prev) entry.prev.next = entry.next;
    else if (first === entry) first = entry.next;
    else return; // left already (it expired)
    if (entry.next) entry.next.prev = entry.prev;
    else last = entry.prev;
    entry.prev = entry.next = undefined;
  };
  let timer: ReturnType<typeof setTimeout> | undefined;
  const sweep = () => {
    const now = performance.now();
    while (first && first.at <= now) {
      const due = first;
      leave(due);
      due.expire();
    }
    timer = first && setTimeout(sweep, Math.max(1, first.at - now));
    // The timer alone must not keep a stopping process alive.
    if (timer !== undefined) Deno.unrefTimer(timer);
  };
  return async (c, next) => {
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    const entry: InFlight = {
      at: performance.now() + ms,
      expire: () => {
        c.set("expired", true);
        reject(new DeadlineExceeded(ms));
      },
    };
    c.set("writeBy", entry.at - statementMs);
    join(entry);
    if (timer === undefined) {
      timer = setTimeout(sweep, ms);
      Deno.unrefTimer(timer);
    }
    try {
      // Whichever settles first, as Promise.race, without its array and
      // extra promise on every request.
      next().then(resolve, reject);
      await promise;
    } catch (e) {
      if (!(e instanceof DeadlineExceeded)) throw e;
      // Answered here, not where Hono would catch it (outside the request
      // scope), so that the 500 gets the answer's headers.
      c.res = await onError(e, c);
    } finally {
      // The timer stays: it finds nothing due and stops by itself, which
      // costs less than clearing and setting one whenever the service idles
      // between two requests.
      leave(entry);
    }
  };
}
