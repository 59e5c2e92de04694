import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  type AuditEvent,
  auditEvents,
  MINTER_REMOVED,
} from "../audit/events.ts";
import { GROUP_DELETED } from "../audit/role-events.ts";
import type { Account } from "../users/user.ts";
import { disabledNow, liveKey } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { iso } from "./time.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";
import { accountColumns } from "./user-rows.ts";
import { grantedTo, keyListed } from "./grants.ts";
import type { Granted } from "../auth/permissions.ts";
import { type Refusal, refuse } from "../refusal.ts";

/** An API key as the service shows it: never its secret nor the secret's hash. */
export interface ApiKey {
  id: number;
  name: string;
  prefix: string;
  /** ISO 8601 in UTC with milliseconds, as every time the service shows. */
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  /**
   * The admin who minted the key (its owner for a key made before keys
   * recorded their minter): shown as the minter's username now.
   */
  createdBy: AuditParty;
  /** The permissions the key may use, within its minter's; absent: all of them. */
  permissions?: string[];
  /** The group whose members alone the key acts on; null: everyone its owner and minter reach. */
  reachGroupId: number | null;
}

/** A live key's owner and what the key may use (permissions.ts's accessOf reads it). */
export interface ResolvedKey {
  keyId: number;
  account: Account;
  /** What the owner's roles grant; null: an admin's every one. */
  granted: Granted;
  /** The key's own list, over its group when limited to one (grants.ts's keyListed); null: all of its minter's. */
  permissions: Granted;
  /** What its minter holds now, when another user minted it; null: every one (an admin, or the owner itself). */
  minter: Granted;
}

export interface NewApiKey {
  name: string;
  /** ISO 8601; null: the key does not expire. */
  expiresAt: string | null;
  prefix: string;
  secretHash: Uint8Array;
  /** Null: all of the minter's. */
  permissions: string[] | null;
  /** Null: not limited to a group's members. */
  reachGroupId: number | null;
}

/** A key's row as read: `permissions` null for all of its minter's. */
type StoredKey = Omit<ApiKey, "createdBy" | "permissions"> & {
  permissions: string[] | null;
};

/** A key as shown: `permissions` only when the key has a list of its own. */
const shownKey = (
  { permissions, ...key }: StoredKey & Pick<ApiKey, "createdBy">,
): ApiKey => permissions === null ? key : { ...key, permissions };

/** Live keys one user may hold at once. */
export const LIVE_KEYS_MAX = 100;

/** `last_used_at` is written when it is older than this, never per request. */
const LAST_USED_EVERY = "1 minute";

