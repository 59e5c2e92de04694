import type { Context } from "hono";
import { auditContext } from "./audit-context.ts";
import type { CallerWrite } from "../db/write.ts";
import type { AppEnv } from "./env.ts";
import type { Need } from "../auth/permissions.ts";

/**
 * The write as a request asks for it: the caller the write's transaction
 * re-checks, what its audit record keeps of the request (the client address
 * as `trustProxy` reads it), and the request's deadline. `needs`: what the
 * write re-checks the caller still holds, by default the route's
 * permission.
 */
export const callerWrites =
  (trustProxy: boolean) =>
  (c: Context<AppEnv>, needs?: readonly Need[]): CallerWrite => ({
    caller: c.get("caller"),
    needs: needs ?? c.get("needs") ?? [],
    context: auditContext(c, trustProxy, "api"),
    writeBy: c.get("writeBy"),
  });
