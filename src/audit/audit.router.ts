import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Sessions } from "../auth/session.ts";
import { failsWith } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { MSG } from "../http/messages.ts";
import {
  type AuditDeps,
  auditQueryHook,
  createAuditHandlers,
} from "./audit.handlers.ts";
import * as routes from "./audit.routes.ts";

/** Mounts /api/audit behind the admin guard: 401, 403, then the query. */
export function mountAudit(
  app: OpenAPIHono<AppEnv>,
  deps: AuditDeps & { sessions: Sessions },
) {
  const h = createAuditHandlers(deps);
  app.openapi(
    {
      ...routes.list,
      middleware: [failsWith(MSG.auditListFailed), deps.sessions.requireAdmin],
    },
    h.list,
    auditQueryHook,
  );
}
