import type { Sql, TransactionSql } from "postgres";
import type { AuditEvent } from "../audit/events.ts";
import { recordAudit } from "./audit.ts";
import { countingWindow } from "./time.ts";
import { beforeWrite, type WriteBy, type Writer } from "./write.ts";

export interface LoginAttempt {
  blocked: boolean;
  /** Seconds until the window ends, when blocked. */
  retryAfter: number;
}

/**
 * Whose failed logins of a username an attempt counts: its client address's
 * (and, up to the ceiling, every address's), or a known device's alone.
 * `address` is the block the client counts under (countedBlock: an IPv6
 * address's /64).
 */
export type LoginCounter =
  & { usernameHash: Uint8Array }
  & ({ address: string; device?: never } | { device: string; address?: never });

/** The login_failures row that counts a username's failures from every address. */
const ALL_CLIENTS = "";

/** A known device's row in login_failures: no address holds a `v`. */
const deviceClient = (device: string) => `device:${device}`;

/** The rows an attempt counts on, in the order every writer locks them ('' first). */
const countedClients = (counter: LoginCounter) =>
  counter.device !== undefined
    ? [deviceClient(counter.device)]
    : [ALL_CLIENTS, counter.address];

/**
 * The row whose `throttled_window` says a window's refusal is recorded:
 * the name's over all addresses, so rotating addresses writes no more
 * records; a known device's own (one device cannot rotate).
 */
const recordedOn = (counter: LoginCounter) =>
  counter.device !== undefined ? deviceClient(counter.device) : ALL_CLIENTS;

/**
 * Ends the failed-login windows of a user's name from every address and
 * every known device. Their key is the SHA-256 of the canonical username as
 * UTF-8, as the login computes it (auth.handlers.ts) from the same
 * canonicalKey; also the lower-case key's, which an older release counts
 * under while a release rolls out.
 */
export async function clearLoginFailures(tx: TransactionSql, userId: number) {
  await tx`
    delete from login_failures f using users u
    where u.id = ${userId} and f.username_hash in (
      sha256(convert_to(u.username_fold, 'UTF8')),
      sha256(convert_to(u.username_key, 'UTF8')))`;
}

/**
 * A successful login's counters: a device's count is cleared; an address's
 * count is cleared and taken off the count over all addresses (the success
 * itself was counted as well). Rows are locked '' first, as attempts lock
 * them, so a success never deadlocks with an attempt of the same name.
 */
export async function clearLoginCounter(
  tx: TransactionSql,
  counter: LoginCounter,
) {
  const { usernameHash } = counter;
  if (counter.device !== undefined) {
    await tx`
      delete from login_failures
      where username_hash = ${usernameHash} and client = ${
      deviceClient(counter.device)
    }`;
    return;
  }
  const { address } = counter;
  const rows = await tx<{ client: string; failures: number }[]>`
    select client, failures from login_failures
    where username_hash = ${usernameHash} and client in (${ALL_CLIENTS}, ${address})
    order by client for update`;
  const own = rows.find((r) => r.client === address)?.failures ?? 0;
  if (own === 0) return;
  // One statement: the delete and the update have exclusive conditions
  // (nothing left over all addresses, or some), so each row changes once.
  await tx`
    with cleared as (
      delete from login_failures
      where username_hash = ${usernameHash} and (client = ${address}
        or (client = ${ALL_CLIENTS} and failures <= ${own}))
    )
    update login_failures set failures = failures - ${own}
    where username_hash = ${usernameHash} and client = ${ALL_CLIENTS}
      and failures > ${own}`;
}

/**
 * Takes back the count a login attempt added (loginThrottle.attempt) when
 * its password was right but the account is disabled: that is no failed
 * attempt, and it clears no one's count either.
 */
export async function takeBackAttempt(
  tx: TransactionSql,
  counter: LoginCounter,
) {
  await tx`
    update login_failures set failures = failures - 1
    where username_hash = ${counter.usernameHash}
      and client = any(${countedClients(counter)}::text[]) and failures > 0`;
}

/** A counter row as an attempt reads it; `recorded`: its window's `throttled` record is written. */
type CounterRow = {
  client: string;
  failures: number;
  retryAfter: number;
  recorded: boolean;
};

