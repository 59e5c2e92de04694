import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import type { AuditContext } from "../audit/events.ts";
import type { Caller } from "../auth/caller.ts";
import type { Role } from "../users/user.ts";
import {
  type Access,
  accessOf,
  covers,
  type Granted,
  meets,
  type Need,
  reaches,
} from "../auth/permissions.ts";
import { disabledNow, liveKey, liveSession } from "./account-state.ts";
import { grantedTo, keyListed } from "./grants.ts";
import { memberOf } from "./reach.ts";
import { audited, type Sealer } from "./audit.ts";
import { isRefusal, type Refusal, refuse } from "../refusal.ts";

/**
 * The `performance.now()` after which no write may begin: a request's
 * deadline less the time one statement may take, so what its client was
 * told failed is not applied later. Every write takes one.
 */
export type WriteBy = number;

/** For writes no client waits for: the bootstrap, the recovery task, housekeeping. */
export const NO_DEADLINE: WriteBy = Infinity;

/** A write attempted past its `WriteBy`: abandoned before it begins. */
export class WriteDeadlinePassed extends Error {
  constructor() {
    super("too little time left to write before the deadline");
  }
}

export function beforeWrite(writeBy: WriteBy) {
  if (performance.now() > writeBy) throw new WriteDeadlinePassed();
}

/**
 * Takes the transaction-long advisory lock `key` that writes of one kind
 * take in turn, waiting for it as long as `writeBy` allows rather than one
 * statement's timeout: each holder keeps it only while it writes, but the
 * last of a burst waits for all before it, and would otherwise answer 500
 * though nothing is wrong. The statement timeout is set back after.
 */
export async function takeTurn(
  tx: TransactionSql,
  key: bigint,
  writeBy: WriteBy,
) {
  // 0: no timeout (a write no client waits for).
  const waitMs = Number.isFinite(writeBy)
    ? Math.max(1, Math.ceil(writeBy - performance.now()))
    : 0;
  // One round trip: the three statements are sent together, run in order.
  await Promise.all([
    tx`select set_config('statement_timeout', ${String(waitMs)}, true)`,
    tx`select pg_advisory_xact_lock(${key.toString()}::bigint)`,
    tx`set local statement_timeout to default`,
  ]);
  beforeWrite(writeBy);
}

/** A write on a caller's behalf, as a request asks for it. */
export interface CallerWrite {
  /** Re-checked inside the write's transaction. */
  caller: Caller;
  /** What the caller must still hold there (permissions.ts): the route's permission, and any the request's fields add. */
  needs: readonly Need[];
  /** Request id and client address for the write's audit record. */
  context: AuditContext;
  writeBy: WriteBy;
}

/**
 * The caller lost the right to write since the request was authenticated:
 * their account or session is gone (or disabled), or they no longer hold
 * what the write needs; or the user the write changes holds a permission
 * the caller does not (`caller_outranked`), or is outside the reach of a
 * permission the write needs (`caller_out_of_reach`: to the caller, that
 * user does not exist).
 */
export type CallerReason =
  | "caller_gone"
  | "caller_not_permitted"
  | "caller_outranked"
  | "caller_out_of_reach";
export type CallerRefusal = Refusal<CallerReason>;

/**
 * The rows a caller's write locks: the caller's alone (a write that changes
 * no user), or with the user's it changes (`update`), which is locked for
 * update.
 */
export type CallerLock = "share" | { update: number };

/** What a write re-reads of its caller: role, name and grants (grants.ts), and a key's list and minter's grants. */
interface Standing {
  role: Role;
  username: string;
  granted: Granted;
  permissions?: Granted;
  minter?: Granted;
}

/**
 * The owner's standing while the key is live and the owner exists and is
 * not disabled: what a write re-checks for a key's caller, with the key's
 * list and what its minter holds now, as the key's lookup reads them.
 */
const liveKeyOwner = (
  tx: TransactionSql,
  keyId: number,
  userId: number,
) =>
  tx<Standing[]>`
    select u.role, u.username, ${grantedTo(tx, "u")} as granted,
      ${keyListed(tx, "k")} as permissions,
      case when k.created_by is null or k.created_by = k.user_id then null
        when m.id is null then '{}'::text[]
        else ${grantedTo(tx, "m")} end as minter
    from api_keys k join users u on u.id = k.user_id
      left join users m on m.id = k.created_by
    where k.id = ${keyId} and u.id = ${userId} and ${liveKey(tx)}
      and not ${disabledNow(tx, "u")}`;

const accessOfStanding = (row: Standing, key: boolean): Access =>
  accessOf(
    row.role,
    row.granted,
    key
      ? { permissions: row.permissions ?? null, minter: row.minter ?? null }
      : undefined,
  );

/**
 * Whom a write re-checks: the account and the credential it came with, a
 * session (its token's SHA-256) or an API key. An import keeps its
 * uploader's; one queued by a release that kept no session has neither,
 * and its account alone is checked.
 */
export type Recheck =
  & { account: { id: number } }
  & { needs?: readonly Need[] }
  & (
    | { session: Uint8Array; keyId?: never }
    | { keyId: number; session?: never }
    | { session?: never; keyId?: never }
  );

