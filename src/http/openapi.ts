import { createRoute, type RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type {
  ClientErrorStatusCode,
  ServerErrorStatusCode,
} from "hono/utils/http-status";
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
 * The header every answer carries (see request.ts): declared once, as the
 * component `RequestId` (app.ts registers it), and named by every response,
 * so that clients see it typed and find it in the document without its
 * text repeated in each of the hundreds of responses.
 */
export const REQUEST_ID_HEADER = textHeader(
  "The request's id, named in the service's log lines about it: a trusted proxy's `X-Request-Id` (1..128 characters of `A-Z a-z 0-9 . _ : -`), else one the service made",
);
const REQUEST_ID_REF = { $ref: "#/components/headers/RequestId" };

/** These responses, each declaring `X-Request-Id` beside its own headers. */
export const withRequestId = (
  responses: RouteConfig["responses"],
): RouteConfig["responses"] =>
  Object.fromEntries(
    Object.entries(responses).map(([status, r]) => {
      const { headers } = r as { headers?: ResponseHeaders };
      return [status, {
        ...r,
        headers: { "X-Request-Id": REQUEST_ID_REF, ...headers },
      }];
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

/**
 * The last step of an endpoint: its 500, the message of any failure nothing
 * foresaw, answered by the one error handler (errors.ts).
 */
export const failure = <const M extends Message>(
  message: M,
  when = "any other failure",
) => ({ checks: [check(500, message, when)] as const });

/**
 * How a route of another protocol answers its checks (SCIM's error schema,
 * src/scim/errors.ts): every error answer of the route, its 500 included,
 * and the document's error responses. Routes without one answer `{error}`.
 */
export interface ErrorForm {
  respond(
    c: Context,
    status: number,
    message: Message,
    headers?: Record<string, string>,
  ): Response;
  /** The error response of `status` in the document, for these checks. */
  document(status: number, checks: readonly Check[]): {
    description: string;
    content: Record<string, { schema: z.ZodType; examples?: unknown }>;
    headers?: ResponseHeaders;
  };
}

/**
 * What the document reads of a step (steps.ts): its checks, and what of
 * the request it reads. Its type in full is steps.ts's, which builds on the
 * checks declared here.
 */
export interface RouteStep {
  readonly checks: readonly Check[];
  readonly request?: RouteConfig["request"];
}

/**
 * A route as `createRoute` makes it, with its steps (see steps.ts) and their
 * checks in the order they run: the one list that runs the endpoint's
 * checks, ranks broken rules (the first listed 400 is answered), names the
 * endpoint's failure (its 500), writes the error responses (each status's
 * schema names exactly its messages) and appends the numbered check order
 * to the description.
 */
export function route<
  const S extends readonly RouteStep[],
  P extends string,
  R extends RouteDraft & { path: P },
>(config: R & { steps: S; errorForm?: ErrorForm }) {
  // A route of the admin API declares its permission (auth/guards.ts's
  // adminRoute), which the document shows as `x-permission`, not as these.
  const { steps, errorForm, permission: _p, own: _o, admin: _a, ...declared } =
    config as typeof config & {
      permission?: unknown;
      own?: unknown;
      admin?: unknown;
    };
  const { description, responses } = config;
  // What the steps read is declared by them (the body's schema, the query's).
  const request = Object.assign(
    {},
    config.request,
    ...steps.map((s) => "request" in s ? s.request : {}),
  );
  const checks = [...new Set(steps.flatMap((s) => s.checks))];
  const where = `${config.method.toUpperCase()} ${config.path}`;
  if (new Set(failuresOf(checks)).size > 1) {
    throw new Error(`${where}: more than one 500 message`);
  }
  for (const { status } of checks) {
    if (status in responses) {
      throw new Error(`${where}: ${status} both declared and checked`);
    }
  }
  const made = createRoute({
    ...declared,
    ...Object.keys(request).length > 0 && { request },
    description: checks.length
      ? `${description}\n\n${checkOrder(checks)}`
      : description,
    responses: {
      ...responses,
      ...(errorForm
        ? Object.fromEntries(
          [...Map.groupBy(checks, (c) => c.status)].map((
            [status, all],
          ) => [status, errorForm.document(status, all)]),
        )
        : checkResponses(checks)),
    } as R["responses"],
  });
  return { ...made, steps, checks, ...errorForm && { errorForm } } as
    & Omit<typeof made, "steps">
    & { steps: S; checks: readonly Check[]; errorForm?: ErrorForm };
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
