/**
 * Proving a second factor, the state in flight: WebAuthn challenges,
 * pending logins (a right password waiting for its factor) and the
 * wrong-code counters. Short-lived rows, apart from the factors a user
 * keeps (mfa-factors.ts).
 */
import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  type AuditEvent,
  auditEvents,
} from "../audit/events.ts";
import { disabledNow } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import {
  clearLoginCounter,
  type LoginCounter,
  takeBackAttempt,
} from "./throttle.ts";
import type { Account } from "../users/user.ts";
import { countingWindow } from "./time.ts";
import { beforeWrite, type WriteBy, type Writer } from "./write.ts";
import { accountColumns } from "./user-rows.ts";
import { type Refusal, refuse } from "../refusal.ts";

/** What a WebAuthn challenge is for: each is taken back only for its own purpose. */
export type ChallengePurpose = "register" | "login" | "step_up";

/** Live WebAuthn challenges one user keeps per purpose; the oldest goes first. */
const CHALLENGES_KEPT = 5;

/** A right password waiting for its second factor (the pending-login cookie's row). */
export type PendingUser = Account & { passwordVersion: number };

/** What a right password of a user with a factor made: a pending login, or none (see sessions.create). */
export type PendingStart = "pending" | "stale" | Refusal<"disabled">;

/** Whether a second-factor attempt may be checked (it is counted), or the user's window is full. */
export type FactorAttempt =
  | { blocked: false }
  | { blocked: true; retryAfter: number };

