import type { Sql, TransactionSql } from "postgres";
import { PROFILE_FIELDS } from "../accounts/fields.ts";
import type { AuditEvent } from "../audit/events.ts";
import {
  canonicalKey,
  lookalikeKey,
  lowerCaseKey,
} from "../users/canonical.ts";
import type { Account, Role, User, UserDetail } from "../users/user.ts";
import { disabledNow, disableExpired } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { mfaSummaryOf } from "./mfa-factors.ts";
import { iso } from "./time.ts";
import { type Refusal, refuse } from "../refusal.ts";

export interface NewUser {
  username: string;
  name: string;
  email: string;
  role: Role;
  passwordHash: string;
}

export interface UserChange {
  role?: Role;
  passwordHash?: string;
}

export type LoginUser = Account & {
  passwordHash: string;
  /** Sessions are bound to it; it grows with every password change. */
  passwordVersion: number;
  /** Whether a login needs a second factor. */
  mfaEnabled: boolean;
  /** Disabled now (the login's write decides, under the row's lock). */
  disabled: boolean;
  /** An identity provider that links the account refuses its password sign-in (docs/sso.md). */
  providerOnly: boolean;
};

/** A disable as an admin asks for it. */
export interface DisableRequest {
  reason: string | null;
  /** ISO 8601, in the future; null: until enabled. */
  until: string | null;
}

/** A user's detail and its row's version, and whether a disable has run out unrecorded (see users.get). */
export interface FoundUser {
  user: UserDetail;
  version: string;
  /** A disable whose `until` passed but that no sweep or login has recorded yet. */
  expired: boolean;
}

/** A user's keys as the users table holds them (src/users/canonical.ts). */
export const identityKeys = (u: { username: string; email: string }) => ({
  username_key: lowerCaseKey(u.username),
  email_key: lowerCaseKey(u.email),
  username_fold: canonicalKey(u.username),
  email_fold: canonicalKey(u.email),
  username_skeleton: lookalikeKey(u.username),
  email_skeleton: lookalikeKey(u.email),
});

/**
 * The account as every read shows it (Account: id, username, name, e-mail,
 * role), from the users row named `t` in the query: the one list of its
 * columns. A flat fragment (see account-state.ts), so a hot lookup pays no
 * rebuilding of nested fragments.
 */
export const accountColumns = (sql: Sql | TransactionSql, t = "users") =>
  sql.unsafe(`${t}.id, ${t}.username, ${t}.name, ${t}.email, ${t}.role`);

/**
 * The account's profile fields (src/accounts/fields.ts) of the users row
 * `t`: as columns under their wire names, or as one object `profile`.
 */
export const profileColumns = (sql: Sql | TransactionSql, t = "users") =>
  sql.unsafe(
    PROFILE_FIELDS.map((f) => `${t}.${f.column} as "${f.wire}"`).join(", "),
  );
export const profileObject = (sql: Sql | TransactionSql, t = "users") =>
  sql.unsafe(
    `json_build_object(${
      PROFILE_FIELDS.map((f) => `'${f.wire}', ${t}.${f.column}`).join(", ")
    }) as profile`,
  );

/** A new users row's columns, every key included. */
export const newRowValues = (u: NewUser) => ({
  username: u.username,
  name: u.name,
  name_key: lowerCaseKey(u.name),
  email: u.email,
  role: u.role,
  password_hash: u.passwordHash,
  ...identityKeys(u),
});

/** A row whose new keys an older release left unset, and what happened when they were computed. */
export type Rekeyed =
  | { id: number; outcome: "keyed" }
  | { id: number; outcome: "collision"; with: number[] };

const UNIQUE_VIOLATION = "23505";
export const isUniqueViolation = (e: unknown) =>
  (e as { code?: string })?.code === UNIQUE_VIOLATION;

/** The write's outcome, or refused as `duplicate` when it broke a unique key (and so rolled back). */
export async function orDuplicate<T>(
  write: Promise<T>,
): Promise<T | Refusal<"duplicate">> {
  try {
    return await write;
  } catch (e) {
    if (isUniqueViolation(e)) return refuse("duplicate");
    throw e;
  }
}

