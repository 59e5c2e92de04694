/**
 * The one way an account changes, whichever door the change comes through
 * (the API and its console, SCIM, imports): create, change fields, role,
 * password, disable and enable, delete. Every invariant is applied here,
 * once: identity keys follow the username and e-mail; a new password ends
 * the account's sessions but the actor's own and clears its failed logins;
 * a disable ends its sessions; a demotion, a disable and a delete revoke the
 * keys it minted for others; and the records say what changed in one
 * vocabulary, with the door in their context.
 *
 * Each function works inside the caller's transaction, after the caller's
 * door has decided the change may happen (who acts is re-checked by the
 * API's asCaller, a connection's standing by SCIM's owners, an import's
 * uploader by its batch), and answers the records to keep: the caller
 * records them (recordAll, or in bulk).
 */
import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  type AuditEvent,
  auditEvents,
  MINTER_REMOVED,
} from "../audit/events.ts";
import type { ConnectionRef } from "../audit/scim-events.ts";
import { disabledNow, disableExpired } from "./account-state.ts";
import { revokeMinted } from "./api-keys.ts";
import { recordAudit } from "./audit.ts";
import { clearLoginFailures } from "./throttle.ts";
import { iso } from "./time.ts";
import {
  identityKeys,
  newRowValues,
  profileObject,
  userRows,
} from "./user-rows.ts";
import { lowerCaseKey } from "../users/canonical.ts";
import type { Role, User } from "../users/user.ts";
import { PROFILE_FIELDS } from "../accounts/fields.ts";
import { type Refusal, refuse } from "../refusal.ts";
import type {
  AccountChange,
  DisableChange,
  NewAccount,
} from "./account-change.ts";

/**
 * Who changes the account: a person or their key (`actor`), a SCIM
 * connection (`connection`, with the admin who changed the connection as
 * `actor` when one did), an import job (its uploader as `actor`), or the
 * service itself (neither).
 */
export interface Acting {
  actor: AuditParty | null;
  connection?: ConnectionRef;
  context: AuditContext;
  /** The actor's own session, which outlives their change of their own password. */
  keepSession?: Uint8Array;
}

/**
 * A caller's write (the API and the console) as the write path names who
 * acts: the re-checked caller, their request, and their own session.
 */
export const acting = (
  actor: AuditParty,
  write: { context: AuditContext; caller: { session?: Uint8Array } },
): Acting => ({
  actor,
  context: write.context,
  keepSession: write.caller.session,
});

// The shapes of a change and a new account (account-change.ts), named here too.
export type { AccountChange, DisableChange, NewAccount };

/** The records of `events` in the order given, sent with what follows (recordAudit). */
export async function recordAll(
  tx: TransactionSql,
  events: readonly AuditEvent[],
): Promise<void> {
  for (const e of events) await recordAudit(tx, e);
}

/** The record as `by` makes it: a connection's writes name it in their details. */
const as = (by: Acting, e: AuditEvent): AuditEvent =>
  by.connection
    ? {
      ...e,
      details: {
        ...e.details,
        connection: { id: by.connection.id, name: by.connection.name },
      },
    }
    : e;

/** Revokes the keys the account minted for others, and their records. */
async function revokeMintedBy(
  tx: TransactionSql,
  id: number,
  by: Acting,
  onlyIf?: PendingQuery<Row[]>,
): Promise<AuditEvent[]> {
  const keys = await revokeMinted(tx, id, onlyIf);
  return keys.toSorted((a, b) => a.id - b.id).map(({ owner, ...key }) =>
    as(
      by,
      auditEvents.keyRevoked(by.actor, owner, key, by.context, MINTER_REMOVED),
    )
  );
}

const sameInstant = (a: string | null, b: string | null) =>
  a === b || (a !== null && b !== null && Date.parse(a) === Date.parse(b));

/** The account as a change finds it, its row locked. */
interface Before {
  username: string;
  name: string;
  email: string;
  role: Role;
  externalId: string | null;
  version: string;
  profile: Record<string, string | null>;
  sameHash: boolean;
  disabled: boolean;
  ranOut: boolean;
  reason: string | null;
  until: string | null;
}

/** What a change did: the records to keep, and whether the account's row was written. */
export interface Changed {
  events: AuditEvent[];
  /** Whether any column of the account's row changed. */
  written: boolean;
}

