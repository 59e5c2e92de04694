import type { RouteHandler } from "@hono/zod-openapi";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { AppEnv } from "../http/env.ts";
import { ApiError } from "../http/errors.ts";
import { MSG } from "../http/messages.ts";
import type * as routes from "./auth.routes.ts";
import type { PasswordHasher } from "./passwords.ts";
import type { Sessions } from "./session.ts";
import { sha256 } from "./tokens.ts";

export interface AuthDeps {
  store: Store;
  passwords: PasswordHasher;
  sessions: Sessions;
  config: Pick<Config, "LOGIN_MAX_FAILURES" | "LOGIN_WINDOW_SECONDS">;
}

export function createAuthHandlers(
  { store, passwords, sessions, config }: AuthDeps,
) {
  const login: RouteHandler<typeof routes.login, AppEnv> = async (c) => {
    const { username, password } = c.req.valid("json");
    // Counted per username in any case, known or not, so 429 tells nothing.
    const throttleKey = await sha256(username.toLowerCase());
    const attempt = await store.loginThrottle.attempt(
      throttleKey,
      config.LOGIN_MAX_FAILURES,
      config.LOGIN_WINDOW_SECONDS,
    );
    if (attempt.blocked) {
      throw new ApiError(429, MSG.tooManyLoginAttempts, {
        "Retry-After": String(attempt.retryAfter),
      });
    }
    const user = await store.users.findForLogin(username);
    // Always one bcrypt verification, so an unknown name takes as long as a wrong password.
    if (!await passwords.verify(password, user?.passwordHash)) {
      throw new ApiError(401, MSG.invalidCredentials);
    }
    const { passwordHash: _, ...account } = user!;
    await store.loginThrottle.clear(throttleKey);
    await sessions.start(c, account.id);
    return c.json(account, 200);
  };

  const logout: RouteHandler<typeof routes.logout, AppEnv> = async (c) => {
    await sessions.end(c);
    return c.json({ ok: true as const }, 200);
  };

  const me: RouteHandler<typeof routes.me, AppEnv> = (c) =>
    c.json(c.get("caller"), 200);

  return { login, logout, me };
}
