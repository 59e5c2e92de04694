import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import type { Message } from "./messages.ts";

/** Names the endpoint's own 500 message, for any failure from here on. */
export const failsWith =
  (message: Message): MiddlewareHandler<AppEnv> => async (c, next) => {
    c.set("failure", message);
    await next();
  };

/**
 * Answers with the endpoint's failure message once `ms` pass, whatever is
 * still pending (a database that stopped answering): no request hangs.
 * Work left pending goes on in the background, so a write may start only
 * while a whole statement (at most `statementMs`) still fits before the
 * deadline: what the client was told failed is never applied later.
 */
export const deadline =
  (ms: number, statementMs: number): MiddlewareHandler<AppEnv> =>
  async (c, next) => {
    c.set("writeBy", performance.now() + ms - statementMs);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const expired = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`no answer within ${ms} ms`)),
        ms,
      );
    });
    try {
      await Promise.race([next(), expired]);
    } finally {
      clearTimeout(timer);
    }
  };

/** Call right before a write: fails the request if the write could outlive its deadline. */
export function beforeWrite(c: Context<AppEnv>) {
  if (performance.now() > c.get("writeBy")) {
    throw new Error("too little time left to write before the deadline");
  }
}
