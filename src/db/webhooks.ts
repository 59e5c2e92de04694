import type { Sql } from "postgres";
import type { AuditAction } from "../audit/actions.ts";
import { auditEvents } from "../audit/events.ts";
import { recordAudit } from "./audit.ts";
import {
  type CallerRefusal,
  type CallerWrite,
  takeTurn,
  type Writer,
} from "./write.ts";
import { iso } from "./time.ts";
import { type Refusal, refuse } from "../refusal.ts";

/** An endpoint as the API shows it: never its secret. */
export interface Webhook {
  id: number;
  url: string;
  actions: AuditAction[] | null;
  description: string | null;
  createdAt: string;
  /** `disabled` once its retry budget ran out, until enabled again. */
  status: "active" | "disabled";
  disabledAt: string | null;
  /** The last audit record passed (delivered, or not of its actions). */
  lastRecordId: number;
  /** Failed attempts at the record after `lastRecordId`. */
  failures: number;
  /** When the record after `lastRecordId` is tried again, while failing. */
  nextAttemptAt: string | null;
  /** `failing` while the held record's attempts fail; `disabled` as `status`. */
  health: "healthy" | "failing" | "disabled";
  /** Why the newest failed attempt at the held record failed, while failing or disabled. */
  lastError: string | null;
  /** The newest successful attempt (a record or a test), if one is kept. */
  lastDeliveredAt: string | null;
}

export interface NewWebhook {
  url: string;
  actions: AuditAction[] | null;
  description: string | null;
  secret: string;
}

/** One delivery attempt, as `GET /api/webhooks/{id}/deliveries` shows it. */
export interface DeliveryAttempt {
  id: number;
  /** `webhook.test` for a test event, which has no record. */
  type: "record" | "webhook.test";
  recordId: number | null;
  attempt: number;
  at: string;
  /** `pending`: a test event not sent yet. */
  outcome: "delivered" | "failed" | "pending";
  status: number | null;
  error: string | null;
  responseExcerpt: string | null;
  durationMs: number;
}

/** At most this many webhook endpoints in all. */
export const WEBHOOKS_MAX = 100;
/** Any 64-bit number of our own: the lock that serialises webhook creations. */
export const WEBHOOKS_LOCK = 5_913_402_776_180n;

