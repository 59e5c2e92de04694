import type { Context, MiddlewareHandler } from "hono";
import type { AppEnv } from "./env.ts";
import type { Message } from "./messages.ts";

/** Names the endpoint's own 500 message, for any failure from here on. */
export const failsWith =
  (message: Message): MiddlewareHandler<AppEnv> => async (c, next) => {
    c.set("failure", message);
    await next();
  };

/** A request still pending at its deadline: answered with its endpoint's 500. */
export class DeadlineExceeded extends Error {
  constructor(readonly ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

/**
 * Answers with the endpoint's failure message once `ms` pass, whatever is
 * still pending (a database that stopped answering): no request hangs.
 * Requests share the one timeout, so they expire in arrival order: one
 * timer serves all that are in flight (a timer per request costs more than
 * the rest of the middleware together). Work left pending goes on in the
 * background, so a write may start only while a whole statement (at most
 * `statementMs`) still fits before the deadline: what the client was told
 * failed is never applied later.
 */
export function deadline(
  ms: number,
  statementMs: number,
): MiddlewareHandler<AppEnv> {
  const pending = new Set<{ at: number; expire: () => void }>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const sweep = () => {
    const now = performance.now();
    for (const entry of pending) {
      if (entry.at > now) break;
      pending.delete(entry);
      entry.expire();
    }
    const next = pending.values().next().value;
    timer = next && setTimeout(sweep, Math.max(1, next.at - now));
  };
  return async (c, next) => {
    const { promise, reject } = Promise.withResolvers<never>();
    const entry = {
      at: performance.now() + ms,
      expire: () => {
        c.set("expired", true);
        reject(new DeadlineExceeded(ms));
      },
    };
    c.set("writeBy", entry.at - statementMs);
    pending.add(entry);
    timer ??= setTimeout(sweep, ms);
    try {
      await Promise.race([next(), promise]);
    } finally {
      pending.delete(entry);
      if (pending.size === 0) {
        clearTimeout(timer);
        timer = undefined;
      }
    }
  };
}

/** Call right before a write: fails the request if the write could outlive its deadline. */
export function beforeWrite(c: Context<AppEnv>) {
  if (performance.now() > c.get("writeBy")) {
    throw new Error("too little time left to write before the deadline");
  }
}
