import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import { isRefusal, refuse } from "../refusal.ts";
import type * as routes from "./own-sessions.routes.ts";
import type { Sessions } from "./session.ts";

export interface OwnSessionDeps {
  store: Store;
  sessions: Sessions;
  config: Pick<Config, "TRUST_PROXY">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/**
 * A person's own sessions, listed and ended by the store's one way of
 * doing it (the admin's): the caller is both who acts and whose sessions
 * they are, and needs no permission for their own.
 */
export function createOwnSessionHandlers(
  { store, sessions, config }: OwnSessionDeps,
) {
  const callerWrite = callerWrites(config.TRUST_PROXY);

  const listOwnSessions: Handler<"listOwnSessions"> = async (
    c,
    { caller },
  ) => {
    const listed = await store.sessions.list(caller.account.id, caller.session);
    // The caller's row went since their session was resolved.
    return listed ? c.json(listed, 200) : refuse("caller_gone");
  };

  /** Their own account, ended by themselves: gone meanwhile is no caller. */
  const end = async (
    c: Parameters<Handler<"endOtherSessions">>[0],
    which: string | null | "others",
  ) => {
    const outcome = await store.sessions.end(
      c.get("caller").account.id,
      which,
      callerWrite(c, []),
    );
    return isRefusal(outcome) && outcome.reason === "user_not_found"
      ? refuse("caller_gone")
      : outcome;
  };

  const endOtherSessions: Handler<"endOtherSessions"> = async (c) => {
    const outcome = await end(c, "others");
    if (isRefusal(outcome)) return outcome;
    return c.json({ ok: true as const, ended: outcome.ended }, 200);
  };

  const endOwnSession: Handler<"endOwnSession"> = async (
    c,
    { sessionId },
  ) => {
    const outcome = await end(c, sessionId);
    if (isRefusal(outcome)) return outcome;
    if (outcome.ended === 0) return refuse("session_not_found");
    // Their current session: signed out, as a logout signs out.
    if (outcome.current) sessions.forget(c);
    return c.json({ ok: true as const, ended: outcome.ended }, 200);
  };

  return { listOwnSessions, endOtherSessions, endOwnSession };
}
