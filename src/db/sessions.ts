import type { PasswordUpgrade } from "../auth/passwords.ts";
import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { type AuditContext, auditEvents } from "../audit/events.ts";
import type { Account, SessionInfo } from "../users/user.ts";
import {
  disableCleared,
  disabledNow,
  disableExpired,
  liveSession,
} from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import {
  clearLoginCounter,
  type LoginCounter,
  takeBackAttempt,
} from "./throttle.ts";
import { iso } from "./time.ts";
import {
  beforeWrite,
  type CallerRefusal,
  type CallerWrite,
  type WriteBy,
  type Writer,
} from "./write.ts";
import { accountColumns } from "./user-rows.ts";
import { grantedTo, grantsSeen } from "./grants.ts";
import type { Granted } from "../auth/permissions.ts";
import { type Reason, type Refusal, refuse } from "../refusal.ts";

/** Where a login came from, kept with its session for an admin to see. */
export interface SessionOrigin {
  clientAddress: string | null;
  /** At most 256 characters (the caller cuts it). */
  userAgent: string | null;
}

/**
 * What a login's write made of a right password: a session, none because
 * the password changed since it was checked (`stale`), or none because the
 * user is disabled.
 */
export type SessionStart = "started" | "stale" | Refusal<"disabled">;

/**
 * The second factor of a login, decided in the session's transaction
 * (under the user's row lock): `write` answers nothing when it holds, or
 * the outcome to answer instead of a session (a wrong or throttled code,
 * whose count and record still commit; a pending login used meanwhile).
 * `methods` are what the record names beyond the password.
 */
export interface LoginFactor<O extends Reason> {
  methods(): readonly string[];
  write(tx: TransactionSql): Promise<Refusal<O> | undefined>;
}

/**
 * A login through an identity provider (docs/sso.md) instead of a
 * password: recorded with the provider, and `secondFactor` when the
 * provider asserted one (its `amr` or `acr`), which the session then holds
 * as passed for MFA_REQUIRED_FOR_ADMINS and step-up.
 */
export interface ProviderLogin {
  provider: { id: number; name: string };
  secondFactor: boolean;
}

/** What ending sessions did: how many live ones ended, and whether the caller's own was one. */
export interface SessionsEnded {
  ended: number;
  current: boolean;
}

/** A live session's user, and the session's second-factor state. */
export interface ResolvedSession {
  account: Account;
  /** Whether the user has a confirmed factor. */
  mfaEnabled: boolean;
  /** Seconds since the session last passed a second factor; null: never. */
  secondFactorAge: number | null;
  /** What the user's roles grant (grants.ts); null: an admin's every one. */
  granted: Granted;
}

