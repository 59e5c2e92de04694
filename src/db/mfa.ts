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
import { countingWindow, iso } from "./time.ts";
import {
  beforeWrite,
  type CallerRefusal,
  type CallerWrite,
  NO_DEADLINE,
  type WriteBy,
  type Writer,
} from "./write.ts";

/** A user's factors as they are shown: never a secret, a key or a code. */
export interface MfaSummary {
  totp: { enrolledAt: string } | null;
  passkeys: {
    id: number;
    name: string;
    createdAt: string;
    lastUsedAt: string | null;
  }[];
  recoveryCodesLeft: number;
}

/** A passkey as the store keeps it (src/auth/mfa/passkeys.ts verifies with it). */
export interface StoredPasskey {
  id: number;
  credentialId: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
}

/** A new passkey, as a verified registration gives it. */
export interface NewPasskey {
  credentialId: string;
  publicKey: Uint8Array;
  counter: number;
  transports: string[];
  name: string;
}

/** What a WebAuthn challenge is for: each is taken back only for its own purpose. */
export type ChallengePurpose = "register" | "login" | "step_up";

/** Live WebAuthn challenges one user keeps per purpose; the oldest goes first. */
const CHALLENGES_KEPT = 5;

/** A right password waiting for its second factor (the pending-login cookie's row). */
export type PendingUser = Account & { passwordVersion: number };

/** What a right password of a user with a factor made: a pending login, or none (see sessions.create). */
export type PendingStart = "pending" | "stale" | "disabled";

/** Whether a second-factor attempt may be checked (it is counted), or the user's window is full. */
export type FactorAttempt =
  | { blocked: false }
  | { blocked: true; retryAfter: number };

/**
 * The `mfa` object of the `users` row in the query: the TOTP once
 * confirmed, the passkeys oldest first, the recovery codes left. The
 * user's detail carries it too.
 */
export const mfaSummaryOf = (sql: Sql) =>
  sql`json_build_object(
    'totp', (select json_build_object('enrolledAt', ${
    iso(sql, "t.confirmed_at")
  })
      from mfa_totp t
      where t.user_id = users.id and t.confirmed_at is not null),
    'passkeys', coalesce((select json_agg(json_build_object(
        'id', p.id, 'name', p.name, 'createdAt', ${iso(sql, "p.created_at")},
        'lastUsedAt', ${iso(sql, "p.last_used_at")}) order by p.id)
      from mfa_passkeys p where p.user_id = users.id), '[]'::json),
    'recoveryCodesLeft', (select count(*)::int from mfa_recovery_codes r
      where r.user_id = users.id))`;

/**
 * Second factors: TOTP secrets, passkeys, recovery codes (as hashes),
 * WebAuthn challenges, pending logins and the wrong-code counters.
 */