/** The keys of users: their SQL, as the store's other parts keep theirs. */
export function createApiKeyStore(sql: Sql, { asCaller }: Writer) {
  const ownerAccount = accountColumns(sql, "u");
  // Built once, as every request with a key reads it.
  const ownerLive = sql`${liveKey(sql)} and not ${disabledNow(sql, "u")}`;
  /** The key's own columns as shown; `k` names the api_keys row. */
  const shown = sql`k.id, k.name, k.prefix,
    ${iso(sql, "k.created_at")} as "createdAt",
    ${iso(sql, "k.expires_at")} as "expiresAt",
    ${iso(sql, "k.last_used_at")} as "lastUsedAt", k.permissions,
    k.reach_group_id as "reachGroupId"`;
  const ownerGranted = grantedTo(sql, "u");
  const minterGranted = grantedTo(sql, "m");

  /** The owner of a user id, as the trail names them; undefined when gone. */
  const owner = async (tx: TransactionSql, userId: number) => {
    const [row] = await tx<AuditParty[]>`
      select id, username from users where id = ${userId}`;
    return row;
  };

  return {
    /**
     * One indexed lookup: the live key with this secret's hash and its
     * owner's current row. When the key's `last_used_at` is older than a
     * minute (or unset), one conditional update sets it: of the requests
     * of that minute, on any instance, one writes. With it, what the
     * owner's roles grant, the key's list, and what the minter of a key
     * minted for another holds now (a minter gone holds nothing).
     */
    async resolve(secretHash: Uint8Array): Promise<ResolvedKey | undefined> {
      const [row] = await sql<
        (Account & Omit<ResolvedKey, "account"> & { stale: boolean })[]
      >`
        select k.id as "keyId", ${ownerAccount},
          (k.last_used_at is null
            or k.last_used_at < now() - ${LAST_USED_EVERY}::interval) as stale,
          ${ownerGranted} as granted, ${keyListed(sql, "k")} as permissions,
          case when k.created_by is null or k.created_by = k.user_id then null
            when m.id is null then '{}'::text[]
            else ${minterGranted} end as minter
        from api_keys k join users u on u.id = k.user_id
          left join users m on m.id = k.created_by
        where k.secret_hash = ${secretHash} and ${ownerLive}`;
      if (!row) return undefined;
      const { keyId, stale, granted, permissions, minter, ...account } = row;
      if (stale) {
        await sql`
          update api_keys set last_used_at = now()
          where id = ${keyId} and (last_used_at is null
            or last_used_at < now() - ${LAST_USED_EVERY}::interval)`;
      }
      return { keyId, account, granted, permissions, minter };
    },

    /** Whether a user of this id exists (checked before a key request's body). */
    async userExists(userId: number): Promise<boolean> {
      const [row] = await sql`select 1 from users where id = ${userId}`;
      return row !== undefined;
    },

    /**
     * A new key of the user, minted by the caller, under the caller's and
     * the owner's row locks (so the count of live keys holds, and a deleted
     * owner gets none); recorded as `key.created`. The caller's row, locked
     * for share until the commit, is what a deletion, disable or demotion
     * of the caller locks for update before revoking what they minted
     * (revokeMinted): the one waits for the other, and whichever comes
     * second sees the first's outcome, so no key minted meanwhile escapes.
     */
    async create(
      userId: number,
      key: NewApiKey,
      write: CallerWrite,
    ): Promise<
      | ApiKey
      | Refusal<"not_found" | "too_many" | "group_not_found">
      | CallerRefusal
    > {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const target = await owner(tx, userId);
        if (!target) return refuse("not_found");
        // Locked for share until the commit: the group's deletion, which
        // revokes the keys limited to it, waits for this key or is seen.
        if (
          key.reachGroupId !== null && !(await tx`
            select 1 from scim_groups where id = ${key.reachGroupId}
            for share`).length
        ) return refuse("group_not_found");
        const [{ n }] = await tx<{ n: number }[]>`
          select count(*)::int as n from api_keys k
          where k.user_id = ${userId} and ${liveKey(tx)}`;
        if (n >= LIVE_KEYS_MAX) return refuse("too_many");
        const [row] = await tx<StoredKey[]>`
          insert into api_keys as k (user_id, name, prefix, secret_hash,
            expires_at, created_by, permissions, reach_group_id)
          values (${userId}, ${key.name}, ${key.prefix}, ${key.secretHash},
            ${key.expiresAt}::timestamptz, ${actor.id}, ${key.permissions},
            ${key.reachGroupId})
          returning ${shown}`;
        await recordAudit(
          tx,
          auditEvents.keyCreated(actor, target, row, write.context),
        );
        return shownKey({
          ...row,
          createdBy: { id: actor.id, username: actor.username },
        });
      });
    },

    /** The user's unrevoked keys, newest first; undefined for an unknown user. */
    async list(userId: number): Promise<ApiKey[] | undefined> {
      const rows = await sql<(StoredKey & ApiKey & { found: boolean })[]>`
        select true as found, k.* from users u
        left join lateral (
          select ${shown}, json_build_object('id', m.id,
            'username', m.username) as "createdBy"
          from api_keys k join users m
            on m.id = coalesce(k.created_by, k.user_id)
          where k.user_id = u.id and k.revoked_at is null
        ) k on true
        where u.id = ${userId}
        order by k.id desc nulls last`;
      if (rows.length === 0) return undefined;
      return rows.filter((r) => r.id !== null).map(({ found: _, ...k }) =>
        shownKey(k)
      );
    },

    /**
     * Revokes the user's key at once: every instance's next lookup misses
     * it. Not found: no such key of this user, or revoked already.
     */
    async revoke(
      userId: number,
      keyId: number,
      write: CallerWrite,
    ): Promise<"revoked" | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const [key] = await tx<{ id: number; name: string }[]>`
          update api_keys set revoked_at = now()
          where id = ${keyId} and user_id = ${userId} and revoked_at is null
          returning id, name`;
        if (!key) return refuse("not_found");
        const target = await owner(tx, userId);
        await recordAudit(
          tx,
          auditEvents.keyRevoked(actor, target!, key, write.context),
        );
        return "revoked";
      });
    },
  };
}

