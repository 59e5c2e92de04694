import type { Hook } from "@hono/zod-openapi";
import type { AppEnv } from "./env.ts";
import { ApiError } from "./errors.ts";
import { firstInCheckOrder, MSG } from "./messages.ts";

/**
 * zod reports every broken rule at once; the contract answers the first in
 * its check order. The schemas carry the contract's messages, so this only
 * ranks them.
 */
export const validationHook: Hook<unknown, AppEnv, string, unknown> = (
  result,
  c,
) => {
  if (result.success) return;
  const messages = new Set<string>(result.error.issues.map((i) => i.message));
  const first = firstInCheckOrder(messages);
  if (!first) {
    // A schema rule without a contract message is a bug of ours: still a 400, and said in the log.
    c.get("log").warn("validation message outside the contract", {
      requestId: c.get("requestId"),
      messages: [...messages],
    });
  }
  throw new ApiError(400, first ?? MSG.invalidBody);
};