export function createMfaStore(sql: Sql, { transaction, asCaller }: Writer) {
  const summary = mfaSummaryOf(sql);

  /** Whether the user still has a confirmed factor, kept on the users row (the session lookup reads it). */
  const syncEnabled = async (tx: TransactionSql, userId: number) => {
    await tx`
      update users u set mfa_enabled = (
        exists (select 1 from mfa_totp t
          where t.user_id = u.id and t.confirmed_at is not null)
        or exists (select 1 from mfa_passkeys p where p.user_id = u.id))
      where u.id = ${userId}`;
    // Codes without a factor open nothing: they go with the last factor.
    await tx`
      delete from mfa_recovery_codes r using users u
      where u.id = ${userId} and r.user_id = u.id and not u.mfa_enabled`;
  };

  /**
   * A change the user's detail shows (codes left, a passkey's last use)
   * without a column of the users row: the row's version moves, so its
   * ETag does.
   */
  const touch = (tx: TransactionSql, userId: number) =>
    tx`update users set mfa_enabled = mfa_enabled where id = ${userId}`;

  /** Replaces the user's recovery codes with these hashes. */
  const replaceCodes = async (
    tx: TransactionSql,
    userId: number,
    hashes: Uint8Array[],
  ) => {
    await tx`delete from mfa_recovery_codes where user_id = ${userId}`;
    await tx`
      insert into mfa_recovery_codes ${
      tx(hashes.map((code_hash) => ({ user_id: userId, code_hash })))
    }`;
  };

  /** Marks the session as second-factored now (the session that enrols or steps up). */
  const markSession = (tx: TransactionSql | Sql, session: Uint8Array) =>
    tx`update sessions set second_factor_at = now() where token_hash = ${session}`;

  /**
   * The signed-in user's own write: their row locked, their session still
   * live (not ended, not reset); undefined when it is not.
   */
  const asSelf = <T>(
    user: AuditParty,
    session: Uint8Array,
    writeBy: WriteBy,
    body: (tx: TransactionSql) => Promise<T>,
  ) =>
    transaction(writeBy, async (tx): Promise<T | "caller_gone"> => {
      const [live] = await tx`
        select 1 from users u join sessions s on s.user_id = u.id
        where u.id = ${user.id} and s.token_hash = ${session}
          and s.expires_at > now() and s.password_version = u.password_version
          and not ${disabledNow(tx, "u")}
        for update of u`;
      if (!live) return "caller_gone";
      beforeWrite(writeBy);
      return await body(tx);
    });

  return {
    /** The user's factors as shown; undefined when no user has this id. */
    async summary(userId: number): Promise<MfaSummary | undefined> {
      const [row] = await sql<{ mfa: MfaSummary }[]>`
        select ${summary} as mfa from users where id = ${userId}`;
      return row?.mfa;
    },

    /**
     * Starts a TOTP enrolment with this secret, replacing one not yet
     * confirmed; `enrolled` when the user has a confirmed TOTP already.
     */
    async beginTotp(
      userId: number,
      secret: string,
      writeBy: WriteBy,
    ): Promise<"begun" | "enrolled"> {
      beforeWrite(writeBy);
      const rows = await sql`
        insert into mfa_totp as t (user_id, secret) values (${userId}, ${secret})
        on conflict (user_id) do update set secret = excluded.secret,
          created_at = now()
        where t.confirmed_at is null
        returning 1`;
      return rows.length ? "begun" : "enrolled";
    },

    /** The secret of the user's TOTP: the unconfirmed one, or the confirmed one. */
    async totpSecret(
      userId: number,
      confirmed: boolean,
    ): Promise<string | undefined> {
      const [row] = await sql<{ secret: string }[]>`
        select secret from mfa_totp
        where user_id = ${userId}
          and (confirmed_at is not null) = ${confirmed}`;
      return row?.secret;
    },

    /**
     * Confirms the enrolment of `secret` with a code of time step `step`:
     * the TOTP counts from then on (that step is used), the user gets these
     * recovery codes, and the session counts as second-factored. `changed`
     * when the enrolment was replaced or confirmed meanwhile.
     */
    async confirmTotp(
      user: AuditParty,
      session: Uint8Array,
      secret: string,
      step: number,
      codeHashes: Uint8Array[],
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<"confirmed" | "changed" | "caller_gone"> {
      return await asSelf(user, session, writeBy, async (tx) => {
        const rows = await tx`
          update mfa_totp set confirmed_at = now(), last_step = ${step}
          where user_id = ${user.id} and secret = ${secret}
            and confirmed_at is null
          returning 1`;
        if (!rows.length) return "changed" as const;
        await syncEnabled(tx, user.id);
        await replaceCodes(tx, user.id, codeHashes);
        await markSession(tx, session);
        await recordAudit(tx, auditEvents.mfaEnrolled(user, "totp", context));
        return "confirmed" as const;
      });
    },

    /**
     * Takes time step `step` of the user's confirmed TOTP (in the
     * transaction that lets the user in): false when a code of that step or
     * a later one was accepted already (a replay).
     */
    async useTotpStep(tx: TransactionSql, userId: number, step: number) {
      const rows = await tx`
        update mfa_totp set last_step = ${step}
        where user_id = ${userId} and confirmed_at is not null
          and last_step < ${step}
        returning 1`;
      return rows.length > 0;
    },

    /** Uses up one of the user's recovery codes (in that transaction): false when none has this hash. */
    async useRecoveryCode(
      tx: TransactionSql,
      userId: number,
      codeHash: Uint8Array,
    ) {
      const rows = await tx`
        delete from mfa_recovery_codes
        where user_id = ${userId} and code_hash = ${codeHash}
        returning 1`;
      return rows.length > 0;
    },

    /** The user's passkeys, for WebAuthn's allow and exclude lists. */
    async passkeys(userId: number): Promise<StoredPasskey[]> {
      return await sql<StoredPasskey[]>`
        select id, credential_id as "credentialId", public_key as "publicKey",
          counter::float8 as counter, transports
        from mfa_passkeys where user_id = ${userId} order by id`;
    },

    /** Notes a passkey's use (in that transaction): its new signature counter and the time. */
    async passkeyUsed(tx: TransactionSql, id: number, counter: number) {
      await tx`
        update mfa_passkeys set counter = ${counter}, last_used_at = now()
        where id = ${id}`;
    },

    /**
     * Adds a verified passkey; the session counts as second-factored. When
     * it is the user's first factor they get these recovery codes (else
     * `codeHashes` is ignored and their codes stay). Answers the passkey's
     * id and whether the codes were issued; `duplicate` for a credential
     * registered already.
     */
    async addPasskey(
      user: AuditParty,
      session: Uint8Array,
      passkey: NewPasskey,
      codeHashes: Uint8Array[],
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<
      | { id: number; codesIssued: boolean }
      | "duplicate"
      | "caller_gone"
    > {
      return await asSelf(user, session, writeBy, async (tx) => {
        const [{ had }] = await tx<{ had: boolean }[]>`
          select mfa_enabled as had from users where id = ${user.id}`;
        const [row] = await tx<{ id: number }[]>`
          insert into mfa_passkeys (user_id, credential_id, public_key,
            counter, transports, name)
          values (${user.id}, ${passkey.credentialId}, ${passkey.publicKey},
            ${passkey.counter}, ${passkey.transports}, ${passkey.name})
          on conflict (credential_id) do nothing
          returning id`;
        if (!row) return "duplicate" as const;
        await syncEnabled(tx, user.id);
        if (!had) await replaceCodes(tx, user.id, codeHashes);
        await markSession(tx, session);
        await recordAudit(
          tx,
          auditEvents.mfaEnrolled(user, "passkey", context),
        );
        return { id: row.id, codesIssued: !had };
      });
    },

    /**
     * Removes the user's TOTP (`passkeyId` undefined) or one passkey;
     * false when there is no such factor. The last factor takes the
     * recovery codes with it.
     */
    async remove(
      user: AuditParty,
      session: Uint8Array,
      passkeyId: number | undefined,
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<boolean | "caller_gone"> {
      return await asSelf(user, session, writeBy, async (tx) => {
        const rows = passkeyId === undefined
          ? await tx`
            delete from mfa_totp
            where user_id = ${user.id} and confirmed_at is not null
            returning 1`
          : await tx`
            delete from mfa_passkeys
            where user_id = ${user.id} and id = ${passkeyId}
            returning 1`;
        if (!rows.length) return false;
        await syncEnabled(tx, user.id);
        const method = passkeyId === undefined ? "totp" : "passkey";
        await recordAudit(tx, auditEvents.mfaRemoved(user, method, context));
        return true;
      });
    },

    /** New recovery codes for a user with a factor; false without one. */
    async regenerateCodes(
      user: AuditParty,
      session: Uint8Array,
      codeHashes: Uint8Array[],
      context: AuditContext,
      writeBy: WriteBy,
    ): Promise<boolean | "caller_gone"> {
      return await asSelf(user, session, writeBy, async (tx) => {
        const [row] = await tx<{ enabled: boolean }[]>`
          select mfa_enabled as enabled from users where id = ${user.id}`;
        if (!row.enabled) return false;
        await replaceCodes(tx, user.id, codeHashes);
        await touch(tx, user.id);
        await recordAudit(tx, auditEvents.mfaRecoveryCodes(user, context));
        return true;
      });
    },

    /**
     * A step-up: `check` decides the factor in the transaction; when it
     * holds, the session counts as second-factored now and the user's
     * version moves (a recovery code used, a passkey's last use).
     */
    async stepUp<V extends { ok: boolean }>(
      userId: number,
      session: Uint8Array,
      check: (tx: TransactionSql) => Promise<V>,
      writeBy: WriteBy,
    ): Promise<V> {
      return await transaction(writeBy, async (tx) => {
        const verdict = await check(tx);
        if (verdict.ok) {
          await markSession(tx, session);
          await touch(tx, userId);
        }
        return verdict;
      });
    },

    /**
     * Removes every factor and code of the user, their pending logins and
     * wrong-code count, and ends their sessions (an admin's reset, on the
     * admin's behalf: `write`). `not_found` for no such user.
     */
    async reset(
      userId: number,
      write: CallerWrite,
    ): Promise<"reset" | "not_found" | CallerRefusal> {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const [target] = await tx<AuditParty[]>`
          select id, username from users where id = ${userId}`;
        if (!target) return "not_found" as const;
        await resetFactors(tx, userId);
        await recordAudit(
          tx,
          auditEvents.mfaReset(actor, target, write.context),
        );
        return "reset" as const;
      });
    },

    /** The recovery task's reset (no actor, no request); false for no such user. */
    async resetByTask(userId: number, context: AuditContext) {
      return await transaction(NO_DEADLINE, async (tx) => {
        const [target] = await tx<AuditParty[]>`
          select id, username from users where id = ${userId} for update`;
        if (!target) return false;
        await resetFactors(tx, target.id);
        await recordAudit(tx, auditEvents.mfaReset(null, target, context));
        return true;
      });
    },

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
          return "disabled" as const;
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
        select u.id, u.username, u.name, u.email, u.role,
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

/** Every factor, code, pending login and session of the user go; the user's row notes no factor. */
async function resetFactors(tx: TransactionSql, userId: number) {
  await tx`delete from mfa_totp where user_id = ${userId}`;
  await tx`delete from mfa_passkeys where user_id = ${userId}`;
  await tx`delete from mfa_recovery_codes where user_id = ${userId}`;
  await tx`delete from mfa_challenges where user_id = ${userId}`;
  await tx`delete from mfa_pending where user_id = ${userId}`;
  await tx`delete from mfa_failures where user_id = ${userId}`;
  await tx`delete from sessions where user_id = ${userId}`;
  await tx`update users set mfa_enabled = false where id = ${userId}`;
}

export type MfaStore = ReturnType<typeof createMfaStore>;
