import { z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import { invalidQueryParameter, type Message, MSG } from "./messages.ts";

/** A JSON response declaration. */
export const json = <T extends z.ZodType>(schema: T, description: string) => ({
  description,
  content: { "application/json": { schema } },
});

/**
 * An error response declaration. Its schema names the exact messages the
 * status can carry, so the generated client types know them, and a handler
 * that answers any other message does not type-check. A route's 400 lists
 * its messages in the order the contract checks them: when a request breaks
 * several rules, the first listed is answered (see `mount`). Its 500 names
 * the one message of every failure the endpoint does not foresee.
 */
export const errors = <const M extends readonly [Message, ...Message[]]>(
  description: string,
  ...messages: M
) => ({
  description,
  content: {
    "application/json": {
      schema: z.object({ error: z.enum(messages) }),
      examples: Object.fromEntries(
        messages.map((m) => [m, { value: { error: m } }]),
      ),
    },
  },
});

type ErrorsDeclaration = ReturnType<typeof errors>;

type QueryMessage<S extends z.ZodRawShape> = ReturnType<
  typeof invalidQueryParameter<Extract<keyof S, string>>
>;

/**
 * The 400 of a query: `Invalid query parameter: <name>` for each of the
 * schema's parameters, in the schema's order, which is the order they are
 * checked in (when several are bad, the first is named).
 */
export const queryErrors = <S extends z.ZodRawShape>(
  description: string,
  query: z.ZodObject<S>,
) =>
  errors(
    description,
    ...Object.keys(query.shape).map(invalidQueryParameter) as [
      QueryMessage<S>,
      ...QueryMessage<S>[],
    ],
  );

/** The messages an `errors` declaration lists, in its order. */
export const messagesOf = (declared: unknown): readonly Message[] =>
  (declared as ErrorsDeclaration | undefined)?.content["application/json"]
    .schema.shape.error.options ?? [];

/**
 * Middleware that runs before an endpoint's own checks (session, role,
 * origin), with the responses it may answer: a route lists the guard in
 * its `middleware` and spreads its `responses`.
 */
export type Guard<R> = MiddlewareHandler<AppEnv> & { responses: R };

export const guard = <R>(
  responses: R,
  check: MiddlewareHandler<AppEnv>,
): Guard<R> => Object.assign(check, { responses });

/**
 * What the contract makes of a body that is not JSON: the schema judges
 * it as `null` (`invalid`, answered with the route's own 400), or it is a
 * failure of the endpoint (`failure`, its 500).
 */
export type Malformed = "invalid" | "failure";

const MALFORMED: unique symbol = Symbol("malformed");

/**
 * A required JSON request body of this schema. Bodies are read as JSON
 * whatever their Content-Type says (see `mount`), up to 64 KiB.
 */
export const jsonBody = <T extends z.ZodType>(
  schema: T,
  malformed: Malformed,
) => ({
  required: true,
  content: { "application/json": { schema } },
  // A symbol: not part of the OpenAPI document.
  [MALFORMED]: malformed,
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
  };
};

export const bodyTooLarge = {
  413: errors("The body is larger than 64 KiB", MSG.bodyTooLarge),
};

/**
 * What a protected operation takes: the session cookie, or an API key as
 * `Authorization: Bearer uak_...` (either alone).
 */
export const sessionOrKey: Record<string, string[]>[] = [
  { cookieAuth: [] },
  { bearerAuth: [] },
];
