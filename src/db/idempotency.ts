import type { Sql } from "postgres";
import { sameBytes } from "../audit/chain.ts";
import { beforeWrite, type WriteBy } from "./write.ts";

/** An answer kept for its Idempotency-Key. */
export interface KeptAnswer {
  status: number;
  body: string;
  location: string | null;
}

/** What a request with an Idempotency-Key finds when it starts. */
export type IdempotencyStart =
  | { outcome: "started" }
  | { outcome: "replay"; answer: KeptAnswer }
  | { outcome: "mismatch" }
  | { outcome: "in_progress" };

/** How long a 201 or 409 is kept for its key. */
export const KEPT_HOURS = 24;

/**
 * Idempotency-Key rows (migration 015), per caller and key. Each statement
 * commits on its own, so every instance sees a run start and end.
 */
export function createIdempotencyStore(sql: Sql) {
  return {
    /**
     * Starts a run of the key: a new row, or a row whose time is up (a run
     * that crashed or passed its deadline, or an answer older than 24
     * hours) taken over, in one statement. Else what the row holds: the
     * kept answer for the same fingerprint, a mismatch for another, or a
     * run still in progress.
     */
    async start(
      userId: number,
      key: string,
      fingerprint: Uint8Array,
      runId: string,
      runningMs: number,
      writeBy: WriteBy,
    ): Promise<IdempotencyStart> {
      // A row removed between the two statements (its run answered 400 or
      // 500) is tried once more; after that the other run counts as running.
      for (let attempt = 0; attempt < 2; attempt++) {
        beforeWrite(writeBy);
        const [started] = await sql`
          insert into idempotency_keys as i
            (user_id, key, fingerprint, run_id, expires_at)
          values (${userId}, ${key}, ${fingerprint}, ${runId},
            now() + make_interval(secs => ${runningMs / 1000}))
          on conflict (user_id, key) do update set
            fingerprint = excluded.fingerprint, run_id = excluded.run_id,
            status = null, body = null, location = null, created_at = now(),
            expires_at = excluded.expires_at
          where i.expires_at <= now()
          returning 1`;
        if (started) return { outcome: "started" };
        const [row] = await sql<
          {
            fingerprint: Uint8Array;
            status: number | null;
            body: string | null;
            location: string | null;
          }[]
        >`
          select fingerprint, status, body, location from idempotency_keys
          where user_id = ${userId} and key = ${key} and expires_at > now()`;
        if (!row) continue;
        if (!sameBytes(row.fingerprint, fingerprint)) {
          return { outcome: "mismatch" };
        }
        if (row.status === null) return { outcome: "in_progress" };
        return {
          outcome: "replay",
          answer: {
            status: row.status,
            body: row.body!,
            location: row.location,
          },
        };
      }
      return { outcome: "in_progress" };
    },

    /** Keeps the run's answer for 24 hours, if the row is still this run's. */
    async finish(
      userId: number,
      key: string,
      runId: string,
      answer: KeptAnswer,
    ): Promise<void> {
      await sql`
        update idempotency_keys set status = ${answer.status},
          body = ${answer.body}, location = ${answer.location},
          expires_at = now() + make_interval(hours => ${KEPT_HOURS})
        where user_id = ${userId} and key = ${key} and run_id = ${runId}`;
    },

    /** Forgets the run (its answer is not kept): a retry runs again. */
    async release(userId: number, key: string, runId: string): Promise<void> {
      await sql`
        delete from idempotency_keys
        where user_id = ${userId} and key = ${key} and run_id = ${runId}`;
    },

    /** Removes rows whose time is up: kept answers past 24 hours, abandoned runs. */
    async sweep(): Promise<number> {
      const rows = await sql`
        delete from idempotency_keys where expires_at <= now() returning 1`;
      return rows.length;
    },
  };
}

export type IdempotencyStore = ReturnType<typeof createIdempotencyStore>;