/**
 * Where the users row came from (src/accounts/fields.ts, `Source`): its
 * owning connection (a live one first), else the identity provider that
 * created it, else its import, else the API. Each a lookup by user id on
 * an index (scim_user_links_user, sso_links_user) or the row itself.
 */
export const sourceOf = (sql: Sql | TransactionSql) =>
  sql`coalesce(
    (select json_build_object('type', 'scim', 'id', c.id, 'name', c.name)
      from scim_user_links l join scim_connections c on c.id = l.connection_id
      where l.user_id = users.id and l.owner
      order by c.revoked_at is null desc, c.id limit 1),
    (select json_build_object('type', 'sso', 'id', p.id, 'name', p.name)
      from sso_links s join sso_providers p on p.id = s.provider_id
      where s.user_id = users.id and s.created
      order by p.id limit 1),
    case when users.import_id is not null then json_build_object(
      'type', 'import', 'id', users.import_id, 'name', null) end,
    json_build_object('type', 'api', 'id', null, 'name', null))`;

/**
 * The live connection that owns the users row (src/accounts/fields.ts,
 * `ScimLink`): its identity provider sets the user's role from its groups.
 */
export const scimLinkOf = (sql: Sql | TransactionSql) =>
  sql`(select json_build_object(
      'connection', json_build_object('id', c.id, 'name', c.name),
      'externalId', l.external_id,
      'groups', coalesce((select json_agg(json_build_object(
          'id', g.id, 'displayName', g.display_name)
          order by g.display_name, g.id)
        from scim_members m join scim_groups g on g.id = m.group_id
        where m.user_id = users.id and g.connection_id = c.id), '[]'::json))
    from scim_user_links l join scim_connections c on c.id = l.connection_id
    where l.user_id = users.id and l.owner and c.revoked_at is null
    order by c.id limit 1)`;

/** A detail read's row: the detail, and what `found` takes apart (see FoundUser). */
export type DetailRow = UserDetail & { version__: string; expired__: boolean };

/**
 * The one mapping from a users row to what the service shows, for every
 * part of the users store (users.ts, user-lifecycle.ts, user-service.ts).
 */
export function userRows(sql: Sql) {
  const account = accountColumns(sql);
  const user = sql`${account},
    ${iso(sql, "created_at")} as "createdAt"`;

  /** A new users row, every key included. */
  const newRow = (u: NewUser) => sql(newRowValues(u));

  const profile = profileColumns(sql);
  /** The account's state, as the detail and the list's `include=state` show it. */
  const state = sql`case when ${disabledNow(sql)} then json_build_object(
      'reason', users.disabled_reason,
      'until', ${iso(sql, "users.disabled_until")},
      'since', ${iso(sql, "users.disabled_at")}) end as disabled,
    ${iso(sql, "users.last_login_at")} as "lastLoginAt",
    ${sourceOf(sql)} as source`;
  /** One user as `GET /api/users/{id}` shows them (the list keeps `user`). */
  const detail = sql`${user}, ${state},
    ${mfaSummaryOf(sql)} as mfa, ${scimLinkOf(sql)} as scim, ${profile}`;
  /**
   * A list item with `include=state`: a few indexed lookups per user
   * (links by user id), no aggregate, so a page costs what its rows do.
   */
  const withState = sql`${user}, ${state},
    users.mfa_enabled as "mfaEnabled"`;
  /** What a detail read returns beside the detail (see FoundUser). */
  const detailMeta = sql`users.version::text as "version__",
    ${disableExpired(sql)} as "expired__"`;
  const found = (row: DetailRow): FoundUser => {
    const { version__, expired__, ...shown } = row;
    return { user: shown, version: version__, expired: expired__ };
  };
  /** Inserts the user and, in the same transaction, `recorded`'s record of the new row. */
  const insertUser = async (
    tx: TransactionSql,
    u: NewUser,
    recorded: (row: User) => AuditEvent,
  ) => {
    const [row] = await tx<
      User[]
    >`insert into users ${newRow(u)} returning ${user}`;
    await recordAudit(tx, recorded(row));
    return row;
  };

  return {
    account,
    user,
    withState,
    newRow,
    detail,
    detailMeta,
    found,
    insertUser,
  };
}
