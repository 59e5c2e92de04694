import type { Config } from "./config.ts";
import type { Store } from "./db/store.ts";
import { NO_DEADLINE } from "./db/write.ts";
import type { Logger } from "./log.ts";

/**
 * Gives the rows an older release inserted while a release rolled out the
 * keys it does not know (canonical and look-alike): at startup and in every
 * sweep. A row that looks like another user's is logged with both ids, for
 * an operator to rename or delete; it keeps working by its lower-case key.
 */
export async function rekeyUsers(store: Store, log: Logger): Promise<void> {
  const rows = await store.users.rekey(NO_DEADLINE);
  const keyed = rows.filter((r) => r.outcome === "keyed").length;
  if (keyed) log.info("keyed users an older release wrote", { users: keyed });
  for (const row of rows) {
    if (row.outcome === "collision") {
      log.warn("user looks like another user: rename or delete one", {
        id: row.id,
        lookAlikeOf: row.with,
      });
    }
  }
}

/**
 * Deletes expired sessions and ended login-failure windows now and then:
 * neither grants anything any more, but an attacker guessing random
 * usernames would otherwise grow login_failures without bound. Removes
 * Idempotency-Key answers past 24 hours and runs that never ended. Removes
 * audit records past AUDIT_RETENTION_DAYS too (the chain stays verifiable
 * from the oldest kept), and webhook delivery attempts past
 * WEBHOOK_ATTEMPT_RETENTION_DAYS, and sign-ins through an identity provider
 * that never came back within their 10 minutes. Records disables whose `until` passed as
 * `user.enabled` (the users are active from that moment already). Every
 * instance may run it; the deletes are idempotent. Keys rows an older release
 * wrote (`rekeyUsers`).
 */
export function startHousekeeping(
  store: Store,
  config:
    & Pick<
      Config,
      | "LOGIN_WINDOW_SECONDS"
      | "AUDIT_RETENTION_DAYS"
      | "HOUSEKEEPING_INTERVAL_MS"
    >
    & Partial<Pick<Config, "WEBHOOK_ATTEMPT_RETENTION_DAYS">>,
  log: Logger,
): { stop(): Promise<void> } {
  const sweep = async () => {
    try {
      const sessions = await store.sessions.revokeExpired(NO_DEADLINE);
      const disables = await store.users.recordExpiredDisables(NO_DEADLINE);
      const counters = await store.loginThrottle.forgetExpired(
        config.LOGIN_WINDOW_SECONDS,
        NO_DEADLINE,
      );
      const idempotencyKeys = await store.idempotency.sweep();
      const signIns = await store.sso.pending.sweep();
      // Records a failed seal left behind, before the retention sweep.
      await store.audit.seal();
      const auditRecords = await store.audit.sweep(
        config.AUDIT_RETENTION_DAYS,
      );
      const webhookAttempts = await store.webhookQueue.pruneAttempts(
        config.WEBHOOK_ATTEMPT_RETENTION_DAYS ?? 30,
      );
      await rekeyUsers(store, log);
      if (
        sessions || disables || counters || auditRecords || idempotencyKeys ||
        webhookAttempts || signIns
      ) {
        log.info("housekeeping", {
          expiredSessions: sessions,
          expiredDisables: disables,
          endedLoginWindows: counters,
          expiredIdempotencyKeys: idempotencyKeys,
          expiredAuditRecords: auditRecords,
          expiredWebhookAttempts: webhookAttempts,
          expiredSignIns: signIns,
        });
      }
    } catch (e) {
      log.warn("housekeeping failed", { cause: e });
    }
  };
  // The next sweep is timed from the end of the last: at a short interval
  // (the tests') two sweeps never overlap.
  let stopped = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let running: Promise<void> | undefined;
  const next = () => {
    if (stopped) return;
    const at = setTimeout(async () => {
      running = sweep();
      await running;
      running = undefined;
      next();
    }, config.HOUSEKEEPING_INTERVAL_MS);
    // Never the reason the process stays alive.
    Deno.unrefTimer(at);
    timer = at;
  };
  next();
  return {
    /** No sweep starts any more; one under way ends before the database closes. */
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
