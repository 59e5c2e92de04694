import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import { auditEvents } from "../audit/events.ts";
import type { Account } from "../users/user.ts";
import { disabledNow, liveKey } from "./account-state.ts";
import { recordAudit } from "./audit.ts";
import type { CallerRefusal, CallerWrite, Writer } from "./write.ts";

/** An API key as the service shows it: never its secret nor the secret's hash. */
export interface ApiKey {
  id: number;
  name: string;
  prefix: string;
  /** ISO 8601 in UTC with milliseconds, as every time the service shows. */
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
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
export function createKeyStore(sql: Sql, { asCaller }: Writer) {
  const iso = (column: string) =>
    sql.unsafe(
      `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`,
    );
  // Built once, as every request with a key reads it.
  const ownerLive = sql`${liveKey(sql)} and not ${disabledNow(sql, "u")}`;
  const shown = sql`id, name, prefix, ${iso("created_at")} as "createdAt",
    ${iso("expires_at")} as "expiresAt", ${
    iso("last_used_at")
  } as "lastUsedAt"`;

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
        select k.id as "keyId", u.id, u.username, u.name, u.email, u.role,
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
     * A new key of the user, under the caller's and the owner's row locks
     * (so the count of live keys holds, and a deleted owner gets none);
     * recorded as `key.created`.
     */
    async create(
      userId: number,
      key: NewApiKey,
      write: CallerWrite,
    ): Promise<ApiKey | "not_found" | "too_many" | CallerRefusal> {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const target = await owner(tx, userId);
        if (!target) return "not_found";
        const [{ n }] = await tx<{ n: number }[]>`
          select count(*)::int as n from api_keys k
          where k.user_id = ${userId} and ${liveKey(tx)}`;
        if (n >= LIVE_KEYS_MAX) return "too_many";
        const [row] = await tx<ApiKey[]>`
          insert into api_keys (user_id, name, prefix, secret_hash, expires_at)
          values (${userId}, ${key.name}, ${key.prefix}, ${key.secretHash},
            ${key.expiresAt}::timestamptz)
          returning ${shown}`;
        await recordAudit(
          tx,
          auditEvents.keyCreated(actor, target, row, write.context),
        );
        return row;
      });
    },

    /** The user's unrevoked keys, newest first; undefined for an unknown user. */
    async list(userId: number): Promise<ApiKey[] | undefined> {
      const rows = await sql<(ApiKey & { found: boolean })[]>`
        select true as found, k.* from users u
        left join lateral (
          select ${shown} from api_keys
          where user_id = u.id and revoked_at is null
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
    ): Promise<"revoked" | "not_found" | CallerRefusal> {
      return await asCaller(write, { update: userId }, async (tx, actor) => {
        const [key] = await tx<{ id: number; name: string }[]>`
          update api_keys set revoked_at = now()
          where id = ${keyId} and user_id = ${userId} and revoked_at is null
          returning id, name`;
        if (!key) return "not_found";
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

export type KeyStore = ReturnType<typeof createKeyStore>;