/**
 * Locks the caller's row and the target's, then re-reads the caller's
 * session (or API key) and permissions: a caller deleted, logged out, reset
 * or demoted, who lost what `needs` names, or whose key was revoked or
 * expired, by a write that committed meanwhile is refused; so is a write
 * on a target who holds a permission the caller does not (read under the
 * target's lock, so a grant meanwhile is seen). The caller's row is locked for share, so one
 * admin's writes run side by side while a change to the admin waits for
 * them; the target's (`{ update }`) for update. Rows are locked in id
 * order, so two admins writing each other wait for one another instead of
 * deadlocking. The locks and the re-read go in one round trip; the server
 * runs the re-read once the locks are held.
 */
export async function checkCaller(
  tx: TransactionSql,
  { caller, writeBy, needs = caller.needs ?? [] }: {
    caller: Recheck;
    writeBy: WriteBy;
    needs?: readonly Need[];
  },
  lock: CallerLock,
): Promise<CallerRefusal | AuditParty> {
  const callerId = caller.account.id;
  const target = lock === "share" ? undefined : lock.update;
  const ids = target === undefined || target === callerId
    ? [callerId]
    : [callerId, target].sort((a, b) => a - b);
  const locks = ids.map((id) =>
    id === target
      ? tx`select 1 from users where id = ${id} for update`
      : tx`select 1 from users where id = ${id} for share`
  );
  const check = caller.keyId !== undefined
    ? liveKeyOwner(tx, caller.keyId, callerId)
    : caller.session !== undefined
    ? tx<Standing[]>`
    select u.role, u.username, ${grantedTo(tx, "u")} as granted
    from sessions s join users u on u.id = s.user_id
    where s.token_hash = ${caller.session} and u.id = ${callerId}
      and ${liveSession(tx)}`
    : tx<Standing[]>`
    select u.role, u.username, ${grantedTo(tx, "u")} as granted from users u
    where u.id = ${callerId} and not ${disabledNow(tx, "u")}`;
  const subject = target === undefined ? [] : [tx<
    (Standing & { groups: number[] })[]
  >`
    select u.role, u.username, ${grantedTo(tx, "u")} as granted,
      ${memberOf(tx, "u")} as groups
    from users u where u.id = ${target}`];
  const read = await Promise.all([...locks, check, ...subject]);
  const [row] = read[locks.length] as Standing[];
  if (!row) return refuse("caller_gone");
  const access = accessOfStanding(row, caller.keyId !== undefined);
  if (!meets(access, needs)) return refuse("caller_not_permitted");
  const [other] = target === undefined
    ? []
    : read[locks.length + 1] as (Standing & { groups: number[] })[];
  // Outside the reach of a permission the write needs, the user is not
  // there for the caller: before any other check of the user.
  if (
    other && !withinReach(access, needs, other.groups, target === callerId)
  ) {
    return refuse("caller_out_of_reach");
  }
  if (other && !covers(access, accessOfStanding(other, false))) {
    return refuse("caller_outranked");
  }
  beforeWrite(writeBy);
  return caller.keyId === undefined
    ? { id: callerId, username: row.username }
    : { id: callerId, username: row.username, keyId: caller.keyId };
}

/**
 * Whether a member of `groups` is within the reach of each permission of
 * `needs` (the route's, and those the request's fields add; `admin`
 * reaches everyone). A write that names no permission (a change of no
 * field, a person's own keys) needs the user within the reach of one the
 * caller holds, unless the user is the caller.
 */
export const withinReach = (
  access: Access,
  needs: readonly Need[],
  groups: readonly number[],
  self: boolean,
) => {
  const named = needs.filter((n) => n !== "admin");
  if (named.length === 0) {
    return self || access.admin ||
      [...access.held.values()].some((r) => reaches(r, groups));
  }
  return named.every((n) => {
    const reach = access.held.get(n);
    return reach !== undefined && reaches(reach, groups);
  });
};

/** How every part of the store writes: within a deadline, its records sealed after. */
export function createWriter(sql: Sql, sealer: Sealer) {
  /**
   * A transaction that begins only while its deadline allows: checked
   * before it is queued, and again once it has a connection and BEGIN is
   * answered, so one that waited in the pool's queue (every connection
   * busy, or the database down and back) past its time rolls back before
   * its first statement. A write that may wait for a row checks once more
   * after that statement (checkCaller, sessions, the throttle). Not before
   * COMMIT: it would roll back more often after an outage, and a ROLLBACK
   * queued on a connection the server just closed makes postgres.js 3.4.9
   * throw outside any promise (tests/faults_test.ts).
   */
  const transaction = <T>(
    writeBy: WriteBy,
    body: (tx: TransactionSql) => Promise<T>,
  ): Promise<T> => {
    beforeWrite(writeBy);
    return audited(sql, sealer, (tx) => {
      beforeWrite(writeBy);
      return body(tx);
    });
  };

  return {
    transaction,

    /**
     * A write on the caller's behalf: a transaction whose first statements
     * lock `lock`'s rows and re-check the caller (checkCaller). A caller
     * who lost the right to write is answered with the refusal; otherwise
     * `body` runs with the caller as the records' actor.
     */
    asCaller: <T>(
      write: CallerWrite,
      lock: CallerLock,
      body: (tx: TransactionSql, actor: AuditParty) => Promise<T>,
    ): Promise<T | CallerRefusal> =>
      transaction(write.writeBy, async (tx) => {
        const actor = await checkCaller(tx, write, lock);
        if (isRefusal(actor)) return actor;
        return await body(tx, actor);
      }),
  };
}

/** What the store's parts write with (createWriter). */
export type Writer = ReturnType<typeof createWriter>;