/** The SQL of webhook endpoints as admins manage them; the delivery queue is webhook-queue.ts's. */
export function createWebhookStore(
  sql: Sql,
  { asCaller }: Pick<Writer, "asCaller">,
) {
  // Health from the endpoint's own state and its newest kept attempts
  // (indexed by endpoint and id): a failure's words are its attempt's.
  const shown = sql`id, url, actions, description,
    ${iso(sql, "created_at")} as "createdAt",
    case when disabled_at is null then 'active' else 'disabled' end as status,
    ${iso(sql, "disabled_at")} as "disabledAt",
    cursor::float8 as "lastRecordId", failures,
    case when failures > 0 then ${
    iso(sql, "next_attempt_at")
  } end as "nextAttemptAt",
    case when disabled_at is not null then 'disabled'
      when failures > 0 then 'failing' else 'healthy' end as health,
    case when disabled_at is not null or failures > 0 then (
      select coalesce(a.error, 'HTTP ' || a.status) from webhook_attempts a
      where a.endpoint_id = webhook_endpoints.id and a.outcome = 'failed'
        and a.record_id is not null
      order by a.id desc limit 1) end as "lastError",
    (select ${iso(sql, "a.at")} from webhook_attempts a
      where a.endpoint_id = webhook_endpoints.id and a.outcome = 'delivered'
      order by a.id desc limit 1) as "lastDeliveredAt"`;

  return {
    /**
     * Creates the endpoint, delivering the records sealed after this
     * moment; "too_many" when WEBHOOKS_MAX exist. Creations take one lock
     * in turn, so concurrent ones never count past the limit together; a
     * burst of them waits its turn within the request's deadline.
     */
    async create(
      w: NewWebhook,
      write: CallerWrite,
    ): Promise<Webhook | Refusal<"too_many"> | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        await takeTurn(tx, WEBHOOKS_LOCK, write.writeBy);
        const [{ n }] = await tx<{ n: number }[]>`
          select count(*)::int as n from webhook_endpoints`;
        if (n >= WEBHOOKS_MAX) return refuse("too_many");
        const [row] = await tx<Webhook[]>`
          insert into webhook_endpoints (url, actions, description, secret, cursor)
          values (${w.url}, ${w.actions}, ${w.description}, ${w.secret},
            (select head_id from audit_chain where singleton))
          returning ${shown}`;
        await recordAudit(
          tx,
          auditEvents.webhookCreated(actor, row, write.context),
        );
        return row;
      });
    },

    async list(): Promise<Webhook[]> {
      return await sql<Webhook[]>`
        select ${shown} from webhook_endpoints order by id`;
    },

    async get(id: number): Promise<Webhook | undefined> {
      const [row] = await sql<Webhook[]>`
        select ${shown} from webhook_endpoints where id = ${id}`;
      return row;
    },

    /** Deletes the endpoint and its attempts; delivery to it stops. */
    async remove(
      id: number,
      write: CallerWrite,
    ): Promise<"deleted" | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const [row] = await tx<{ id: number; url: string }[]>`
          delete from webhook_endpoints where id = ${id} returning id, url`;
        if (!row) return refuse("not_found");
        await recordAudit(
          tx,
          auditEvents.webhookDeleted(actor, row, write.context),
        );
        return "deleted";
      });
    },

    /**
     * Enables a disabled endpoint: delivery resumes at once from the record
     * it was held at, with a fresh retry budget. An active endpoint is
     * answered as it is, without a record.
     */
    async enable(
      id: number,
      write: CallerWrite,
    ): Promise<Webhook | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, "share", async (tx, actor) => {
        const [row] = await tx<(Webhook & { was: boolean })[]>`
          update webhook_endpoints set disabled_at = null, failures = 0,
            failing_since = null, next_attempt_at = now()
          from (select disabled_at is not null as was from webhook_endpoints
            where id = ${id} for update) old
          where id = ${id}
          returning ${shown}, old.was`;
        if (!row) return refuse("not_found");
        const { was, ...webhook } = row;
        if (was) {
          await recordAudit(
            tx,
            auditEvents.webhookEnabled(actor, webhook, write.context),
          );
        }
        return webhook;
      });
    },

    /**
     * A test event for the endpoint: a pending attempt without a record,
     * which its worker sends once (webhook-queue.ts). One waits at most per
     * endpoint: asking again while it waits answers that one.
     */
    async test(
      id: number,
      write: CallerWrite,
    ): Promise<number | Refusal<"not_found"> | CallerRefusal> {
      return await asCaller(write, "share", async (tx) => {
        const [endpoint] = await tx`
          select 1 from webhook_endpoints where id = ${id} for update`;
        if (!endpoint) return refuse("not_found");
        const [row] = await tx<{ id: number }[]>`
          with waiting as (
            select id from webhook_attempts
            where endpoint_id = ${id} and outcome = 'pending'
          ), made as (
            insert into webhook_attempts (endpoint_id, record_id, attempt,
              outcome, duration_ms)
            select ${id}, null, 1, 'pending', 0
            where not exists (select 1 from waiting)
            returning id
          )
          select id::float8 as id from made
          union all select id::float8 from waiting`;
        return row.id;
      });
    },

    /**
     * Tries the held record again now instead of at its scheduled time:
     * the worker that claims it next (within WEBHOOK_POLL_MS) sends it.
     * Only an active endpoint with a failing record (`nothing_to_retry`
     * otherwise); the retry budget still runs from the first failure.
     */
    async retry(
      id: number,
      write: CallerWrite,
    ): Promise<
      Webhook | Refusal<"not_found" | "nothing_to_retry"> | CallerRefusal
    > {
      return await asCaller(write, "share", async (tx) => {
        const [row] = await tx<(Webhook & { held: boolean })[]>`
          update webhook_endpoints set next_attempt_at = case
              when disabled_at is null and failures > 0 then now()
              else next_attempt_at end
          where id = ${id}
          returning ${shown}, disabled_at is null and failures > 0 as held`;
        if (!row) return refuse("not_found");
        const { held, ...webhook } = row;
        return held ? webhook : refuse("nothing_to_retry");
      });
    },

    /** The endpoint's attempts, newest first; undefined when there is no such endpoint. */
    async deliveries(
      id: number,
      limit: number,
    ): Promise<DeliveryAttempt[] | undefined> {
      const [endpoint] =
        await sql`select 1 from webhook_endpoints where id = ${id}`;
      if (!endpoint) return undefined;
      return await sql<DeliveryAttempt[]>`
        select id::float8 as id,
          case when record_id is null then 'webhook.test' else 'record' end
            as type,
          record_id::float8 as "recordId", attempt,
          ${iso(sql, "at")} as at, outcome, status, error,
          response_excerpt as "responseExcerpt", duration_ms as "durationMs"
        from webhook_attempts where endpoint_id = ${id}
        order by id desc limit ${limit}`;
    },
  };
}

export type WebhookStore = ReturnType<typeof createWebhookStore>;
