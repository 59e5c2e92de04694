/**
 * Verifies the audit trail's hash chain, from the oldest record kept to the
 * newest, against the service's database (DATABASE_URL, or the embedded one
 * in DATA_DIR: stop the service first there, PGlite has one owner).
 *
 *   deno task audit:verify
 *
 * Exit 0: intact, with the count and the head's hash (worth keeping
 * elsewhere: it pins everything before it), and how many records wait to be
 * sealed into the chain (a service stopped before its seal leaves some).
 * Exit 1: the first record altered, removed or inserted. Exit 2: it could not
 * be checked at all.
 */
import { createAuditStore } from "../db/audit-trail.ts";
import { verifyChain } from "../audit/verify.ts";
import { runAsProcess, type TaskMain, withTaskDatabase } from "./task.ts";

export const auditVerify: TaskMain = (_args, env, out) =>
  withTaskDatabase(env, out, 2, async (db) => {
    let result;
    try {
      result = await createAuditStore(db.sql).walk(verifyChain);
    } catch (e) {
      out.error(`Cannot read the audit trail: ${(e as Error).message}`);
      return 2;
    }
    if (!result.ok) {
      out.error(
        `Audit trail broken after ${result.count} good records: ${result.message}`,
      );
      return 1;
    }
    out.log(
      `Audit trail intact: ${result.count} records` +
        (result.count
          ? `, head #${result.headId} sha256 ${result.headHash}`
          : "") +
        // Sealed by the next write, read of the trail or housekeeping sweep.
        (result.pending
          ? `; ${result.pending} more committed, not yet sealed into the chain`
          : ""),
    );
    return 0;
  });

if (import.meta.main) await runAsProcess(auditVerify);
