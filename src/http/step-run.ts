/**
 * Running a route's steps (endpoint.ts mounts each route with it): in
 * their order, the first answer ending the request, and its 400 for broken
 * rules ranked by the route's check order. Apart from the steps
 * themselves (steps.ts), which routes declare and never run.
 */
import type { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { AppEnv } from "./env.ts";
import { errorResponse } from "./errors.ts";
import { invalidQueryParameter, type Message } from "./messages.ts";
import type { Finish, Invalid, Step, StepDeps, StepInput } from "./steps.ts";

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