/** Sessions: logins, their lookup, their end. */
export function createSessions(sql: Sql, { transaction, asCaller }: Writer) {
  const userAccount = accountColumns(sql, "u");
  /** A session (`s`) whose `last_seen_at` is due: never written, or over a minute ago. */
  const unseen = sql`(s.last_seen_at is null
    or s.last_seen_at <= now() - interval '1 minute')`;
  // Built once: a fragment is constant text, and building one costs every
  // authenticated request its share.
  const live = liveSession(sql);
  const granted = grantedTo(sql, "u");
  const grantsVersion =
    sql`(select version from grants_version where singleton)`;
  const seen = grantsSeen();

  return {
    /**
     * A session for a login whose password was right, under the user's row
     * lock, so that it serialises with a password reset and a disable:
     * none when the password changed since it was checked (`stale`, a login
     * that raced a reset fails) or when the user is disabled (the attempt's
     * count is taken back and `login.refused` recorded; a disable that
     * commits after this session is made ends it). Otherwise the session is
     * bound to that password version, `last_login_at` written, a disable
     * that ran out recorded and cleared, and the login's counter cleared.
     */
    async create<O extends Reason = never>(
      tokenHash: Uint8Array,
      user: AuditParty & { passwordVersion: number },
      ttlSeconds: number,
      counter: LoginCounter,
      origin: SessionOrigin,
      context: AuditContext,
      writeBy: WriteBy,
      factor?: LoginFactor<O>,
      upgrade?: PasswordUpgrade,
      viaProvider?: ProviderLogin,
    ): Promise<SessionStart | Refusal<O>> {
      return await transaction(writeBy, async (tx) => {
        const [row] = await tx<{ disabled: boolean; ranOut: boolean }[]>`
          select ${disabledNow(sql)} as disabled,
            ${disableExpired(sql)} as "ranOut"
          from users
          where id = ${user.id} and password_version = ${user.passwordVersion}
          for update`;
        if (!row) return "stale";
        // The lock may have been waited for (a reset or disable holding it).
        beforeWrite(writeBy);
        if (row.disabled) {
          await takeBackAttempt(tx, counter);
          await recordAudit(
            tx,
            auditEvents.loginRefused(user, context, viaProvider?.provider),
          );
          return refuse("disabled");
        }
        const refused = factor && await factor.write(tx);
        if (refused !== undefined) {
          // The password was right: wrong codes count only toward their
          // own limit, never toward the password throttle.
          await clearLoginCounter(tx, counter);
          return refused;
        }
        // An imported hash becomes bcrypt; the password itself is unchanged,
        // so its version (and every session bound to it) stays.
        const [upgraded] = await tx`
          update users set last_login_at = now()${
          row.ranOut ? sql`, ${disableCleared(sql)}` : sql``
        }${
          upgrade
            ? sql`, password_hash = case when password_hash = ${upgrade.replaces}
              then ${upgrade.passwordHash} else password_hash end`
            : sql``
        }
          where id = ${user.id}
          returning password_hash = ${upgrade?.passwordHash ?? null}::text
            as upgraded`;
        await tx`
          insert into sessions (token_hash, user_id, password_version,
            expires_at, client_address, user_agent, second_factor_at)
          values (${tokenHash}, ${user.id}, ${user.passwordVersion},
            now() + make_interval(secs => ${ttlSeconds}),
            ${origin.clientAddress}, ${origin.userAgent},
            ${factor || viaProvider?.secondFactor ? sql`now()` : null})`;
        await clearLoginCounter(tx, counter);
        if (row.ranOut) {
          await recordAudit(
            tx,
            auditEvents.userEnabled(null, user, true, context),
          );
        }
        if (upgrade && upgraded.upgraded) {
          await recordAudit(
            tx,
            auditEvents.passwordUpgraded(user, upgrade.from, context),
          );
        }
        await recordAudit(
          tx,
          viaProvider
            ? auditEvents.loginSucceeded(
              user,
              ["oidc"],
              context,
              viaProvider.provider,
            )
            : auditEvents.loginSucceeded(
              user,
              ["password", ...factor?.methods() ?? []],
              context,
            ),
        );
        return "started";
      });
    },

    /**
     * The session, if live (unexpired, opened with the user's current
     * password, the user not disabled), and its user's current row, in one
     * statement. When the session was last seen over a minute ago (or
     * never), a second statement notes it, under the same condition, so
     * that requests at the same moment write it once: at most one write a
     * minute per session, none on the other requests. With it, whether the
     * user has a second factor and how long ago the session passed one, and
     * what the user's roles grant.
     */
    async resolve(
      tokenHash: Uint8Array,
    ): Promise<ResolvedSession | undefined> {
      // The roles' grants are resolved unless kept at the version read
      // here (grants.ts's grantsSeen). The version is a scalar subquery:
      // joined, its table counts as the planner's guess of thousands of
      // rows, which prices the statement past JIT's threshold, and JIT
      // then compiles it on every request.
      const kept = seen.kept(tokenHash);
      const [row] = await sql<
        (Account & Omit<ResolvedSession, "account"> & {
          unseen: boolean;
          grantsVersion: string;
        })[]
      >`
        select ${userAccount}, ${unseen} as unseen,
          u.mfa_enabled as "mfaEnabled",
          extract(epoch from now() - s.second_factor_at)::float8
            as "secondFactorAge", ${grantsVersion}::text as "grantsVersion",
          case when ${grantsVersion} = ${kept?.version ?? "0"}::int8 then null
            else ${granted} end as granted
        from sessions s join users u on u.id = s.user_id
        where s.token_hash = ${tokenHash} and ${live}`;
      if (!row) {
        if (kept) seen.forget(tokenHash);
        return undefined;
      }
      const {
        unseen: due,
        mfaEnabled,
        secondFactorAge,
        grantsVersion: version,
        granted: resolved,
        ...account
      } = row;
      let g: Granted = null;
      if (account.role !== "admin") {
        if (kept?.version === version) g = kept.granted;
        else {
          g = resolved ?? [];
          seen.keep(tokenHash, { version, granted: g });
        }
      }
      if (due) {
        await sql`
          update sessions s set last_seen_at = now()
          where s.token_hash = ${tokenHash} and ${unseen}`;
      }
      return { account, mfaEnabled, secondFactorAge, granted: g };
    },

    /**
     * The user's live sessions, newest first; undefined when no user has
     * this id. `current` marks the session of `callerSession` (token hash;
     * none for a caller with an API key).
     */
    async list(
      userId: number,
      callerSession: Uint8Array | undefined,
    ): Promise<SessionInfo[] | undefined> {
      const [exists] = await sql`select 1 from users where id = ${userId}`;
      if (!exists) return undefined;
      return await sql<SessionInfo[]>`
        select s.public_id::text as id,
          ${iso(sql, "s.created_at")} as "createdAt",
          ${iso(sql, "s.expires_at")} as "expiresAt",
          ${iso(sql, "s.last_seen_at")} as "lastSeenAt",
          s.client_address as "clientAddress", s.user_agent as "userAgent",
          coalesce(s.token_hash = ${callerSession ?? null}, false) as current
        from sessions s join users u on u.id = s.user_id
        where s.user_id = ${userId} and ${live}
          and s.public_id is not null
        order by s.created_at desc, s.public_id`;
    },

    /**
     * Ends the user's sessions: all of them, all but the caller's own
     * (`others`: a person ending their other sessions), or the one of this
     * public id (null: an id no session can have). Answers how many live
     * ones ended (rows that no longer let anyone in go too, uncounted) and
     * whether the caller's own was among them; recorded as `sessions.ended`
     * `{count}` when any did. The one place a request ends sessions, an
     * admin's or a person's own.
     */
    async end(
      userId: number,
      which: string | null | "all" | "others",
      write: CallerWrite,
    ): Promise<SessionsEnded | Refusal<"user_not_found"> | CallerRefusal> {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const [target] = await tx<AuditParty[]>`
          select id, username from users where id = ${userId}`;
        if (!target) return refuse("user_not_found");
        if (which === null) return { ended: 0, current: false };
        // A key's caller has no session of its own to keep or name.
        const own = write.caller.session ?? new Uint8Array();
        const chosen = which === "all"
          ? sql``
          : which === "others"
          ? sql`and s.token_hash <> ${own}`
          : sql`and s.public_id = ${which}::uuid`;
        const [outcome] = await tx<SessionsEnded[]>`
          with ended as (
            delete from sessions s using users u
            where u.id = s.user_id and s.user_id = ${userId} ${chosen}
            returning ${live} as live, s.token_hash = ${own} as own)
          select count(*) filter (where live)::int as ended,
            coalesce(bool_or(own), false) as current
          from ended`;
        if (outcome.ended > 0) {
          await recordAudit(
            tx,
            auditEvents.sessionsEnded(
              actor,
              target,
              outcome.ended,
              write.context,
            ),
          );
        }
        return outcome;
      });
    },

    /** Ends a session; when there was one, records its user's `logout` in the same transaction. */
    async revoke(
      tokenHash: Uint8Array,
      context: AuditContext,
      writeBy: WriteBy,
    ) {
      await transaction(writeBy, async (tx) => {
        const [user] = await tx<AuditParty[]>`
          delete from sessions s using users u
          where s.token_hash = ${tokenHash} and u.id = s.user_id
          returning u.id, u.username`;
        if (!user) return;
        // The delete may have waited for the session's row.
        beforeWrite(writeBy);
        await recordAudit(tx, auditEvents.logout(user, context));
      });
    },

    async revokeExpired(writeBy: WriteBy): Promise<number> {
      beforeWrite(writeBy);
      const rows =
        await sql`delete from sessions where expires_at <= now() returning 1`;
      return rows.length;
    },
  };
}