export function createAccountWrites(sql: Sql) {
  const { user } = userRows(sql);
  const profileRead = profileObject(sql);

  /**
   * Creates the accounts in one statement, each as `create` says, and
   * answers them in the order given, each with its version, and their
   * records in that order. A broken unique key creates none of them.
   */
  const createMany = async (
    tx: TransactionSql,
    us: NewAccount[],
    by: Acting,
  ): Promise<
    { users: (User & { version: string })[]; events: AuditEvent[] }
  > => {
    // Every profile and disable column in each row: rows inserted
    // together share their columns (null is what an unset one holds).
    const inserted = await tx<(User & { version: string })[]>`
      insert into users ${
      sql(us.map((u) => ({
        ...newRowValues(u),
        ...Object.fromEntries(
          PROFILE_FIELDS.map((f) => [f.column, u.profile?.[f.wire] ?? null]),
        ),
        disabled_reason: u.disabled?.reason ?? null,
        disabled_until: u.disabled?.until ?? null,
      })))
    } returning ${user}, version::text as version`;
    // RETURNING promises no order: matched by the (unique) username.
    const byName = new Map(inserted.map((r) => [r.username, r]));
    const rows = us.map((u) => byName.get(u.username)!);
    const events: AuditEvent[] = [];
    for (const [i, u] of us.entries()) {
      const [row, d] = [rows[i], u.disabled];
      events.push(as(by, auditEvents.userCreated(by.actor, row, by.context)));
      if (!d) continue;
      await tx`update users set disabled_at = coalesce(${
        d.since ?? null
      }::timestamptz, now()) where id = ${row.id}`;
      events.push(
        as(by, auditEvents.userDisabled(by.actor, row, d, by.context)),
      );
    }
    return { users: rows, events };
  };

  return {
    createMany,

    /**
     * Creates the account and answers it as the list shows it, its version
     * as inserted, with its records: `user.created`, and `user.disabled`
     * when created disabled.
     */
    async create(
      tx: TransactionSql,
      u: NewAccount,
      by: Acting,
    ): Promise<{ user: User; version: string; events: AuditEvent[] }> {
      const { users: [{ version, ...row }], events } = await createMany(
        tx,
        [u],
        by,
      );
      return { user: row, version, events };
    },

    /**
     * Applies `change` to the account, under its row's lock: only what
     * differs is written (a change to nothing writes nothing and keeps the
     * version), with every consequence and record. With `ifVersions`
     * (If-Match) the row is changed only at one of those versions.
     */
    async change(
      tx: TransactionSql,
      id: number,
      change: AccountChange,
      by: Acting,
      ifVersions?: string[],
    ): Promise<Changed | Refusal<"not_found" | "precondition_failed">> {
      const hash = change.passwordHash ?? null;
      const [before] = await tx<Before[]>`
        select username, name, email, role, external_id as "externalId",
          version::text as version,
          ${profileRead},
          password_hash = ${hash}::text as "sameHash",
          ${disabledNow(tx)} as disabled, ${disableExpired(tx)} as "ranOut",
          disabled_reason as reason, ${iso(tx, "disabled_until")} as until
        from users where id = ${id} for update`;
      if (!before) return refuse("not_found");
      if (ifVersions && !ifVersions.includes(before.version)) {
        return refuse("precondition_failed");
      }
      const differs = <K extends "username" | "name" | "email">(k: K) =>
        change[k] !== undefined && change[k] !== before[k];
      const renamed = differs("username");
      const named = differs("name");
      const mailed = differs("email");
      const profile = PROFILE_FIELDS.filter((f) =>
        change.profile?.[f.wire] !== undefined &&
        (change.profile[f.wire] ?? null) !== (before.profile[f.wire] ?? null)
      );
      const externalId = change.externalId !== undefined &&
        (change.externalId ?? null) !== before.externalId;
      const role = change.role !== undefined && change.role !== before.role
        ? change.role
        : null;
      const newHash = hash !== null && !before.sameHash ? hash : null;
      const d = change.disabled;
      const disabling = d != null && (!before.disabled ||
        d.reason !== before.reason || !sameInstant(d.until, before.until));
      const enabling = d === null && (before.disabled || before.ranOut);
      const changed = [
        ...renamed ? ["username"] : [],
        ...named ? ["name"] : [],
        ...mailed ? ["email"] : [],
        ...profile.map((f) => f.wire),
        ...externalId ? ["externalId"] : [],
        ...change.alsoChanged ?? [],
      ];
      const written = renamed || named || mailed || profile.length > 0 ||
        externalId || role !== null || newHash !== null || disabling ||
        enabling;
      let passwordVersion = 0;
      if (written) {
        const keys = identityKeys({
          username: change.username ?? before.username,
          email: change.email ?? before.email,
        });
        const set = {
          ...renamed && {
            username: change.username,
            username_key: keys.username_key,
            username_fold: keys.username_fold,
            username_skeleton: keys.username_skeleton,
          },
          ...named && {
            name: change.name,
            name_key: lowerCaseKey(change.name!),
          },
          ...mailed && {
            email: change.email,
            email_key: keys.email_key,
            email_fold: keys.email_fold,
            email_skeleton: keys.email_skeleton,
          },
          ...Object.fromEntries(
            profile.map((f) => [f.column, change.profile![f.wire] ?? null]),
          ),
          ...externalId && { external_id: change.externalId ?? null },
          ...role !== null && { role },
          ...newHash !== null && { password_hash: newHash },
          ...(disabling || enabling) && {
            disabled_reason: d?.reason ?? null,
            disabled_until: d?.until ?? null,
          },
        };
        // The version and the disable's start are expressions, not values.
        const computed = sql`
          password_version = password_version + ${newHash === null ? 0 : 1},
          disabled_at = case
            when ${enabling} then null
            when ${disabling} then coalesce(${d?.since ?? null}::timestamptz,
              case when ${disabledNow(tx)} then disabled_at else now() end)
            else disabled_at end`;
        type Written = { passwordVersion: number }[];
        // postgres.js reads `set` before a helper to write an assignment list.
        const [row] = Object.keys(set).length > 0
          ? await tx<Written>`
            update users set ${sql(set)}, ${computed} where id = ${id}
            returning password_version as "passwordVersion"`
          : await tx<Written>`
            update users set ${computed} where id = ${id}
            returning password_version as "passwordVersion"`;
        passwordVersion = row.passwordVersion;
      }
      const target = { id, username: change.username ?? before.username };
      const events: AuditEvent[] = [];
      const record = (e: AuditEvent) => events.push(as(by, e));
      const { actor, context } = by;
      if (changed.length > 0) {
        record(auditEvents.userUpdated(actor, target, changed, context));
      }
      if (role !== null) {
        record(
          auditEvents.roleChanged(actor, target, before.role, role, context),
        );
      }
      if ((disabling || enabling) && before.ranOut) {
        // The disable that ran out by itself, recorded before what follows it.
        record(auditEvents.userEnabled(null, target, true, context));
      }
      if (disabling) {
        record(auditEvents.userDisabled(actor, target, d!, context));
      } else if (enabling && before.disabled) {
        record(auditEvents.userEnabled(actor, target, false, context));
      }
      const [minted] = await Promise.all([
        disabling || (before.role === "admin" && role !== null)
          ? revokeMintedBy(tx, id, by)
          : [],
        disabling ? tx`delete from sessions where user_id = ${id}` : null,
      ]);
      events.push(...minted);
      if (newHash !== null) {
        // A key's caller, a connection and a job have no session to keep.
        const keep = by.keepSession ?? new Uint8Array();
        await Promise.all([
          tx`delete from sessions where user_id = ${id} and token_hash <> ${keep}`,
          tx`update sessions set password_version = ${passwordVersion}
            where user_id = ${id} and token_hash = ${keep}`,
          clearLoginFailures(tx, id),
        ]);
        record(
          change.ownPassword && actor?.id === id
            ? auditEvents.passwordChanged(actor, target, context)
            : auditEvents.passwordReset(actor, target, context),
        );
      }
      return { events, written };
    },

    /**
     * Deletes the account: its sessions and keys go with the row (foreign
     * keys), the keys it minted for others are revoked first. `ifVersions`
     * as for change.
     */
    async remove(
      tx: TransactionSql,
      id: number,
      by: Acting,
      ifVersions?: string[],
    ): Promise<AuditEvent[] | Refusal<"not_found" | "precondition_failed">> {
      const onlyIf = ifVersions === undefined
        ? sql`true`
        : sql`version = any(${ifVersions}::int8[])`;
      // Both under the same condition, sent together: the revocation reads
      // the keys before the deletion's cascade removes them.
      const [minted, [row]] = await Promise.all([
        revokeMintedBy(tx, id, by, onlyIf),
        tx<AuditParty[]>`
          delete from users where id = ${id} and ${onlyIf}
          returning id, username`,
      ]);
      if (!row) {
        if (ifVersions === undefined) return refuse("not_found");
        const [exists] = await tx`select 1 from users where id = ${id}`;
        return refuse(exists ? "precondition_failed" : "not_found");
      }
      return [
        as(by, auditEvents.userDeleted(by.actor, row, by.context)),
        ...minted,
      ];
    },
  };
}

export type AccountWrites = ReturnType<typeof createAccountWrites>;
