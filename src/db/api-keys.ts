import type { PendingQuery, Row, Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import {
  type AuditContext,
  type AuditEvent,
  auditEvents,
  MINTER_REMOVED,
} from "../audit/events.ts";
import type { Account } from "../users/user.ts";
import { disabledNow, liveKey } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import { iso } from "./time.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";
import { accountColumns } from "./user-rows.ts";
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
}

export interface NewApiKey {
  name: string;
  /** ISO 8601; null: the key does not expire. */
  expiresAt: string | null;
  prefix: string;
  secretHash: Uint8Array;
}

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
    ${iso(sql, "k.last_used_at")} as "lastUsedAt"`;

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
     * of that minute, on any instance, one writes.
     */
    async resolve(
      secretHash: Uint8Array,
    ): Promise<{ keyId: number; account: Account } | undefined> {
      const [row] = await sql<
        (Account & { keyId: number; stale: boolean })[]
      >`
        select k.id as "keyId", ${ownerAccount},
          (k.last_used_at is null
            or k.last_used_at < now() - ${LAST_USED_EVERY}::interval) as stale
        from api_keys k join users u on u.id = k.user_id
        where k.secret_hash = ${secretHash} and ${ownerLive}`;
      if (!row) return undefined;
      const { keyId, stale, ...account } = row;
      if (stale) {
        await sql`
          update api_keys set last_used_at = now()
          where id = ${keyId} and (last_used_at is null
            or last_used_at < now() - ${LAST_USED_EVERY}::interval)`;
      }
      return { keyId, account };
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
    ): Promise<ApiKey | Refusal<"not_found" | "too_many"> | CallerRefusal> {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const target = await owner(tx, userId);
        if (!target) return refuse("not_found");
        const [{ n }] = await tx<{ n: number }[]>`
          select count(*)::int as n from api_keys k
          where k.user_id = ${userId} and ${liveKey(tx)}`;
        if (n >= LIVE_KEYS_MAX) return refuse("too_many");
        const [row] = await tx<Omit<ApiKey, "createdBy">[]>`
          insert into api_keys as k (user_id, name, prefix, secret_hash,
            expires_at, created_by)
          values (${userId}, ${key.name}, ${key.prefix}, ${key.secretHash},
            ${key.expiresAt}::timestamptz, ${actor.id})
          returning ${shown}`;
        await recordAudit(
          tx,
          auditEvents.keyCreated(actor, target, row, write.context),
        );
        return {
          ...row,
          createdBy: { id: actor.id, username: actor.username },
        };
      });
    },

    /** The user's unrevoked keys, newest first; undefined for an unknown user. */
    async list(userId: number): Promise<ApiKey[] | undefined> {
      const rows = await sql<(ApiKey & { found: boolean })[]>`
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
      return rows.filter((r) => r.id !== null).map(({ found: _, ...k }) => k);
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
