import type { Sql, TransactionSql } from "postgres";
import type { AuditAction } from "../audit/actions.ts";
import { auditEvents } from "../audit/events.ts";
import { recordAudit } from "./audit.ts";
import {
  type AuditRecord,
  recordColumns,
  type Row,
  toRecord,
} from "./audit-trail.ts";
import type { DeliveryAttempt } from "./webhooks.ts";
import { iso } from "./time.ts";
import { NO_DEADLINE, type Writer } from "./write.ts";

/** An endpoint a worker holds the lease of. */
export interface ClaimedEndpoint {
  id: number;
  url: string;
  secret: string;
  actions: AuditAction[] | null;
  cursor: number;
  failures: number;
  token: string;
  /**
   * Whether its records are due: false when it was claimed only for a
   * waiting test event (disabled, or its held record not due yet).
   */
  recordsDue: boolean;
}

/** A test event waiting to be sent (POST /api/webhooks/{id}/test). */
export interface PendingTest {
  id: number;
  createdAt: string;
}

/** One attempt at a record, as a worker reports it. */
export type AttemptResult =
  & Pick<
    DeliveryAttempt,
    "status" | "error" | "responseExcerpt" | "durationMs"
  >
  & { recordId: number; outcome: "delivered" | "failed" };

/**
 * The delivery queue of webhooks: the SQL of the workers (src/webhooks/
 * worker.ts), which lease due endpoints, read the records past their
 * cursors, keep each attempt and move the cursors. Endpoints themselves are
 * managed in webhooks.ts.
 */
