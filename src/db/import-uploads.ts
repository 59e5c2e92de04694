import type { Sql } from "postgres";
import { auditEvents } from "../audit/events.ts";
import { recordAudit } from "./audit.ts";
import {
  importJobRows,
  type ImportOptions,
  type ImportOwner,
  type ImportStatus,
  ownerOf,
  type OwnerRow,
  type StoredRecord,
} from "./import-jobs.ts";
import {
  type CallerRefusal,
  NO_DEADLINE,
  type Recheck,
  type Writer,
} from "./write.ts";
import { type Refusal, refuse } from "../refusal.ts";

/** Imports as callers see them: the upload of a job, its status, its cancel and its errors. */
export function createImportUploads(sql: Sql, { transaction }: Writer) {
  const { status, end, uploaderRefused } = importJobRows(sql);

  return {
    /**
     * A job whose body is about to stream in; its id is given out once it
     * is queued. `session`: the uploader's (null for a key), checked again
     * before the job writes.
     */
    async begin(
      owner: ImportOwner,
      options: ImportOptions,
      session: Uint8Array | null,
    ): Promise<number> {
      const [{ id }] = await sql<{ id: number }[]>`
        insert into import_jobs (status, on_conflict, dry_run, actor_id,
          actor_username, actor_key_id, actor_session, request_id,
          client_address, lease_until)
        values ('receiving', ${options.onConflict}, ${options.dryRun},
          ${owner.actor.id}, ${owner.actor.username},
          ${owner.actor.keyId ?? null}, ${session},
          ${owner.context.requestId}, ${owner.context.clientAddress},
          now() + interval '10 minutes')
        returning id`;
      return id;
    },

    /**
     * Records of the body, in one statement; each keeps the receiving
     * job's lease, so no worker takes a body still streaming in as one
     * its uploader left.
     */
    async addRecords(id: number, records: StoredRecord[]): Promise<void> {
      if (records.length === 0) return;
      // The records as one text, a line each (a record's JSON holds no raw
      // newline; an unreadable one is empty): no array literal to escape.
      await sql`
        with added as (
          insert into import_records (job_id, line, record, problem)
          select ${id}, r.line, nullif(r.record, ''), r.problem
          from unnest(${records.map((r) => r.line)}::int[],
            string_to_array(${
        records.map((r) => r.record ?? "").join("\n")
      }, E'\n'),
            ${
        records.map((r) => r.problem)
      }::text[]) as r(line, record, problem)
          returning 1)
        update import_jobs set lease_until = now() + interval '10 minutes'
        where id = ${id} and status = 'receiving'
          and (select count(*) from added) > 0`;
    },

    /**
     * The body is in: the job is queued for any instance's worker, and
     * `import.started` recorded; or, when the uploader lost the right to
     * write while it streamed in, the job ends `failed` and the refusal is
     * answered.
     */
    async queue(
      id: number,
      total: number,
      owner: ImportOwner,
      options: ImportOptions,
      uploader: Recheck,
    ): Promise<ImportStatus | CallerRefusal> {
      return await transaction(NO_DEADLINE, async (tx) => {
        const refused = await uploaderRefused(tx, id, uploader, owner);
        if (refused) return refused;
        const [row] = await tx<ImportStatus[]>`
          update import_jobs set status = 'queued', total = ${total},
            lease_until = null
          where id = ${id} returning ${status}`;
        await recordAudit(
          tx,
          auditEvents.importStarted(owner.actor, {
            importId: id,
            total,
            dryRun: options.dryRun,
            onConflict: options.onConflict,
          }, owner.context),
        );
        return row;
      });
    },

    /** A body that did not arrive whole: the job and its records go. */
    async discard(id: number): Promise<void> {
      await sql`delete from import_jobs where id = ${id}`;
    },

    async get(id: number): Promise<ImportStatus | undefined> {
      const [row] = await sql<ImportStatus[]>`
        select ${status} from import_jobs
        where id = ${id} and status <> 'receiving'`;
      return row;
    },

    /**
     * Stops a queued or running job: what its batches wrote stays; the
     * batch under way (which holds the job's row) commits first. A job
     * already at its end is answered as it is.
     */
    async cancel(id: number): Promise<ImportStatus | Refusal<"not_found">> {
      return await transaction(NO_DEADLINE, async (tx) => {
        const [row] = await tx<(ImportStatus & OwnerRow)[]>`
          select ${status}, actor_id, actor_username, actor_key_id,
            actor_session, request_id, client_address
          from import_jobs where id = ${id} and status <> 'receiving'
          for update`;
        if (!row) return refuse("not_found");
        if (row.status !== "queued" && row.status !== "running") {
          const {
            actor_id: _a,
            actor_username: _u,
            actor_key_id: _k,
            actor_session: _s,
            request_id: _r,
            client_address: _c,
            ...shown
          } = row;
          return shown;
        }
        return await end(tx, id, "cancelled", ownerOf(row));
      });
    },

    /** The errors of an import, in line order, as JSON text in batches (streamed). */
    errorsJson(id: number, batchSize = 2000): AsyncIterable<string[]> {
      let after = 0;
      let done = false;
      return {
        [Symbol.asyncIterator]: () => ({
          async next(): Promise<IteratorResult<string[]>> {
            if (done) return { done: true, value: undefined };
            const rows = await sql<{ line: number; json: string }[]>`
              select line, json_build_object('line', line, 'error', error)::text
                as json
              from import_errors where job_id = ${id} and line > ${after}
              order by line limit ${batchSize}`;
            if (rows.length < batchSize) done = true;
            if (rows.length === 0) return { done: true, value: undefined };
            after = rows[rows.length - 1].line;
            return { done: false, value: rows.map((r) => r.json) };
          },
          return(): Promise<IteratorResult<string[]>> {
            done = true;
            return Promise.resolve({ done: true, value: undefined });
          },
        }),
      };
    },
  };
}