/** Challenges, pending logins and wrong-code counters. */
export function createMfaAttempts(sql: Sql, { transaction }: Writer) {
  const account = accountColumns(sql, "u");
  return {
    /** Keeps a WebAuthn challenge for the user and purpose, for `ttlSeconds`. */
    async saveChallenge(
      userId: number,
      purpose: ChallengePurpose,
      challenge: string,
      ttlSeconds: number,
      writeBy: WriteBy,
    ) {
      beforeWrite(writeBy);
      // The user's expired challenges go with each new one, and so do all
      // but the newest few of this purpose: asking for options again and
      // again keeps a handful of rows, not one per request.
      await sql`
        with gone as (
          delete from mfa_challenges
          where user_id = ${userId} and (expires_at <= now()
            or challenge in (
              select challenge from mfa_challenges
              where user_id = ${userId} and purpose = ${purpose}
              order by expires_at desc offset ${CHALLENGES_KEPT - 1})))
        insert into mfa_challenges (challenge, user_id, purpose, expires_at)
        values (${challenge}, ${userId}, ${purpose},
          now() + make_interval(secs => ${ttlSeconds}))`;
    },

    /** Takes the challenge back, once: true when it was the user's, for this purpose, and unexpired. */
    async takeChallenge(
      userId: number,
      purpose: ChallengePurpose,
      challenge: string,
      writeBy: WriteBy,
    ) {
      beforeWrite(writeBy);
      const rows = await sql`
        delete from mfa_challenges
        where challenge = ${challenge} and user_id = ${userId}
          and purpose = ${purpose} and expires_at > now()
        returning 1`;
      return rows.length > 0;
    },

    /**
     * A pending login for a right password of a user with a factor, under
     * the user's row lock as a session's start (sessions.create): none when
     * the password changed since it was checked (`stale`) or the user is
     * disabled (the attempt is taken back, `login.refused` recorded). The
     * right password clears its login counter, as a success does.
     */
    async startPending(
      tokenHash: Uint8Array,
      user: AuditParty & { passwordVersion: number },
      ttlSeconds: number,
      counter: LoginCounter,
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<PendingStart> {
      return await transaction(writeBy, async (tx) => {
        const [row] = await tx<{ disabled: boolean }[]>`
          select ${disabledNow(tx)} as disabled from users
          where id = ${user.id} and password_version = ${user.passwordVersion}
          for update`;
        if (!row) return "stale" as const;
        beforeWrite(writeBy);
        if (row.disabled) {
          await takeBackAttempt(tx, counter);
          await recordAudit(tx, auditEvents.loginRefused(user, context));
          return refuse("disabled");
        }
        await tx`
          with gone as (
            delete from mfa_pending
            where user_id = ${user.id} and expires_at <= now())
          insert into mfa_pending (token_hash, user_id, password_version,
            expires_at)
          values (${tokenHash}, ${user.id}, ${user.passwordVersion},
            now() + make_interval(secs => ${ttlSeconds}))`;
        await clearLoginCounter(tx, counter);
        return "pending" as const;
      });
    },

    /**
     * The user of a pending login: unexpired, not used, their password
     * unchanged since, not disabled; undefined otherwise.
     */
    async pendingUser(tokenHash: Uint8Array): Promise<PendingUser | undefined> {
      const [row] = await sql<PendingUser[]>`
        select ${account},
          u.password_version as "passwordVersion"
        from mfa_pending p join users u on u.id = p.user_id
        where p.token_hash = ${tokenHash} and p.expires_at > now()
          and p.password_version = u.password_version
          and not ${disabledNow(sql, "u")}`;
      return row;
    },

    /**
     * Counts a second-factor attempt of the user before it is checked (a
     * right one is taken back: `succeeded`), in the transaction that
     * decides it, under the counter row's lock, so parallel guesses cannot
     * pass the limit: `max` per window of `windowSeconds` from the first.
     * A full window blocks every attempt until it ends, and counts none.
     */
    async attempt(
      tx: TransactionSql,
      userId: number,
      max: number,
      windowSeconds: number,
    ): Promise<FactorAttempt> {
      const { length: window, retryAfter: secondsLeft } = countingWindow(
        tx,
        windowSeconds,
      );
      // `max + 1` marks a full window: an attempt that finds it counts nothing.
      const [row] = await tx<{ failures: number; retryAfter: number }[]>`
        insert into mfa_failures as f (user_id, window_started_at, failures)
        values (${userId}, now(), 1)
        on conflict (user_id) do update set
          failures = case
            when f.window_started_at <= now() - ${window} then 1
            when f.failures >= ${max} then ${max + 1}
            else f.failures + 1 end,
          window_started_at = case
            when f.window_started_at <= now() - ${window} then now()
            else f.window_started_at end
        returning failures, ${secondsLeft} as "retryAfter"`;
      return row.failures > max
        ? { blocked: true, retryAfter: row.retryAfter }
        : { blocked: false };
    },

    /**
     * The seconds until the user's full window ends; undefined while it
     * still counts attempts. A read without a lock, so that attempts in a
     * full window (all of a guessing run's but its first few) wait for no
     * other attempt's transaction.
     */
    async windowFull(
      userId: number,
      max: number,
      windowSeconds: number,
    ): Promise<number | undefined> {
      const { length: window, retryAfter: secondsLeft } = countingWindow(
        sql,
        windowSeconds,
      );
      const [row] = await sql<{ retryAfter: number }[]>`
        select ${secondsLeft} as "retryAfter" from mfa_failures
        where user_id = ${userId} and failures > ${max}
          and window_started_at > now() - ${window}`;
      return row?.retryAfter;
    },

    /** A wrong second factor's record, in the transaction that counted it. */
    failed: (tx: TransactionSql, event: AuditEvent) => recordAudit(tx, event),

    /**
     * Takes back a right attempt's count (in the transaction that lets the
     * user in, or on its own). A full window stays full.
     */
    succeeded: async (tx: TransactionSql, userId: number, max: number) => {
      await tx`
        update mfa_failures set failures = failures - 1
        where user_id = ${userId} and failures between 1 and ${max}`;
    },

    /**
     * Consumes a pending login in the transaction that opens its session:
     * false when it was used meanwhile (single use).
     */
    takePending: async (tx: TransactionSql, tokenHash: Uint8Array) => {
      const rows = await tx`
        delete from mfa_pending where token_hash = ${tokenHash} returning 1`;
      return rows.length > 0;
    },
  };
}
