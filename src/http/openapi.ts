import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type {
  ClientErrorStatusCode,
  ServerErrorStatusCode,
} from "hono/utils/http-status";
import type { AppEnv } from "./env.ts";
import { invalidQueryParameter, type Message, MSG } from "./messages.ts";

/** Response headers, as the document declares them. */
export type ResponseHeaders = Record<
  string,
  {
    description: string;
    schema: { type: "string" | "integer"; enum?: string[] };
  }
>;

/** A JSON response declaration, with the headers it carries, if any. */
export const json = <T extends z.ZodType>(
  schema: T,
  description: string,
  headers?: ResponseHeaders,
) => ({
  description,
  content: { "application/json": { schema } },
  ...headers && { headers },
});

/** A response header of text, as the document declares it. */
export const textHeader = (description: string) => ({
  description,
  schema: { type: "string" as const },
});

/**
 * The header every answer carries (see request.ts): declared on every
 * response, so that clients see it typed and find it in the document.
 */
export const REQUEST_ID_HEADER: ResponseHeaders = {
  "X-Request-Id": textHeader(
    "The request's id, named in the service's log lines about it: a trusted proxy's `X-Request-Id` (1..128 characters of `A-Z a-z 0-9 . _ : -`), else one the service made",
  ),
};

/** These responses, each declaring `X-Request-Id` beside its own headers. */
export const withRequestId = (
  responses: RouteConfig["responses"],
): RouteConfig["responses"] =>
  Object.fromEntries(
    Object.entries(responses).map(([status, r]) => {
      const { headers } = r as { headers?: ResponseHeaders };
      return [status, { ...r, headers: { ...REQUEST_ID_HEADER, ...headers } }];
    }),
  );

export type ErrorStatus = ClientErrorStatusCode | ServerErrorStatusCode;

/**
 * One check of an endpoint: the condition that fails it (`when`, as the
 * document states it: lower case, no final stop) and the status and message
 * that answer it, with the headers of that answer if it has any.
 */
export interface Check<
  S extends ErrorStatus = ErrorStatus,
  M extends Message = Message,
> {
  readonly status: S;
  readonly message: M;
  readonly when: string;
  readonly headers?: ResponseHeaders;
}

export const check = <const S extends ErrorStatus, const M extends Message>(
  status: S,
  message: M,
  when: string,
  headers?: ResponseHeaders,
): Check<S, M> => ({ status, message, when, ...headers && { headers } });

/** The last check of an endpoint: its 500, the message of any failure nothing foresaw. */
export const failure = <const M extends Message>(
  message: M,
  when = "any other failure",
) => check(500, message, when);

/** The error response of one status: its schema names exactly these messages. */
type ErrorResponse<M extends Message> = {
  description: string;
  headers?: ResponseHeaders;
  content: {
    "application/json": {
      schema: z.ZodObject<{ error: z.ZodEnum<{ [K in M]: K }> }>;
      examples: Record<string, { value: { error: M } }>;
    };
  };
};

/** The error responses of these checks, one per status. */
export type CheckResponses<C extends Check> = {
  [S in C["status"]]: ErrorResponse<Extract<C, { status: S }>["message"]>;
};

/**
 * A route as `createRoute` makes it, with its checks in the order they run:
 * the one list that ranks broken rules (the first listed is answered, see
 * `mount`), names the endpoint's failure (its 500), writes the error
 * responses (each status's schema names exactly its messages) and appends
 * the numbered check order to the description.
 */
export function route<
  const C extends Check,
  P extends string,
  R extends RouteDraft & { path: P },
>(config: R & { checks: readonly C[] }) {
  const { checks, description, responses } = config;
  const where = `${config.method.toUpperCase()} ${config.path}`;
  if (new Set(failuresOf(checks)).size > 1) {
    throw new Error(`${where}: more than one 500 message`);
  }
  for (const { status } of checks) {
    if (status in responses) {
      throw new Error(`${where}: ${status} both declared and checked`);
    }
  }
  return createRoute({
    ...config,
    description: `${description}\n\n${checkOrder(checks)}`,
    responses: { ...responses, ...checkResponses(checks) } as
      & R["responses"]
      & CheckResponses<C>,
  });
}

export type RouteDraft = Omit<RouteConfig, "path" | "description"> & {
  description: string;
};

/** The 400 messages of these checks, in their order, each once. */
export const invalidOrder = (checks: readonly Check[]): readonly Message[] => [
  ...new Set(checks.filter((c) => c.status === 400).map((c) => c.message)),
];

const failuresOf = (checks: readonly Check[]) =>
  checks.filter((c) => c.status === 500).map((c) => c.message);

/** The message of any failure nothing foresaw: the 500 check's. */
export const failureOf = (checks: readonly Check[]): Message =>
  failuresOf(checks)[0] ?? MSG.internal;

const sentence = (text: string) => text[0].toUpperCase() + text.slice(1);

/** Opens the check order at the end of an operation's description. */
export const CHECK_ORDER =
  "Checks, in order (a request that fails several is answered by the first):";

