/**
 * What an audit record costs a write, until the bench measures PATCH with
 * the trail wired: appends (each in its own transaction) beside one-insert
 * write transactions, one at a time and 10 at once, then the verify walk.
 *
 *   deno run -A tests/audit_measure.ts [postgres://postgres@127.0.0.1:5432/postgres]
 *
 * Creates and drops a database of its own on that server.
 */
import postgres from "postgres";
import { auditEvents } from "../src/audit/events.ts";
import { verifyChain } from "../src/audit/verify.ts";
import { loadConfig } from "../src/config.ts";
import { openDatabase } from "../src/db/database.ts";
import { createStore, NO_DEADLINE } from "../src/db/store.ts";

const server = new URL(
  Deno.args[0] ?? "postgres://postgres@127.0.0.1:5432/postgres",
);
const name = `audit_measure_${Date.now()}`;
const admin = postgres(server.href, { max: 1, onnotice: () => {} });
await admin`create database ${admin(name)}`;
server.pathname = `/${name}`;
const db = await openDatabase(loadConfig({ DATABASE_URL: server.href }));
try {
  const store = createStore(db.sql);
  await db
    .sql`create table scratch (id serial primary key, t timestamptz default now())`;
  const event = auditEvents.roleChanged(
    { id: 1, username: "a" },
    { id: 2, username: "b" },
    "viewer",
    "admin",
    { requestId: "r", clientAddress: "127.0.0.1" },
  );
  const N = 4000;
  const rate = async (concurrency: number, write: () => Promise<unknown>) => {
    const started = performance.now();
    let left = N;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (left-- > 0) await write();
      }),
    );
    return Math.round(N / ((performance.now() - started) / 1000));
  };
  for (const concurrency of [1, 10]) {
    const appends = await rate(
      concurrency,
      () => store.audit.record(event, NO_DEADLINE),
    );
    const writes = await rate(
      concurrency,
      () => db.sql.begin((tx) => tx`insert into scratch default values`),
    );
    console.log(
      `${concurrency} at once: ${appends} appends/s, ${writes} one-insert transactions/s (ratio ${
        (appends / writes).toFixed(2)
      })`,
    );
  }
  const started = performance.now();
  const result = await store.audit.walk(verifyChain);
  console.log(
    `verify: ${result.ok && result.count} records in ${
      Math.round(performance.now() - started)
    } ms`,
  );
} finally {
  await db.close();
  await admin`drop database ${admin(name)} with (force)`;
  await admin.end();
}
