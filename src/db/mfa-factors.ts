/**
 * A user's own second factors: TOTP secrets, passkeys and recovery codes
 * (as hashes), enrolled, used, listed and removed by the user, and the
 * step-up that marks their session. The factors as shown (`mfaSummaryOf`)
 * live here too, as the user's detail reads them.
 */
import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { type AuditContext, auditEvents } from "../audit/events.ts";
import type { MfaSummary } from "../users/user.ts";
import { disabledNow } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { iso } from "./time.ts";
import { beforeWrite, type WriteBy, type Writer } from "./write.ts";
import { type Refusal, refuse } from "../refusal.ts";

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

/** The user's own factors: enrolment, use, listing, removal, step-up. */
export function createMfaFactors(sql: Sql, { transaction }: Writer) {
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
    transaction(writeBy, async (tx): Promise<T | Refusal<"caller_gone">> => {
      const [live] = await tx`
        select 1 from users u join sessions s on s.user_id = u.id
        where u.id = ${user.id} and s.token_hash = ${session}
          and s.expires_at > now() and s.password_version = u.password_version
          and not ${disabledNow(tx, "u")}
        for update of u`;
      if (!live) return refuse("caller_gone");
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
    ): Promise<"begun" | Refusal<"enrolled">> {
      beforeWrite(writeBy);
      const rows = await sql`
        insert into mfa_totp as t (user_id, secret) values (${userId}, ${secret})
        on conflict (user_id) do update set secret = excluded.secret,
          created_at = now()
        where t.confirmed_at is null
        returning 1`;
      return rows.length ? "begun" : refuse("enrolled");
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
    ): Promise<"confirmed" | "changed" | Refusal<"caller_gone">> {
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
      | Refusal<"duplicate" | "caller_gone">
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
        if (!row) return refuse("duplicate");
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
    ): Promise<boolean | Refusal<"caller_gone">> {
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
    ): Promise<boolean | Refusal<"caller_gone">> {
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
  };
}
