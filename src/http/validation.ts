import type { Hook, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { invalidQueryParameter, type Message } from "./messages.ts";

type Issue = z.core.$ZodIssue;

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

/** zod-openapi's hook for query, path and header parameters. */
export const validationHook = (
  answer: ReturnType<typeof answerInvalid>,
): Hook<unknown, AppEnv, string, unknown> =>
(result, c) => {
  if (!result.success) {
    return answer(c, result.error.issues, result.target);
  }
  // A query's text is stored or compared by the database alike.
  const path = result.target === "query" && unstorableText(result.data);
  if (path) {
    const message = "text not storable";
    return answer(c, [{ code: "custom", path, message, input: "" }], "query");
  }
};

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
export async function parseStorable<T extends z.ZodType>(
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
