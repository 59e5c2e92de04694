import type {
  OpenAPIHono,
  RouteConfig,
  RouteConfigToTypedResponse,
} from "@hono/zod-openapi";
import type { Context } from "hono";
import type { CallerReason } from "../db/write.ts";
import { isRefusal, type Refusal } from "../refusal.ts";
import type { AppEnv } from "./env.ts";
import { DeadlineExceeded, errorResponse, onError } from "./errors.ts";
import type { Deadline } from "./request.ts";
import { type Message, MSG } from "./messages.ts";
import {
  type Check,
  type ErrorForm,
  failureOf,
  invalidOrder,
  withRequestId,
} from "./openapi.ts";
import { answerInvalid, runSteps } from "./step-run.ts";
import type { Got, Outcomes, Step, StepDeps } from "./steps.ts";

/** A route `route` (openapi.ts) made: what `mount` serves. */
export type StepRoute = RouteConfig & {
  steps: readonly Step[];
  checks: readonly Check[];
  errorForm?: ErrorForm;
};

type MaybePromise<T> = T | Promise<T>;

/**
 * What a route's handler gets: the request, and what its steps passed on.
 * It answers with one of the route's declared (non-error) responses, or
 * refuses (refusal.ts) for one of its outcomes, or for a caller the write
 * found gone (401) or demoted (403); never with an error of its own.
 */
export type StepHandler<R extends StepRoute> = (
  c: Context<AppEnv>,
  got: Got<R["steps"]>,
) => MaybePromise<
  | RouteConfigToTypedResponse<R>
  | Refusal<Outcomes<R["steps"]> | CallerReason>
>;

/** The handlers of a module of routes, by name: `Handlers<typeof routes>["update"]`. */
export type Handlers<M> = {
  [K in keyof M]: M[K] extends StepRoute ? StepHandler<M[K]> : never;
};

/** The answers of refusals: as if the request had come a moment later. */
const REFUSALS: Record<CallerReason, [401 | 403 | 404, Message]> = {
  caller_gone: [401, MSG.unauthorised],
  caller_not_permitted: [403, MSG.forbidden],
  caller_outranked: [403, MSG.cannotActOnMorePrivileged],
  // A user outside the caller's reach is, to the caller, no user.
  caller_out_of_reach: [404, MSG.userNotFound],
};

/**
 * Serves a route as its declaration says, which is the one place of its
 * behaviour: its steps run in their order (a step's answer ends the
 * request), then the handler, whose refusals are answered by the checks the
 * route pairs their reasons with (in the route's error form, with the
 * refusal's detail where the form shows one); any failure nothing foresaw
 * answers the route's 500 check's message (see errors.ts). The document is
 * the route's declaration, with its steps' checks and the HEAD twin of a
 * GET.
 */
export function mount<R extends StepRoute>(
  app: OpenAPIHono<AppEnv>,
  route: R,
  handler: StepHandler<R>,
  deps: StepDeps,
) {
  const { steps, checks, hide: _, errorForm, ...config } = route;
  const declared = { ...config, responses: withRequestId(config.responses) };
  app.openAPIRegistry.registerPath(declared);
  if (declared.method === "get") {
    app.openAPIRegistry.registerPath(headOf(declared));
  }
  const input = { invalid: answerInvalid(invalidOrder(checks)), deps };
  const failure = failureOf(checks);
  const outcomes = new Map<string, Check>();
  for (const step of steps) {
    if ("outcome" in step) outcomes.set(step.outcome, step.checks[0]);
  }
  const run = handler as (
    c: Context<AppEnv>,
    got: Record<string, unknown>,
  ) => MaybePromise<Response | Refusal>;
  const answer = async (c: Context<AppEnv>, got: Record<string, unknown>) => {
    const answer = await run(c, got);
    if (!isRefusal(answer)) return answer;
    const { reason, detail } = answer;
    const caller = REFUSALS[reason as CallerReason];
    if (caller) return errorResponse(c, caller[0], caller[1]);
    const check = outcomes.get(reason);
    if (!check) {
      throw new Error(`a refusal the route does not name: ${reason}`);
    }
    if (detail !== undefined) c.set("errorDetail", detail);
    return errorResponse(c, check.status as 404, check.message);
  };
  app.on(
    declared.method.toUpperCase(),
    declared.path.replaceAll(/\{([^}]+)\}/g, ":$1"),
    deps.scope.handler((c) => {
      c.set("failure", failure);
      if (errorForm) c.set("errorForm", errorForm);
      return runSteps(c, steps, input, answer);
    }),
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
    [N in K]: R[N] extends StepRoute ? StepHandler<R[N]> : never;
  },
  deps: StepDeps,
) {
  for (const name of Object.keys(handlers) as K[]) {
    // The signature pairs each handler with its route's type.
    mount(app, routes[name] as StepRoute, handlers[name] as never, deps);
  }
}

/**
 * The HEAD twin of a GET route, for the document: Hono answers HEAD with
 * the GET's status and headers (`ETag` included, so a 304 too) and no body.
 */
function headOf(
  get: Omit<StepRoute, "steps" | "checks" | "hide" | "errorForm">,
): Omit<StepRoute, "steps" | "checks" | "errorForm"> {
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
    responses: responses as StepRoute["responses"],
  };
}

/** A request in flight, in arrival order: a list each can leave at once. */
interface InFlight {
  at: number;
  c: Context<AppEnv>;
  expire: (answer: Response | Promise<Response>) => void;
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
      due.c.set("expired", true);
      // Answered here with the endpoint's 500, so that the answer gets the
      // request's headers and log line.
      due.expire(onError(new DeadlineExceeded(ms), due.c));
    }
    timer = first && setTimeout(sweep, Math.max(1, first.at - now));
    // The timer alone must not keep a stopping process alive.
    if (timer !== undefined) Deno.unrefTimer(timer);
  };
  return (c, serve) => {
    const at = performance.now() + ms;
    c.set("writeBy", at - statementMs);
    if (timer === undefined) {
      timer = setTimeout(sweep, ms);
      Deno.unrefTimer(timer);
    }
    // Whichever settles first, as Promise.race, without its array and
    // extra promise on every request. The timer stays: it finds nothing
    // due and stops by itself, which costs less than clearing and setting
    // one whenever the service idles between two requests.
    return new Promise<Response>((resolve, reject) => {
      const entry: InFlight = { at, c, expire: resolve };
      join(entry);
      let served;
      try {
        served = serve(c);
      } catch (e) {
        leave(entry);
        return reject(e);
      }
      Promise.resolve(served).then((res) => {
        leave(entry);
        resolve(res);
      }, (e) => {
        leave(entry);
        reject(e);
      });
    });
  };
}