export function createWebhookQueue(
  sql: Sql,
  { transaction }: Pick<Writer, "transaction">,
) {
  return {
    /**
     * Leases up to `max` endpoints that have records past their cursor and
     * are due, skipping those another instance holds (SKIP LOCKED, and the
     * lease while it runs). An idle call reads the due index and the
     * chain's row, nothing else.
     */
    async claim(
      max: number,
      leaseMs: number,
      token: string,
    ): Promise<ClaimedEndpoint[]> {
      // A waiting test event makes an endpoint due as well, disabled or
      // not, without making its records due.
      const rows = await sql<
        (Omit<ClaimedEndpoint, "cursor"> & { cursor: string })[]
      >`
        with ready as (
          select e.id from webhook_endpoints e
          where (e.lease_until is null or e.lease_until < now())
            and ((e.disabled_at is null and e.next_attempt_at <= now()
                and e.cursor < (select head_id from audit_chain where singleton))
              or exists (select 1 from webhook_attempts a
                where a.endpoint_id = e.id and a.outcome = 'pending'))
          order by e.next_attempt_at
          limit ${max}
          for update skip locked
        )
        update webhook_endpoints e
        set lease_until = now() + make_interval(secs => ${leaseMs / 1000}),
          lease_token = ${token}
        from ready where e.id = ready.id
        returning e.id, e.url, e.secret, e.actions, e.cursor::text, e.failures,
          e.lease_token::text as token,
          e.disabled_at is null and e.next_attempt_at <= now() as "recordsDue"`;
      return rows.map((r) => ({ ...r, cursor: Number(r.cursor) }));
    },

    /**
     * The next sealed records after `cursor` of the endpoint's actions, and
     * the chain's head: when none match up to the head, the cursor may move
     * there.
     */
    async recordsAfter(
      cursor: number,
      actions: AuditAction[] | null,
      limit: number,
    ): Promise<{ records: AuditRecord[]; head: number }> {
      // One round trip: the head, and the records up to it (none: one row
      // of nulls beside the head).
      const rows = await sql<(Row & { head: string })[]>`
        select c.head_id::text as head, r.*
        from audit_chain c left join lateral (
          select ${recordColumns(sql)} from audit_events
          where id > ${cursor} and id <= c.head_id
            ${actions ? sql`and action = any(${actions}::text[])` : sql``}
          order by audit_events.id limit ${limit}
        ) r on true
        where c.singleton`;
      const head = rows[0].head;
      return {
        records: rows.filter((r) => r.id !== null).map(toRecord),
        head: Number(head),
      };
    },

    /**
     * Moves the cursor to `recordId` after successes (or past records that
     * do not match), keeping their attempts (each numbered as the
     * endpoint's failures at it + 1) and renewing the lease, in one
     * statement: all of it, or nothing when the lease is no longer this
     * worker's (false).
     */
    async advance(
      c: ClaimedEndpoint,
      recordId: number,
      leaseMs: number,
      attempts: (AttemptResult & { attempt: number })[] = [],
    ): Promise<boolean> {
      const rows = attempts.map((a) => ({
        record_id: a.recordId,
        attempt: a.attempt,
        outcome: a.outcome,
        status: a.status,
        error: a.error,
        response_excerpt: a.responseExcerpt,
        duration_ms: a.durationMs,
      }));
      const [{ n }] = await sql<{ n: number }[]>`
        with moved as (
          update webhook_endpoints set cursor = ${recordId}, failures = 0,
            failing_since = null,
            lease_until = now() + make_interval(secs => ${leaseMs / 1000})
          where id = ${c.id} and lease_token = ${c.token} and lease_until > now()
          returning id
        ), kept as (
          insert into webhook_attempts (endpoint_id, record_id, attempt,
            outcome, status, error, response_excerpt, duration_ms)
          select moved.id, a.record_id, a.attempt, a.outcome, a.status,
            a.error, a.response_excerpt, a.duration_ms
          from moved, jsonb_to_recordset(${
        JSON.stringify(rows)
      }::text::jsonb) as a(
            record_id bigint, attempt integer, outcome text, status integer,
            error text, response_excerpt text, duration_ms integer)
          order by a.record_id
          returning 1
        )
        select count(*)::int as n from moved`;
      return n === 1;
    },

    /**
     * A failed attempt: kept, and the next one scheduled after
     * `delays[failures]` (the last delay repeating), but never later than
     * the end of the retry budget, which runs from the first failure. A
     * failure at or past that end disables the endpoint and records
     * `webhook.disabled` instead. Ends the lease.
     */
    async failed(
      c: ClaimedEndpoint,
      attempt: AttemptResult,
      delays: number[],
      budgetMs: number,
    ): Promise<"retry" | "disabled" | "lost"> {
      const delay = delays[Math.min(c.failures, delays.length - 1)] ?? 0;
      return await transaction(NO_DEADLINE, async (tx) => {
        const [row] = await tx<
          { id: number; url: string; disabled: boolean }[]
        >`
          update webhook_endpoints set failures = failures + 1,
            failing_since = coalesce(failing_since, now()),
            next_attempt_at = least(
              now() + make_interval(secs => ${delay / 1000}),
              coalesce(failing_since, now())
                + make_interval(secs => ${budgetMs / 1000})),
            disabled_at = case
              when now() >= coalesce(failing_since, now())
                + make_interval(secs => ${budgetMs / 1000})
              then now() end,
            lease_until = null, lease_token = null
          where id = ${c.id} and lease_token = ${c.token} and lease_until > now()
          returning id, url, disabled_at is not null as disabled`;
        if (!row) return "lost";
        await insertAttempt(tx, c, attempt);
        if (!row.disabled) return "retry";
        await recordAudit(
          tx,
          auditEvents.webhookDisabled(row, attempt.recordId),
        );
        return "disabled";
      });
    },

    /** The endpoint's waiting test events, oldest first. */
    async pendingTests(endpointId: number): Promise<PendingTest[]> {
      return await sql<PendingTest[]>`
        select id::float8 as id, ${iso(sql, "at")} as "createdAt"
        from webhook_attempts
        where endpoint_id = ${endpointId} and outcome = 'pending'
        order by id`;
    },

    /**
     * A test event's one attempt, written on its row while the lease is
     * this worker's (false otherwise: another sends it).
     */
    async tested(
      c: ClaimedEndpoint,
      testId: number,
      a: Omit<AttemptResult, "recordId">,
    ): Promise<boolean> {
      const rows = await sql`
        update webhook_attempts set outcome = ${a.outcome}, status = ${a.status},
          error = ${a.error}, response_excerpt = ${a.responseExcerpt},
          duration_ms = ${a.durationMs}, at = now()
        where id = ${testId} and outcome = 'pending' and exists (
          select 1 from webhook_endpoints
          where id = ${c.id} and lease_token = ${c.token} and lease_until > now())
        returning 1`;
      return rows.length === 1;
    },

    /** Gives the lease back (nothing was attempted, or all is delivered). */
    async release(c: ClaimedEndpoint): Promise<void> {
      await sql`
        update webhook_endpoints set lease_until = null, lease_token = null
        where id = ${c.id} and lease_token = ${c.token}`;
    },

    /**
     * What the queue holds over the enabled endpoints: records after their
     * cursors (not all of which may match their actions), and the time of
     * the oldest such record.
     */
    async backlog(): Promise<{ records: number; oldestSeconds: number }> {
      const [row] = await sql<{ records: number; oldest: number | null }[]>`
        select coalesce(sum(greatest(c.head_id - e.cursor, 0)), 0)::float8
            as records,
          extract(epoch from now() - min(first.time))::float8 as oldest
        from webhook_endpoints e
        cross join (select head_id from audit_chain where singleton) c
        left join lateral (
          select time from audit_events a where a.id > e.cursor
          order by a.id limit 1
        ) first on true
        where e.disabled_at is null`;
      return { records: row.records, oldestSeconds: row.oldest ?? 0 };
    },

    /** Removes attempts older than `days`; returns how many. */
    async pruneAttempts(days: number): Promise<number> {
      const [{ n }] = await sql<{ n: number }[]>`
        with gone as (
          delete from webhook_attempts
          where at < now() - make_interval(days => ${days}) returning 1
        ) select count(*)::int as n from gone`;
      return n;
    },
  };

  async function insertAttempt(
    tx: TransactionSql,
    c: ClaimedEndpoint,
    a: AttemptResult,
  ) {
    await tx`
      insert into webhook_attempts (endpoint_id, record_id, attempt, outcome,
        status, error, response_excerpt, duration_ms)
      values (${c.id}, ${a.recordId}, ${c.failures + 1}, ${a.outcome},
        ${a.status}, ${a.error}, ${a.responseExcerpt}, ${a.durationMs})`;
  }
}

export type WebhookQueue = ReturnType<typeof createWebhookQueue>;
