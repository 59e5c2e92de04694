/**
 * A route's behaviour as its declaration lists it: steps, in the order the
 * contract checks them. A step either passes a value on (to the steps after
 * it and to the handler, under its key) or answers with one of its own
 * checks; an `outcome` step names a reason the handler may refuse for
 * (src/refusal.ts: what the store refused) and the check that answers it.
 * The route's checks, and so the document's numbered list and error
 * responses, are the steps' checks in this order (see `route`): the code
 * and the document follow one list, and a handler only does the endpoint's
 * own work.
 */
import type { RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { Reason } from "../refusal.ts";
import type { AppEnv } from "./env.ts";
import type { RequestScope } from "./request.ts";
import { ifMatchTags } from "./conditional.ts";
import {
  BODY_LIMIT_BYTES,
  NOT_JSON,
  parseJson,
  parseStorable,
  readText,
  TOO_LARGE,
  unstorableText,
} from "./body-text.ts";
import { errorResponse } from "./errors.ts";
import { MSG } from "./messages.ts";
import { type Check, queryChecks } from "./openapi.ts";

type Issue = z.core.$ZodIssue;

/** The route's 400 for broken rules: the first in its check order (`answerInvalid`). */
export type Invalid = (
  c: Context<AppEnv>,
  issues: readonly Issue[],
  target?: string,
) => Response;

/**
 * What the app gives its routes: the request scope each route's handler
 * enters, and what the steps that look something up use (`load`, the
 * idempotency run).
 */
export interface StepDeps {
  scope: RequestScope;
  store: Store;
  config: Pick<Config, "REQUEST_TIMEOUT_MS">;
}

/**
 * Work to do once the request is answered (with the answer), or once it
 * failed (undefined): what a step began and must end either way.
 */
export type Finish = (answer: Response | undefined) => Promise<void>;

/** What a step gets beside the request. */
export interface StepInput {
  invalid: Invalid;
  deps: StepDeps;
  /** The values of the steps before it, by key. */
  got: Record<string, unknown>;
  /** Registers work to do once the request is answered. */
  finally(finish: Finish): void;
}

type MaybePromise<T> = T | Promise<T>;

/** A step that passes a value on under `key`, or answers with one of its checks. */
export interface Passes<K extends string, V> {
  readonly key: K;
  readonly checks: readonly Check[];
  readonly run: (
    c: Context<AppEnv>,
    input: StepInput,
  ) => MaybePromise<V | Response>;
  /** What it reads, for the document (a body's schema, a query's). */
  readonly request?: RouteConfig["request"];
}

/** A step that passes nothing on: it answers with one of its checks, or lets the request go on. */
export interface Guards {
  readonly checks: readonly Check[];
  readonly run: (
    c: Context<AppEnv>,
    input: StepInput,
  ) => MaybePromise<Response | undefined>;
}

/** A reason the handler may refuse for (refusal.ts), and the check that answers it. */
export interface Outcome<O extends Reason> {
  readonly checks: readonly [Check];
  readonly outcome: O;
}

/** A check that is only documented here: its answer comes from the handler's own answer (a 500 of the endpoint's failures). */
export interface Documented {
  readonly checks: readonly [Check];
}

export type Step =
  // deno-lint-ignore no-explicit-any
  | Passes<string, any>
  | Guards
  | Outcome<Reason>
  | Documented;

/** A step that passes `run`'s value on under `key`. */
export const passes = <const K extends string, V>(
  key: K,
  checks: readonly Check[],
  run: Passes<K, V>["run"],
  request?: RouteConfig["request"],
): Passes<K, V> => ({ key, checks, run, ...request && { request } });

/** A step that passes nothing on. */
export const guards = (
  checks: readonly Check[],
  run: Guards["run"],
): Guards => ({ checks, run });

/** The handler may refuse for `name`: answered with `check`. */
export const outcome = <const O extends Reason>(
  name: O,
  check: Check,
): Outcome<O> => ({ checks: [check], outcome: name });

/** A check listed for the document only (the failure every endpoint has). */
export const documented = (check: Check): Documented => ({ checks: [check] });

type UnionToIntersection<U> =
  // deno-lint-ignore no-explicit-any
  (U extends unknown ? (x: U) => void : never) extends (x: infer I) => any ? I
    : never;

/** What the steps pass to the handler: each key's value. */
export type Got<S extends readonly Step[]> =
  & UnionToIntersection<
    {
      [I in keyof S]: S[I] extends Passes<infer K, infer V> ? { [P in K]: V }
        : never;
    }[number]
  >
  & Record<never, never>;

/** The reasons a handler may refuse for. */
export type Outcomes<S extends readonly Step[]> = OutcomeOf<S[number]>;

type OutcomeOf<T> = T extends Outcome<infer O> ? O : never;

// The steps every route may list: each lives beside what it knows. These
// know only the request; the guards are in auth/guards.ts.

/**
 * The JSON body, read once whatever its Content-Type says, at most 64 KiB
 * (413), judged by `schema`, whose issues carry the contract's messages
 * (the route ranks them). A body that is not JSON is judged as `null`,
 * which the schema refuses with the route's own message, unless the
 * contract makes it a failure of the endpoint (`malformed: "failure"`: its
 * 500, the cause logged). `checks` are what the size and the schema may
 * answer, in the contract's order. `optional`: an empty body (or `null`) is
 * judged as `{}` (documented as not required). Text PostgreSQL cannot
 * store answers the schema's bad-body message (`parseStorable`), unless
 * the body is only compared, never stored (`compareOnly`: a login, whose
 * password with NUL is one that does not match).
 */
export const body = <T extends z.ZodType>(
  schema: T,
  checks: readonly Check[],
  { malformed = "invalid", optional = false, compareOnly = false }: {
    malformed?: "invalid" | "failure";
    optional?: boolean;
    compareOnly?: boolean;
  } = {},
) =>
  passes<"body", z.output<T>>(
    "body",
    checks,
    async (c, { invalid }) => {
      const text = await readText(c.req.raw, BODY_LIMIT_BYTES);
      if (text === TOO_LARGE) return errorResponse(c, 413, MSG.bodyTooLarge);
      const value = text === undefined
        ? NOT_JSON
        : optional && text.trim() === ""
        ? {}
        : parseJson(text);
      if (value === NOT_JSON && malformed === "failure") {
        // The endpoint's 500; the error handler logs why, never the body.
        throw new Error(
          `request body is not ${text === undefined ? "UTF-8" : "JSON"}`,
        );
      }
      const judged = value === NOT_JSON ? null : optional ? value ?? {} : value;
      const result = compareOnly
        ? await schema.safeParseAsync(judged)
        : await parseStorable(schema, judged);
      if (!result.success) {
        const issues = "issues" in result ? result.issues : result.error.issues;
        return invalid(c, issues, "json");
      }
      return result.data;
    },
    {
      body: {
        required: !optional,
        content: { "application/json": { schema } },
      },
    },
  );

/**
 * The query, judged by `schema`: each issue answers 400 `Invalid query
 * parameter: <name>`, the first parameter in the schema's order. A
 * parameter given more than once is an array, which a text rule refuses.
 */
export const query = <T extends z.ZodObject>(schema: T) =>
  passes<"query", z.output<T>>(
    "query",
    queryChecks(schema),
    async (c, { invalid }) => {
      const all = c.req.queries();
      const value: Record<string, string | string[]> = {};
      for (const name in all) {
        const values = all[name];
        value[name] = values.length === 1 ? values[0] : values;
      }
      const result = await schema.safeParseAsync(value);
      if (!result.success) return invalid(c, result.error.issues, "query");
      // A query's text is stored or compared by the database alike.
      const path = unstorableText(result.data);
      if (path) {
        const message = "text not storable";
        return invalid(
          c,
          [{ code: "custom", path, message, input: "" }],
          "query",
        );
      }
      return result.data;
    },
    { query: schema },
  );
/**
 * A path parameter parsed by `parse` under `key`; null (what cannot name
 * anything) answers `check`, or, without one, is passed on as null for a
 * later step or the store to answer where the contract puts it.
 */
export function pathParam<const K extends string, V>(
  key: K,
  parse: (text: string) => V | null,
  check: Check,
): Passes<K, V>;
export function pathParam<const K extends string, V>(
  key: K,
  parse: (text: string) => V | null,
): Passes<K, V | null>;
export function pathParam<const K extends string, V>(
  key: K,
  parse: (text: string) => V | null,
  check?: Check,
) {
  return passes<K, V | null>(key, check ? [check] : [], (c) => {
    const value = parse(c.req.param(key) ?? "");
    if (value === null && check) {
      return errorResponse(c, check.status as 404, check.message);
    }
    return value;
  });
}

/**
 * A row the contract looks up before later checks (the body's, say): what
 * `find` answers is passed on under `key`; nothing (undefined or false)
 * answers `check`.
 */
export const load = <const K extends string, V>(
  key: K,
  check: Check,
  find: (store: Store, got: Record<string, unknown>) => Promise<V | undefined>,
) =>
  passes<K, Exclude<V, false>>(key, [check], async (c, { deps, got }) => {
    const found = await find(deps.store, got);
    return found === undefined || found === false
      ? errorResponse(c, check.status as 404, check.message)
      : found as Exclude<V, false>;
  });

/**
 * The strong tags of `If-Match` (none match when it is malformed), or
 * undefined when there is no precondition beyond the row existing (absent,
 * or `*`). It answers nothing itself: the write compares, in its own
 * transaction (an `outcome` of the route).
 */
export const ifMatch = passes<"ifMatch", string[] | undefined>(
  "ifMatch",
  [],
  (c) => ifMatchTags(c.req.header("if-match")),
);
