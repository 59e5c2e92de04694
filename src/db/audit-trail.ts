import type { Reach } from "../auth/permissions.ts";
import { reachedIds } from "./reach.ts";
import type { Sql } from "postgres";
import type { AuditAction } from "../audit/actions.ts";
import type { AuditContent, Via } from "../audit/chain.ts";
import { iso } from "./time.ts";

/** A record as the API shows it: its content, without the chain's hashes. */
export type AuditRecord = AuditContent;

/** A record with its place in the chain, for verification. */
export interface ChainRecord extends AuditContent {
  prevHash: Uint8Array;
  hash: Uint8Array;
}

/** Both ends of the kept chain, from its one row. */
export interface ChainEnds {
  /** The newest record's id and hash (0 and zeros before the first). */
  headId: number;
  headHash: Uint8Array;
  /** The last record the retention sweep removed (0 and zeros before any). */
  anchorId: number;
  anchorHash: Uint8Array;
  /** Records committed but not yet sealed into the chain (migration 008). */
  pending: number;
}

export interface AuditQuery {
  limit: number;
  /** Only records with a smaller id: the cursor of the next page. */
  before?: number;
  action?: AuditAction;
  actorId?: number;
  targetId?: number;
  /** ISO 8601: records at or after it. */
  since?: string;
  /** ISO 8601: records before it. */
  until?: string;
  /** Only records whose target is a user within it (reach.ts); absent: all. */
  reach?: Reach;
}

/** Records removed per statement by the sweep: each stays well inside the statement timeout. */
const SWEEP_BATCH = 5000;
/** The channel migration 013 notifies after each seal (payload: the head id). */
const SEALED_CHANNEL = "audit_sealed";

/** Records per cursor read while verifying: the walk's memory bound. */
const WALK_BATCH = 1000;

/** An audit_events row as `recordColumns` selects it. */
export type Row = {
  id: string;
  time: string;
  action: AuditAction;
  actor_id: number | null;
  actor_username: string | null;
  target_id: number | null;
  target_username: string | null;
  details: Record<string, unknown>;
  request_id: string | null;
  client_address: string | null;
  actor_key_id: number | null;
  via: Via | null;
};

/** The one mapping from an audit_events row to a record. */
export const toRecord = (r: Row): AuditRecord => ({
  id: Number(r.id),
  time: r.time,
  action: r.action,
  actor: r.actor_id === null
    ? null
    : r.actor_key_id === null
    ? { id: r.actor_id, username: r.actor_username ?? "" }
    : {
      id: r.actor_id,
      username: r.actor_username ?? "",
      keyId: r.actor_key_id,
    },
  target: r.target_id === null
    ? null
    : { id: r.target_id, username: r.target_username ?? "" },
  details: r.details,
  requestId: r.request_id,
  clientAddress: r.client_address,
  via: r.via,
});

/**
 * The columns `toRecord` maps. Output names equal column names: `order by`
 * must qualify `audit_events.id`, or it would sort the text.
 */
export const recordColumns = (sql: Sql) =>
  sql`id::text, ${
    iso(sql, "time")
  } as time, action, actor_id, actor_username, target_id, target_username,
    details, request_id, client_address, actor_key_id, via`;

