import type { z } from "@hono/zod-openapi";
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