export type ApiKeyStore = ReturnType<typeof createApiKeyStore>;

/** A key revoked with its minter's removal, and its owner. */
export interface MintedKey {
  id: number;
  name: string;
  owner: AuditParty;
}

/**
 * Revokes, for good, the unrevoked keys `minterId` minted for other users:
 * what the deletion, disable or demotion of an admin does in its own
 * transaction, after locking the admin's row for update (asCaller), so a
 * mint by that admin either committed before (and is revoked here) or
 * re-checks the admin after this commits (and is refused). Keys the admin
 * minted for themselves are theirs and stay. `onlyIf`: a condition on the
 * minter's users row (its columns unqualified) that must hold, such as the
 * version a conditional write expects. Record them with recordMintedRevoked.
 */
export function revokeMinted(
  tx: TransactionSql,
  minterId: number,
  onlyIf?: PendingQuery<Row[]>,
): Promise<MintedKey[]> {
  const minter = onlyIf
    ? tx`and exists (select 1 from users where id = ${minterId} and ${onlyIf})`
    : tx``;
  return tx<MintedKey[]>`
    update api_keys k set revoked_at = now()
    from users o
    where k.created_by = ${minterId} and k.user_id <> ${minterId}
      and k.revoked_at is null and o.id = k.user_id ${minter}
    returning k.id, k.name,
      json_build_object('id', o.id, 'username', o.username) as owner`;
}

/** Each key revokeMinted revoked, as `key.revoked` `{reason: "minter removed"}` by `actor`, in id order. */
export const mintedRevokedEvents = (
  keys: MintedKey[],
  actor: AuditParty,
  context: AuditContext,
): AuditEvent[] =>
  keys.toSorted((a, b) => a.id - b.id).map(({ owner, ...key }) =>
    auditEvents.keyRevoked(actor, owner, key, context, MINTER_REMOVED)
  );

/** Records mintedRevokedEvents. */
export async function recordMintedRevoked(
  tx: TransactionSql,
  keys: MintedKey[],
  actor: AuditParty,
  context: AuditContext,
): Promise<void> {
  for (const event of mintedRevokedEvents(keys, actor, context)) {
    await recordAudit(tx, event);
  }
}

/**
 * Revokes, for good, the unrevoked keys limited to a group's members, each
 * recorded as `key.revoked` `{reason: "group deleted"}` by `actor` (none
 * for a deletion through SCIM), in id order: what the group's deletion does
 * in its transaction, under the group's row lock, which a mint limited to
 * the group holds for share until it commits (create): a key minted
 * meanwhile is revoked here, or its mint finds no group.
 */
export async function revokeGroupKeys(
  tx: TransactionSql,
  groupId: number,
  actor: AuditParty | null,
  context: AuditContext,
): Promise<void> {
  const keys = await tx<MintedKey[]>`
    update api_keys k set revoked_at = now()
    from users o
    where k.reach_group_id = ${groupId} and k.revoked_at is null
      and o.id = k.user_id
    returning k.id, k.name,
      json_build_object('id', o.id, 'username', o.username) as owner`;
  for (const { owner, ...key } of keys.toSorted((a, b) => a.id - b.id)) {
    await recordAudit(
      tx,
      auditEvents.keyRevoked(actor, owner, key, context, GROUP_DELETED),
    );
  }
}