/** Reading, verifying and sweeping the trail: all its SQL but the writers' and the seal's. */
export function createAuditStore(sql: Sql) {
  const columns = recordColumns(sql);

  return {
    /** Newest first, at most `limit`, after the filters. */
    async list(q: AuditQuery): Promise<AuditRecord[]> {
      const rows = await sql<Row[]>`
        select ${columns} from audit_events
        where true
          ${q.before !== undefined ? sql`and id < ${q.before}` : sql``}
          ${q.action !== undefined ? sql`and action = ${q.action}` : sql``}
          ${q.actorId !== undefined ? sql`and actor_id = ${q.actorId}` : sql``}
          ${
        q.targetId !== undefined ? sql`and target_id = ${q.targetId}` : sql``
      }
          ${
        q.since !== undefined ? sql`and time >= ${q.since}::timestamptz` : sql``
      }
          ${
        q.until !== undefined ? sql`and time < ${q.until}::timestamptz` : sql``
      }
          ${
        q.reach === undefined || q.reach === "all"
          ? sql``
          : sql`and audit_events.target_id = any(${
            reachedIds(sql, q.reach.groupIds)
          })`
      }
        order by audit_events.id desc
        limit ${q.limit}`;
      return rows.map(toRecord);
    },

    /**
     * The change feed's read: sealed records after `after` up to `upTo`,
     * oldest first, at most `limit`, of these actions only when given.
     */
    async after(
      after: number,
      upTo: number,
      limit: number,
      actions?: readonly AuditAction[],
    ): Promise<AuditRecord[]> {
      const rows = await sql<Row[]>`
        select ${columns} from audit_events
        where id > ${after} and id <= ${upTo}
          ${actions ? sql`and action = any(${actions}::text[])` : sql``}
        order by audit_events.id
        limit ${limit}`;
      return rows.map(toRecord);
    },

    /** The newest sealed record's id and the retention sweep's anchor. */
    async ends(): Promise<{ headId: number; anchorId: number }> {
      const [row] = await sql<{ head_id: string; anchor_id: string }[]>`
        select head_id::text, anchor_id::text from audit_chain where singleton`;
      return { headId: Number(row.head_id), anchorId: Number(row.anchor_id) };
    },

    /**
     * Calls `sealed` on each seal's notification (migration 013) and
     * `listening` each time the listening connection (one, of its own,
     * outside the pool) is (re)established; resolves to its end. PostgreSQL
     * servers only: the embedded database takes one connection.
     */
    async listenSealed(
      sealed: () => void,
      listening: () => void,
    ): Promise<{ unlisten(): Promise<void> }> {
      const { unlisten } = await sql.listen(SEALED_CHANNEL, sealed, listening);
      return { unlisten };
    },

    /**
     * Hands `visit` both ends of the chain and its records oldest first, in
     * batches from a cursor, all from one snapshot: records appended
     * meanwhile are neither seen nor mistaken for insertions.
     */
    walk<T>(
      visit: (
        ends: ChainEnds,
        batches: AsyncIterable<ChainRecord[]>,
      ) => Promise<T>,
      batchSize = WALK_BATCH,
    ): Promise<T> {
      return sql.begin(
        "isolation level repeatable read read only",
        async (tx) => {
          // A long walk is no request: the pool's statement timeout does not apply.
          await tx`set local statement_timeout = 0`;
          const [ends] = await tx<
            {
              head_id: string;
              head_hash: Uint8Array;
              anchor_id: string;
              anchor_hash: Uint8Array;
              pending: number;
            }[]
          >`select head_id::text, head_hash, anchor_id::text, anchor_hash,
              (select count(*)::int from audit_pending) as pending
            from audit_chain where singleton`;
          const cursor = tx<
            (Row & { prev_hash: Uint8Array; hash: Uint8Array })[]
          >`
          select ${columns}, prev_hash, hash from audit_events order by audit_events.id`
            .cursor(batchSize);
          async function* batches() {
            for await (const rows of cursor) {
              yield rows.map((r) => ({
                ...toRecord(r),
                prevHash: r.prev_hash,
                hash: r.hash,
              }));
            }
          }
          return await visit({
            headId: Number(ends.head_id),
            headHash: ends.head_hash,
            anchorId: Number(ends.anchor_id),
            anchorHash: ends.anchor_hash,
            pending: ends.pending,
          }, batches());
        },
      ) as Promise<T>;
    },

    /**
     * Removes the records older than `retentionDays` (none when 0; fractions
     * of a day count), oldest first and always a whole prefix of the chain,
     * in batches: up to the record before the oldest one still within the
     * retention (every record, when none is), never further. Each batch
     * moves the anchor to the last record it removed, in the same
     * statement, so the oldest kept record can still be checked against it.
     */
    async sweep(
      retentionDays: number,
      batchSize = SWEEP_BATCH,
    ): Promise<number> {
      if (retentionDays <= 0) return 0;
      const keptFrom = sql`now() - make_interval(secs => ${
        retentionDays * 86_400
      })`;
      let removed = 0;
      for (;;) {
        // No row in `cutoff` (an empty trail) removes nothing: the bound is
        // never left to a function that skips a missing value.
        const [{ n }] = await sql<{ n: number }[]>`
          with bound as (
            select coalesce(
              (select id - 1 from audit_events where time >= ${keptFrom}
               order by id limit 1),
              (select max(id) from audit_events)) as id
          ), cutoff as (
            select least(b.id, c.anchor_id + ${batchSize}) as id
            from bound b, audit_chain c
            where c.singleton and b.id is not null
          ), gone as (
            delete from audit_events where id <= (select id from cutoff)
            returning id, hash
          ), last as (
            select id, hash from gone order by id desc limit 1
          ), moved as (
            update audit_chain c set anchor_id = last.id, anchor_hash = last.hash
            from last where c.singleton and last.id > c.anchor_id
          )
          select count(*)::int as n from gone`;
        removed += n;
        if (n < batchSize) return removed;
      }
    },
  };
}

export type AuditStore = ReturnType<typeof createAuditStore>;
