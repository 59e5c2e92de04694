import type { Sql } from "postgres";
import { disabledNow } from "./account-state.ts";
import type { Reach } from "../auth/permissions.ts";
import { inReach } from "./reach.ts";
import { iso } from "./time.ts";

/** The overview's counts of users, as of one snapshot. */
export interface UserCounts {
  total: number;
  admins: number;
  disabled: number;
  /** Admins without a second factor. */
  unenrolledAdmins: number;
}

/** Sign-ins of one UTC day. */
export interface SignInDay {
  /** `2026-11-25` */
  date: string;
  succeeded: number;
  failed: number;
}

/** A webhook endpoint's health, from its state and its last attempt. */
export interface WebhookHealth {
  id: number;
  url: string;
  /**
   * `disabled`: its retry budget ran out; `failing`: the record being
   * delivered has failed; `ok`: the last attempt delivered; `idle`: no
   * attempt yet.
   */
  health: "ok" | "failing" | "disabled" | "idle";
  lastAttemptAt: string | null;
}

/** Days the sign-in counts cover, today (UTC) included. */
export const SIGN_IN_DAYS = 14;

/** The overview page's reads; each one statement. */
export function createOverviewStore(sql: Sql) {
  return {
    /**
     * One pass over users with a filter per count: at a million users a
     * sequential scan (parallel where the server allows) is cheaper than
     * an index read per count, and the four agree with one another.
     */
    async userCounts(reach: Reach = "all"): Promise<UserCounts> {
      const [row] = await sql<UserCounts[]>`
        select count(*)::int as total,
          count(*) filter (where role = 'admin')::int as admins,
          count(*) filter (where ${disabledNow(sql)})::int as disabled,
          count(*) filter (where role = 'admin' and not mfa_enabled)::int
            as "unenrolledAdmins"
        from users where ${inReach(sql, reach)}`;
      return row;
    },

    /**
     * Succeeded and failed sign-ins per UTC day over the last SIGN_IN_DAYS
     * days, oldest first, a day without any included (zero). Reads the
     * trail's time index over that range only.
     */
    async signInsPerDay(reach: Reach = "all"): Promise<SignInDay[]> {
      return await sql<SignInDay[]>`
        with days as (
          select generate_series(
            (now() at time zone 'UTC')::date - ${SIGN_IN_DAYS - 1}::int,
            (now() at time zone 'UTC')::date, interval '1 day')::date as day
        ), counted as (
          select (time at time zone 'UTC')::date as day,
            count(*) filter (where action = 'login.succeeded')::int as succeeded,
            count(*) filter (where action = 'login.failed')::int as failed
          from audit_events
          where time >= ((now() at time zone 'UTC')::date
              - ${SIGN_IN_DAYS - 1}::int)::timestamp at time zone 'UTC'
            and action in ('login.succeeded', 'login.failed')
            and ${inReach(sql, reach, "target_id")}
          group by 1
        )
        select to_char(d.day, 'YYYY-MM-DD') as date,
          coalesce(c.succeeded, 0) as succeeded,
          coalesce(c.failed, 0) as failed
        from days d left join counted c using (day)
        order by d.day`;
    },

    /** Every endpoint, oldest first, with its last attempt (one index probe each). */
    async webhookHealth(): Promise<WebhookHealth[]> {
      return await sql<WebhookHealth[]>`
        select e.id, e.url,
          case
            when e.disabled_at is not null then 'disabled'
            when e.failures > 0 or e.failing_since is not null then 'failing'
            when a.outcome is null then 'idle'
            when a.outcome = 'delivered' then 'ok'
            else 'failing'
          end as health,
          ${iso(sql, "a.at")} as "lastAttemptAt"
        from webhook_endpoints e
        left join lateral (
          select at, outcome from webhook_attempts
          where endpoint_id = e.id order by id desc limit 1
        ) a on true
        order by e.id`;
    },
  };
}
