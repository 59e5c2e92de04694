import type { Sql, TransactionSql } from "postgres";
import type { AuditParty } from "../audit/chain.ts";
import type { Need } from "../auth/permissions.ts";
import { type AuditContext, auditEvents } from "../audit/events.ts";
import { recordAudit } from "./audit.ts";
import type { BatchJob, OnConflict } from "./import-verdicts.ts";
import { iso } from "./time.ts";
import { isRefusal } from "../refusal.ts";
import {
  type CallerRefusal,
  checkCaller,
  NO_DEADLINE,
  type Recheck,
} from "./write.ts";

export type ImportState =
  | "queued"
  | "running"
  | "finished"
  | "failed"
  | "cancelled";

/** Who asked for an import and from where: the actor and context of its records. */
export interface ImportOwner {
  actor: AuditParty;
  context: AuditContext;
}

export interface ImportOptions {
  onConflict: OnConflict;
  dryRun: boolean;
}

/** An import as `GET /api/imports/{id}` shows it. */
export interface ImportStatus {
  id: number;
  status: ImportState;
  total: number;
  processed: number;
  created: number;
  updated: number;
  skipped: number;
  failed: number;
  startedAt: string | null;
  finishedAt: string | null;
  error: string | null;
}

/** A record as the upload stored it: its JSON object's text, or why its line could not be read. */
export interface StoredRecord {
  line: number;
  record: string | null;
  problem: string | null;
}

/** A job a worker holds the lease of. */
export interface ClaimedImport extends BatchJob {
  token: string;
  /** The uploader as every batch checks them again. */
  uploader: Recheck;
}

/**
 * Why a job ended `failed` when its uploader lost the right to write
 * (their key or session gone, demoted, disabled, deleted) before its end.
 */
export const IMPORTER_NOT_ALLOWED = "Importer no longer allowed";

/** What an uploader must still hold (imports.routes.ts's `create`). */
const IMPORT_NEEDS: readonly Need[] = ["users:import", "admin"];

/** The columns of a job that name who asked for it and from where. */
export interface OwnerRow {
  actor_id: number;
  actor_username: string;
  actor_key_id: number | null;
  actor_session: Uint8Array | null;
  request_id: string | null;
  client_address: string | null;
}

export const ownerOf = (row: OwnerRow): ImportOwner => ({
  actor: row.actor_key_id === null
    ? { id: row.actor_id, username: row.actor_username }
    : {
      id: row.actor_id,
      username: row.actor_username,
      keyId: row.actor_key_id,
    },
  context: {
    requestId: row.request_id,
    clientAddress: row.client_address,
    via: "import",
  },
});

/** The uploader as the job keeps them: a key, a session, or (a job queued by a release that kept no session) the account alone. */
export const uploaderOf = (row: OwnerRow): Recheck => {
  const account = { id: row.actor_id };
  if (row.actor_key_id !== null) return { account, keyId: row.actor_key_id };
  if (row.actor_session !== null) {
    return { account, session: row.actor_session };
  }
  return { account };
};

/**
 * What both sides of a job read and do: its status as shown, its end, and
 * the check of its uploader.
 */
export function importJobRows(sql: Sql) {
  const status = sql`id, status, total, processed, created, updated, skipped,
    failed, ${iso(sql, "started_at")} as "startedAt",
    ${iso(sql, "finished_at")} as "finishedAt", error`;

  const counts = (s: ImportStatus) => ({
    total: s.total,
    processed: s.processed,
    created: s.created,
    updated: s.updated,
    skipped: s.skipped,
    failed: s.failed,
  });

  /**
   * Ends the job in `tx` (finished, cancelled or failed, with why) and
   * records `import.finished`. The uploader's session is no longer kept.
   */
  const end = async (
    tx: TransactionSql,
    id: number,
    to: "finished" | "cancelled" | "failed",
    owner: ImportOwner,
    error: string | null = null,
  ) => {
    const [row] = await tx<ImportStatus[]>`
      update import_jobs set status = ${to}, finished_at = now(),
        lease_until = null, lease_token = null, actor_session = null,
        error = ${error}
      where id = ${id} returning ${status}`;
    await tx`delete from import_records where job_id = ${id}`;
    await recordAudit(
      tx,
      auditEvents.importFinished(owner.actor, {
        importId: id,
        status: to,
        counts: counts(row),
      }, owner.context),
    );
    return row;
  };

  /**
   * The uploader checked again in `tx` as every caller's write is
   * (checkCaller), their row held for share until it commits; one who lost
   * the right to write ends the job `failed` with IMPORTER_NOT_ALLOWED.
   */
  const uploaderRefused = async (
    tx: TransactionSql,
    id: number,
    uploader: Recheck,
    owner: ImportOwner,
  ): Promise<CallerRefusal | undefined> => {
    const standing = await checkCaller(
      tx,
      // An import's records may make admins and change any account.
      { caller: uploader, writeBy: NO_DEADLINE, needs: IMPORT_NEEDS },
      "share",
    );
    if (!isRefusal(standing)) return undefined;
    await end(tx, id, "failed", owner, IMPORTER_NOT_ALLOWED);
    return standing;
  };

  return { status, end, uploaderRefused };
}
