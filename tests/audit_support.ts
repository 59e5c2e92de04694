/**
 * What the audit tests share: a database of their own opened the way the
 * service opens it, records written through the storage API, and the
 * verify task run against that database (in the test's isolate, or as the
 * separate process an operator starts).
 */
import { type AuditContext, auditEvents } from "../src/audit/events.ts";
import { auditVerify } from "../src/cli/audit-verify.ts";
import { loadConfig } from "../src/config.ts";
import { recordAudit } from "../src/db/audit.ts";
import { type Database, openDatabase } from "../src/db/database.ts";
import { createStore, type Store } from "../src/db/store.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { runScript, runTask } from "./support/process.ts";
import {
  collectGarbage,
  type TestDatabase,
  testDatabase,
} from "./support/service.ts";

export interface AuditDatabase extends AsyncDisposable {
  env: Record<string, string>;
  db: Database;
  store: Store;
  /** Closes the database (the embedded one has one owner: the verify task needs it). */
  close(): Promise<void>;
  /** Opens it again after `close`. */
  reopen(): Promise<void>;
}

export async function auditDatabase(): Promise<AuditDatabase> {
  const database: TestDatabase = await testDatabase("migrated");
  const open = async () => {
    const db = await openDatabase(loadConfig(database.env));
    return { db, store: createStore(db.sql) };
  };
  let current: { db: Database; store: Store } | undefined = await open();
  return {
    env: database.env,
    get db() {
      return current!.db;
    },
    get store() {
      return current!.store;
    },
    async close() {
      await current?.store.stop();
      await current?.db.close();
      current = undefined;
      collectGarbage();
    },
    async reopen() {
      current ??= await open();
    },
    async [Symbol.asyncDispose]() {
      await current?.store.stop();
      await current?.db.close();
      await database[Symbol.asyncDispose]();
    },
  };
}

const context = (n: number): AuditContext => ({
  requestId: `test-${n}`,
  clientAddress: `192.0.2.${n % 250}`,
  via: (["api", "scim", "import"] as const)[n % 3],
});

/**
 * `n` records of every kind the trail holds, each added in a transaction of
 * its own through `recordAudit`, as the writers do, then sealed into the
 * chain.
 */
export async function writeRecords(store: Store, n: number, from = 0) {
  for (let i = from; i < from + n; i++) {
    const actor = { id: 1 + (i % 3), username: `actor${i % 3}` };
    const target = { id: 10 + (i % 5), username: `target${i % 5}` };
    const events = [
      auditEvents.userCreated(actor, { ...target, role: "viewer" }, context(i)),
      auditEvents.roleChanged(actor, target, "viewer", "admin", context(i)),
      auditEvents.passwordReset(actor, target, context(i)),
      auditEvents.userDeleted(actor, target, context(i)),
      auditEvents.loginSucceeded(target, ["password"], context(i)),
      auditEvents.loginFailed(i % 2 ? target : undefined, context(i)),
      auditEvents.loginThrottled(undefined, 60, context(i)),
      auditEvents.logout(target, context(i)),
      auditEvents.adminBootstrapped(target, "generated"),
      auditEvents.adminRecovered(target, "reset"),
    ];
    await store.audit.record(events[i % events.length], NO_DEADLINE);
  }
  await store.audit.seal();
}

/**
 * Runs `deno task audit:verify` against the database of `env`: its main in
 * this isolate, or with `{ process: true }` as the separate process an
 * operator starts.
 */
export function verifyTask(
  env: Record<string, string>,
  { process = false } = {},
) {
  return process
    ? runScript("src/cli/audit-verify.ts", [], env)
    : runTask(auditVerify, [], env);
}

/** SQL that makes every insert into `table` fail, and SQL that undoes it. */
function failingInserts(table: string, name: string) {
  return {
    fail: `
      create function ${name}() returns trigger language plpgsql
        as $$ begin raise exception 'injected ${name}'; end $$;
      create trigger ${name} before insert on ${table}
        for each row execute function ${name}();`,
    heal: `drop trigger ${name} on ${table}; drop function ${name}();`,
  };
}

/**
 * Makes every write's insert of its record fail (into audit_pending, where a
 * write adds it), as a database failing halfway would; HEAL_AUDIT undoes it.
 */
export const { fail: FAIL_AUDIT, heal: HEAL_AUDIT } = failingInserts(
  "audit_pending",
  "audit_failure",
);

/**
 * Makes every seal fail (its insert into audit_events), after the writes
 * whose records it would seal committed; HEAL_SEAL undoes it.
 */
export const { fail: FAIL_SEAL, heal: HEAL_SEAL } = failingInserts(
  "audit_events",
  "seal_failure",
);

export { recordAudit };