/** The failed-login counters (login_failures), per username and client. */
export function createLoginThrottle(sql: Sql, { transaction }: Writer) {
  return {
    /**
     * Counts this attempt before the password is checked (a success takes
     * it back, see sessions.create), under the rows' locks, so parallel
     * guesses cannot slip past the limit: for the username from this client
     * address and from all addresses, or from this known device alone.
     * Blocked once a row already holds its limit (`max`, or `ceiling` over
     * all addresses); Retry-After is the latest of their ends. A blocked
     * attempt counts nothing; the first of its window writes
     * `throttled(retryAfter)` in the same transaction, later ones nothing:
     * from whatever address, the window being the name's over all addresses
     * (a known device's, for a device). Later ones only read, so a flood of
     * them, from one address or many, takes no lock and writes no row (one
     * statement each).
     */
    async attempt(
      counter: LoginCounter,
      limits: { max: number; ceiling: number; windowSeconds: number },
      throttled: (retryAfter: number) => AuditEvent,
      writeBy: WriteBy,
    ): Promise<LoginAttempt> {
      const { usernameHash } = counter;
      const clients = countedClients(counter);
      const marker = recordedOn(counter);
      const { length: window, retryAfter: secondsLeft } = countingWindow(
        sql,
        limits.windowSeconds,
      );
      const limitOf = (client: string) =>
        client === ALL_CLIENTS ? limits.ceiling : limits.max;
      // Counts only grow inside a window, so a refusal read without a lock
      // stands (a success or reset clearing meanwhile at worst refuses this
      // one attempt too).
      const seen = await sql<CounterRow[]>`
        select client, failures, ${secondsLeft} as "retryAfter",
          throttled_window is not distinct from window_started_at as recorded
        from login_failures
        where username_hash = ${usernameHash} and client = any(${clients}::text[])
          and window_started_at > now() - ${window}`;
      const seenOver = seen.filter((r) => r.failures >= limitOf(r.client));
      if (
        seenOver.length > 0 && seen.find((r) => r.client === marker)?.recorded
      ) {
        return {
          blocked: true,
          retryAfter: Math.max(...seenOver.map((r) => r.retryAfter)),
        };
      }
      return await transaction(writeBy, async (tx) => {
        // Locks the rows in one order (no deadlock between attempts) and
        // starts a new window where the last one has ended.
        const rows = await tx<CounterRow[]>`
          insert into login_failures as f (username_hash, client, failures, window_started_at)
          select ${usernameHash}, client, 0, now()
          from unnest(${clients}::text[]) with ordinality as c(client, n) order by n
          on conflict (username_hash, client) do update set
            failures = case
              when f.window_started_at <= now() - ${window} then 0
              else f.failures end,
            window_started_at = case
              when f.window_started_at <= now() - ${window} then now()
              else f.window_started_at end
          returning client, failures, ${secondsLeft} as "retryAfter",
            throttled_window is not distinct from window_started_at as recorded`;
        // The rows' locks may have been waited for.
        beforeWrite(writeBy);
        const over = rows.filter((r) => r.failures >= limitOf(r.client));
        if (over.length === 0) {
          await tx`
            update login_failures set failures = failures + 1
            where username_hash = ${usernameHash} and client = any(${clients}::text[])`;
          return { blocked: false, retryAfter: 0 };
        }
        const retryAfter = Math.max(...over.map((r) => r.retryAfter));
        if (!rows.find((r) => r.client === marker)!.recorded) {
          await tx`
            update login_failures set throttled_window = window_started_at
            where username_hash = ${usernameHash} and client = ${marker}`;
          await recordAudit(tx, throttled(retryAfter));
        }
        return { blocked: true, retryAfter };
      });
    },

    /**
     * An attempt whose password was right but that is refused all the same
     * (the account signs in only through its identity provider): its count
     * is taken back, and `refused` recorded, in one transaction.
     */
    async refused(
      counter: LoginCounter,
      refused: AuditEvent,
      writeBy: WriteBy,
    ): Promise<void> {
      await transaction(writeBy, async (tx) => {
        await takeBackAttempt(tx, counter);
        await recordAudit(tx, refused);
      });
    },

    /** Drops counters whose window has ended: they no longer block anyone. */
    async forgetExpired(
      windowSeconds: number,
      writeBy: WriteBy,
    ): Promise<number> {
      beforeWrite(writeBy);
      const rows = await sql`
        delete from login_failures
        where window_started_at <= now() - make_interval(secs => ${windowSeconds})
        returning 1`;
      return rows.length;
    },
  };
}

/**
 * The key that signs the `did` cookie, by which the throttle knows a
 * device (device_key, one row).
 */
export function createDeviceKey(sql: Sql) {
  return {
    /** The key that signs the `did` cookie (migration 012). */
    async current(): Promise<Uint8Array> {
      const [row] = await sql<{ key: Uint8Array }[]>`
        select key from device_key where singleton`;
      if (!row) throw new Error("device_key holds no key");
      return row.key;
    },

    /** Replaces the key: every `did` signed with the old one stops counting. */
    async replace(key: Uint8Array, writeBy: WriteBy): Promise<void> {
      beforeWrite(writeBy);
      await sql`
        insert into device_key (singleton, key) values (true, ${key})
        on conflict (singleton) do update set key = excluded.key, created_at = now()`;
    },
  };
}
