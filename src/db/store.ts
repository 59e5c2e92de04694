import type { Sql } from "postgres";
import type { AuditEvent } from "../audit/events.ts";
import { createSealer, recordAudit } from "./audit.ts";
import { type AuditQuery, createAuditStore } from "./audit-trail.ts";
import { createIdempotencyStore } from "./idempotency.ts";
import { createApiKeyStore } from "./api-keys.ts";
import { createImportStore } from "./imports.ts";
import { createScimStore } from "./scim.ts";
import { createMfaStore } from "./mfa.ts";
import { createOverviewStore } from "./overview.ts";
import { createGroupStore } from "./groups.ts";
import { createRoleAssignments } from "./role-assignments.ts";
import { createRoleStore } from "./roles.ts";
import { createSessions } from "./sessions.ts";
import { createSsoStore } from "./sso.ts";
import { createDeviceKey, createLoginThrottle } from "./throttle.ts";
import { createUserLifecycle } from "./user-lifecycle.ts";
import { createUserService } from "./user-service.ts";
import { createUsers } from "./users.ts";
import { createWebhookQueue } from "./webhook-queue.ts";
import { createWebhookStore } from "./webhooks.ts";
import { createWriter, type WriteBy } from "./write.ts";

/**
 * All SQL of the service. Functions take plain values and return rows or a
 * typed outcome, never HTTP. Every write takes its `WriteBy`, checked before
 * it begins (and, for a caller's write, again once its rows are locked).
 */
export function createStore(
  sql: Sql,
  {
    sealFailed = (cause: unknown) => {
      throw cause;
    },
  }: {
    /**
     * A seal that failed, after its writes committed: they stand, and their
     * records wait for the next seal. The service logs it; by default it is
     * thrown, uncaught when the seal ran on its own.
     */
    sealFailed?: (cause: unknown) => void;
  } = {},
) {
  const sealer = createSealer(sql, sealFailed);
  const auditStore = createAuditStore(sql);
  const writer = createWriter(sql, sealer);

  return {
    // One face for the users table, whose SQL lives by concern.
    users: {
      ...createUsers(sql, writer),
      ...createUserLifecycle(sql, writer),
      ...createUserService(sql, writer),
    },
    sessions: createSessions(sql, writer),
    loginThrottle: createLoginThrottle(sql, writer),
    deviceKey: createDeviceKey(sql),
    apiKeys: createApiKeyStore(sql, writer),
    // Roles and their assignments, one face, their SQL by concern.
    roles: {
      ...createRoleStore(sql, writer),
      ...createRoleAssignments(sql, writer),
    },
    groups: createGroupStore(sql, writer),
    mfa: createMfaStore(sql, writer),
    idempotency: createIdempotencyStore(sql),
    webhooks: createWebhookStore(sql, writer),
    webhookQueue: createWebhookQueue(sql, writer),
    scim: createScimStore(sql, writer),
    sso: createSsoStore(sql, writer),
    imports: createImportStore(sql, writer),
    overview: createOverviewStore(sql),
    audit: {
      ...auditStore,
      /** As the trail's store lists, after sealing: every committed record is shown. */
      async list(q: AuditQuery) {
        await sealer.now();
        return await auditStore.list(q);
      },
      /**
       * Seals every record committed so far into the chain (by default a
       * write's records are sealed within moments, without waiting): before
       * the trail is read, and for records a failed seal or an ended
       * process left.
       */
      seal: sealer.now,
      /** Calls `listener` after each seal of this store that sealed records. */
      onSealed: sealer.onSealed,
      /** One record in a transaction of its own (see recordAudit). */
      record: (event: AuditEvent, writeBy: WriteBy) =>
        writer.transaction(writeBy, (tx) => recordAudit(tx, event)),
    },
    async ping() {
      await sql`select 1`;
    },
    /** Seals what this store's writes left; call it before closing the pool. */
    stop: sealer.stop,
  };
}

export type Store = ReturnType<typeof createStore>;
