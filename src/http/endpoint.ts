import type { MiddlewareHandler } from "hono";
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
 */
export const deadline =
  (ms: number): MiddlewareHandler<AppEnv> => async (_c, next) => {
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
