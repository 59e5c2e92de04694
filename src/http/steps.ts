/**
 * A route's behaviour as its declaration lists it: steps, in the order the
 * contract checks them. A step either passes a value on (to the steps after
 * it and to the handler, under its key) or answers with one of its own
 * checks; an `outcome` step names a result the handler may return (what
 * the store answered) and the check that answers it. The route's checks,
 * and so the document's numbered list and error responses, are the steps'
 * checks in this order (see `route`): the code and the document follow one
 * list, and a handler only does the endpoint's own work.
 */
import type { RouteConfig, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { AppEnv } from "./env.ts";
import type { RequestScope } from "./request.ts";
import { ifMatchTags } from "./conditional.ts";
import { errorResponse } from "./errors.ts";
import { invalidQueryParameter, type Message, MSG } from "./messages.ts";
import { type Check, queryChecks } from "./openapi.ts";

type Issue = z.core.$ZodIssue;

/** The route's 400 for broken rules: the first in its check order (`answerInvalid`). */
export type Invalid = (
  c: Context<AppEnv>,
  issues: readonly Issue[],
  target?: string,
) => Response;

/**
 * The endpoint's 400 for a request that breaks its rules. zod reports every
 * broken rule at once; the contract answers the first in the endpoint's own
 * check order (the messages of its 400 checks, in their order: see
 * `route`). Body schemas carry the contract's messages; a query's issue
 * names its parameter.
 */
export function answerInvalid(checkOrder: readonly Message[]) {
  const rank = new Map<string, number>(checkOrder.map((m, i) => [m, i]));
  return (
    c: Context<AppEnv>,
    issues: readonly Issue[],
    target = "json",
  ): Response => {
    let first = checkOrder.length;
    for (const issue of issues) {
      const message = target === "query"
        ? invalidQueryParameter(String(issue.path[0]))
        : issue.message;
      first = Math.min(first, rank.get(message) ?? first);
    }
    if (first === checkOrder.length) {
      // A rule without a contract message is a bug of ours: said in the
      // log, and answered with the endpoint's most general (last) message.
      c.get("log").warn("validation message outside the contract", {
        requestId: c.get("requestId"),
        messages: issues.map((i) => i.message),
      });
      if (first === 0) throw new Error("no 400 declared for a broken rule");
      first -= 1;
    }
    return errorResponse(c, 400, checkOrder[first]);
  };
}

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

/** A result the handler may return instead of an answer, and the check that answers it. */
export interface Outcome<O extends string> {
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
  | Outcome<string>
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

/** The handler may return `name`: answered with `check`. */
export const outcome = <const O extends string>(
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

/** The results a handler may return instead of an answer. */
export type Outcomes<S extends readonly Step[]> = OutcomeOf<S[number]>;

type OutcomeOf<T> = T extends Outcome<infer O> ? O : never;

/** What a step gets beside the request, and the work it leaves for the end. */
class StepRun implements StepInput {
  readonly got: Record<string, unknown> = {};
  finishes: Finish[] | undefined;
  constructor(readonly invalid: Invalid, readonly deps: StepDeps) {}
  finally(finish: Finish) {
    (this.finishes ??= []).push(finish);
  }
}

/**
 * Runs the steps in order, then `answer` with what they passed on; a step's
 * answer ends the request. The work steps leave for the end runs once the
 * answer is known (or with undefined when the request failed).
 */
export async function runSteps(
  c: Context<AppEnv>,
  steps: readonly Step[],
  input: Pick<StepInput, "invalid" | "deps">,
  answer: (
    c: Context<AppEnv>,
    got: Record<string, unknown>,
  ) => Promise<Response>,
): Promise<Response> {
  const run = new StepRun(input.invalid, input.deps);
  const got = run.got;
  let res: Response | undefined;
  try {
    for (const step of steps) {
      if (!("run" in step)) continue;
      const result = step.run(c, run);
      const value = result instanceof Promise ? await result : result;
      if (value instanceof Response) return res = value;
      if ("key" in step) got[step.key] = value;
    }
    return res = await answer(c, got);
  } finally {
    if (run.finishes) { for (const finish of run.finishes) await finish(res); }
  }
}

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

// Reading a body: as text, at most a limit, UTF-8 or nothing; then as JSON.

const BODY_LIMIT_BYTES = 64 * 1024;

const utf8 = new TextDecoder("utf-8", { fatal: true });
export const TOO_LARGE = Symbol("too large");
const NOT_JSON = Symbol("not JSON");

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return NOT_JSON;
  }
}

/**
 * The body as text; undefined when it is not UTF-8, TOO_LARGE past the
 * limit (declared or read: it stops reading there).
 */
export async function readText(req: Request, limit: number) {
  const declared = Number(req.headers.get("content-length") ?? 0);
  if (declared > limit) return TOO_LARGE;
  if (!req.body) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of req.body) {
    size += chunk.byteLength;
    if (size > limit) return TOO_LARGE;
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.byteLength;
  }
  try {
    return utf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Where a value holds text PostgreSQL cannot store: the path of its first
 * string (or object key) with NUL (U+0000) or a lone surrogate, which
 * neither `text` nor `jsonb` (an audit record's details) holds. Undefined
 * when every string can be stored. Only plain arrays and objects are
 * walked: what a schema's transforms make of a value is its own.
 */
export function unstorableText(
  value: unknown,
  path: PropertyKey[] = [],
): PropertyKey[] | undefined {
  if (typeof value === "string") return storable(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = unstorableText(item, [...path, i]);
      if (found) return found;
    }
  } else if (
    value !== null && Object.getPrototypeOf(value) === Object.prototype
  ) {
    for (const [key, item] of Object.entries(value as object)) {
      if (!storable(key)) return [...path, key];
      const found = unstorableText(item, [...path, key]);
      if (found) return found;
    }
  }
  return undefined;
}

const LONE_SURROGATE = /\p{Cs}/u;
const storable = (s: string) =>
  !s.includes("\u0000") && !LONE_SURROGATE.test(s);

/**
 * A schema's verdict on a value, refusing text PostgreSQL cannot store
 * (`unstorableText`) with the message the schema gives a body that is not
 * JSON at all (`null`): the endpoint's bad-body message. So no body rule
 * has to remember NUL, and none answers 500 for it.
 */
async function parseStorable<T extends z.ZodType>(
  schema: T,
  value: unknown,
): Promise<
  { success: true; data: z.output<T> } | { success: false; issues: Issue[] }
> {
  const result = await schema.safeParseAsync(value);
  if (!result.success) return { success: false, issues: result.error.issues };
  const path = unstorableText(result.data);
  if (!path) return result;
  const verdict = await schema.safeParseAsync(null);
  const message = verdict.error?.issues[0]?.message ?? "text not storable";
  return {
    success: false,
    issues: [{ code: "custom", path, message, input: value }],
  };
}
