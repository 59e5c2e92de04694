import type { Context } from "hono";
import type { AppEnv } from "../http/env.ts";
import { clientIp } from "../http/origin.ts";
import type { AuditContext } from "./events.ts";

/**
 * The request id and client address a record keeps: the address as the
 * access log and the login throttle see it (the proxy's word only when
 * trusted).
 */
export const auditContext = (
  c: Context<AppEnv>,
  trustProxy: boolean,
): AuditContext => ({
  requestId: c.get("requestId") ?? null,
  clientAddress: clientIp(c, trustProxy) ?? null,
});