/** The check order in the description: a numbered list. */
const checkOrder = (checks: readonly Check[]) =>
  `${CHECK_ORDER}\n\n` +
  checks.map((c, i) => `${i + 1}. ${c.status} \`${c.message}\`: ${c.when}.`)
    .join("\n");

/** Check numbers, runs of three or more as ranges: `3, 5-14`. */
function numbers(positions: number[]) {
  const runs: [number, number][] = [];
  for (const n of positions) {
    const last = runs.at(-1);
    if (last && last[1] === n - 1) last[1] = n;
    else runs.push([n, n]);
  }
  return runs.flatMap(([a, b]) =>
    b - a > 1 ? [`${a}-${b}`] : a === b ? [`${a}`] : [`${a}`, `${b}`]
  ).join(", ");
}

/**
 * One error response per status of the checks, its schema naming exactly
 * their messages. A status of several checks refers to their numbers in
 * the description, and each of its examples says when it is answered.
 */
function checkResponses(checks: readonly Check[]) {
  const numbered = checks.map((c, i) => ({ ...c, n: i + 1 }));
  return Object.fromEntries(
    [...Map.groupBy(numbered, (c) => c.status)].map(([status, all]) => {
      const messages = [...new Set(all.map((c) => c.message))] as [
        Message,
        ...Message[],
      ];
      const when = (m: Message) =>
        sentence(
          all.filter((c) => c.message === m).map((c) => c.when).join("; "),
        );
      const headers = Object.assign({}, ...all.map((c) => c.headers ?? {}));
      return [status, {
        description: all.length === 1
          ? sentence(all[0].when)
          : `One of checks ${
            numbers(all.map((c) => c.n))
          } in the operation's description fails (each example says when)`,
        ...Object.keys(headers).length > 0 && { headers },
        content: {
          "application/json": {
            schema: z.object({ error: z.enum(messages) }),
            examples: Object.fromEntries(
              messages.map((m) => [m, {
                ...all.length > 1 && { summary: when(m) },
                value: { error: m },
              }]),
            ),
          },
        },
      }];
    }),
  );
}

/**
 * The checks of a query: `Invalid query parameter: <name>` for each of the
 * schema's parameters, in the schema's order, which is the order they are
 * checked in.
 */
export const queryChecks = <S extends z.ZodRawShape>(query: z.ZodObject<S>) =>
  Object.keys(query.shape).map((name) =>
    check(
      400,
      invalidQueryParameter(name as Extract<keyof S, string>),
      `\`${name}\` has a bad value`,
    )
  );

/**
 * Middleware that runs before an endpoint's own checks (session, role,
 * origin), with the checks it makes: a route lists the guard in its
 * `middleware` and its checks first in its `checks`.
 */
export type Guard<C extends Check> = MiddlewareHandler<AppEnv> & {
  checks: readonly C[];
};

export const guard = <const C extends Check>(
  checks: readonly C[],
  middleware: MiddlewareHandler<AppEnv>,
): Guard<C> => Object.assign(middleware, { checks });

/**
 * What the contract makes of a body that is not JSON: the schema judges
 * it as `null` (`invalid`, answered with the route's own 400), or it is a
 * failure of the endpoint (`failure`, its 500).
 */
export type Malformed = "invalid" | "failure";

const MALFORMED: unique symbol = Symbol("malformed");
const COMPARE_ONLY: unique symbol = Symbol("compare only");

/**
 * A required JSON request body of this schema. Bodies are read as JSON
 * whatever their Content-Type says (see `mount`), up to 64 KiB. Text
 * PostgreSQL cannot store (NUL) answers the schema's bad-body message,
 * unless the body's values are only compared (`compareOnly`: a login
 * password with NUL is one that does not match).
 */
export const jsonBody = <T extends z.ZodType>(
  schema: T,
  malformed: Malformed,
  { compareOnly = false } = {},
) => ({
  required: true,
  content: { "application/json": { schema } },
  // Symbols: not part of the OpenAPI document.
  [MALFORMED]: malformed,
  [COMPARE_ONLY]: compareOnly,
});

/**
 * An optional JSON body the handler reads and judges itself, where the
 * contract checks it after other checks (a lookup): documented, not read
 * before the handler. See `readJsonValue`.
 */
export const handlerBody = <T extends z.ZodType>(schema: T) => ({
  required: false,
  content: { "application/json": { schema } },
});

/** The schema and malformed-body rule of a `jsonBody` declaration (not a `handlerBody`). */
export const bodyOf = (declared: unknown) => {
  const body = declared as ReturnType<typeof jsonBody> | undefined;
  return body?.[MALFORMED] !== undefined && {
    schema: body.content["application/json"].schema as z.ZodType,
    malformed: body[MALFORMED],
    compareOnly: body[COMPARE_ONLY],
  };
};

/** The body is read: where a route lists it, the 413 of a larger body. */
export const bodyTooLarge = check(
  413,
  MSG.bodyTooLarge,
  "the body is larger than 64 KiB",
);

/**
 * What a protected operation takes: the session cookie, or an API key as
 * `Authorization: Bearer uak_...` (either alone).
 */
export const sessionOrKey: Record<string, string[]>[] = [
  { cookieAuth: [] },
  { bearerAuth: [] },
];
