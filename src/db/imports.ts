import type { Sql } from "postgres";
import { createImportUploads } from "./import-uploads.ts";
import { createImportWork } from "./import-work.ts";
import { createUserExport } from "./user-export.ts";
import type { Writer } from "./write.ts";

export {
  type ImportedDisable,
  type ImportedUser,
  NO_PASSWORD,
  type OnConflict,
  prepareBatch,
  type PreparedBatch,
  type RefusedLine,
  type Verdict,
} from "./import-verdicts.ts";
export {
  type ClaimedImport,
  IMPORTER_NOT_ALLOWED,
  type ImportOptions,
  type ImportOwner,
  type ImportState,
  type ImportStatus,
  type StoredRecord,
} from "./import-jobs.ts";

/**
 * Moving users in and out: an import's upload, status and errors
 * (import-uploads.ts), the workers' side of its jobs (import-work.ts), the
 * batches that write their users (import-batch.ts, import-update.ts), and
 * the export (user-export.ts).
 */
export function createImportStore(sql: Sql, writer: Writer) {
  return {
    ...createImportUploads(sql, writer),
    ...createImportWork(sql, writer),
    ...createUserExport(sql, writer),
  };
}

export type ImportStore = ReturnType<typeof createImportStore>;
