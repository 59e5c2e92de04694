/**
 * The hash chain: intact after many records, and `deno task audit:verify`
 * (a separate process on the test's database) names the first record
 * altered, removed or inserted.
 */
import { createHash } from "node:crypto";
import fc from "fast-check";
import type { AuditAction } from "../src/audit/actions.ts";
import { chainHash } from "../src/audit/chain.ts";
import type { AuditEvent } from "../src/audit/events.ts";
import { verifyChain } from "../src/audit/verify.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { binaryString } from "./support/arbitraries.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { auditDatabase, verifyTask, writeRecords } from "./audit_support.ts";

// The task runs as a process for each of its exit codes (0 here, 1 and 2
// below); the other tests run its main in this isolate.
Deno.test("the chain of 300 records of every action verifies, with the count and head", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 300);
  const [head] = await a.db.sql<{ id: string; hash: string }[]>`
    select id::text, encode(hash, 'hex') as hash from audit_events
    order by audit_events.id desc limit 1`;
  await a.close();
  const run = await verifyTask(a.env, { process: true });
  assertEquals(run.code, 0, run.stderr);
  assertEquals(
    run.stdout.trim(),
    `Audit trail intact: 300 records, head #300 sha256 ${head.hash}`,
  );
  assertEquals(head.id, "300");
});

Deno.test("the first record's hash is SHA-256 over 32 zero bytes and its canonical content, written out", async () => {
  await using a = await auditDatabase();
  await a.store.audit.record({
    action: "user.role_changed",
    actor: { id: 1, username: 'Zoë "root"' },
    target: { id: 2, username: "b\\c" },
    // Keys out of order: the canonical form sorts them.
    details: { to: "admin", from: "viewer" },
    requestId: "req-1",
    clientAddress: "192.0.2.7",
    // No door: the text every record had before doors were recorded.
    via: null,
  }, NO_DEADLINE);
  await a.store.audit.seal();
  const [r] = await a.db.sql<{ time: string; prev: string; hash: string }[]>`
    select to_char(time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as time,
      encode(prev_hash, 'hex') as prev, encode(hash, 'hex') as hash
    from audit_events where id = 1`;
  const canonical =
    `[1,"${r.time}","user.role_changed",1,"Zoë \\"root\\"",2,"b\\\\c",` +
    `{"from":"viewer","to":"admin"},"req-1","192.0.2.7"]`;
  const expected = createHash("sha256").update(new Uint8Array(32))
    .update(canonical).digest("hex");
  assertEquals(r.prev, "00".repeat(32));
  assertEquals(r.hash, expected);
});

Deno.test("a record's door is a twelfth element after the key id (null without a key), written out; with a key, both", async () => {
  await using a = await auditDatabase();
  await a.store.audit.record({
    action: "user.deleted",
    actor: null,
    target: { id: 2, username: "bob" },
    details: { connection: { id: 3, name: "okta" } },
    requestId: "req-2",
    clientAddress: null,
    via: "scim",
  }, NO_DEADLINE);
  await a.store.audit.record({
    action: "user.deleted",
    actor: { id: 1, username: "root", keyId: 9 },
    target: { id: 4, username: "eve" },
    details: {},
    requestId: null,
    clientAddress: "192.0.2.8",
    via: "api",
  }, NO_DEADLINE);
  await a.store.audit.seal();
  const rows = await a.db.sql<
    { time: string; prev: Uint8Array; hash: string; via: string }[]
  >`
    select to_char(time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as time,
      prev_hash as prev, encode(hash, 'hex') as hash, via
    from audit_events order by id`;
  const canonicals = [
    `[1,"${rows[0].time}","user.deleted",null,null,2,"bob",` +
    `{"connection":{"id":3,"name":"okta"}},"req-2",null,null,"scim"]`,
    `[2,"${rows[1].time}","user.deleted",1,"root",4,"eve",` +
    `{},null,"192.0.2.8",9,"api"]`,
  ];
  rows.forEach((r, i) => {
    assertEquals(
      r.hash,
      createHash("sha256").update(r.prev).update(canonicals[i]).digest("hex"),
    );
  });
  assertEquals(rows.map((r) => r.via), ["scim", "api"]);
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
});

const SEED = Number(Deno.env.get("AUDIT_SEED") ?? Date.now() % 2 ** 31);

Deno.test(`the database hashes any record's text as verification recomputes it (seed ${SEED}, AUDIT_SEED=${SEED} repeats it)`, async () => {
  console.log(`audit seed ${SEED} (AUDIT_SEED=${SEED} repeats this run)`);
  // Any text PostgreSQL can hold (no U+0000): quotes, backslashes, control
  // characters, astral planes; details nested, keys in any order.
  const text = binaryString({ maxLength: 40 })
    .filter((t) => !t.includes("\u0000"));
  const party = fc.option(
    fc.record({ id: fc.integer({ min: 1, max: 2 ** 31 - 1 }), username: text }),
  );
  const value = fc.oneof(text, fc.integer(), fc.boolean(), fc.constant(null));
  const details = fc.dictionary(
    text,
    fc.oneof(value, fc.dictionary(text, value, { maxKeys: 4 })),
    { maxKeys: 5 },
  );
  const actions: AuditAction[] = [
    "user.created",
    "user.role_changed",
    "login.failed",
    "logout",
  ];
  const event: fc.Arbitrary<AuditEvent> = fc.record({
    action: fc.constantFrom(...actions),
    actor: party,
    target: party,
    details,
    requestId: fc.option(text),
    clientAddress: fc.option(text),
    via: fc.constantFrom(
      null,
      "api" as const,
      "scim" as const,
      "import" as const,
    ),
  });
  const events = fc.sample(event, { numRuns: 60, seed: SEED });
  await using a = await auditDatabase();
  for (const e of events) await a.store.audit.record(e, NO_DEADLINE);
  await a.store.audit.seal();
  const result = await a.store.audit.walk(async (ends, batches) => {
    for await (const batch of batches) {
      for (const r of batch) {
        assertEquals(
          Array.from(chainHash(r.prevHash, r)),
          Array.from(r.hash),
          `record #${r.id}: ${JSON.stringify(events[r.id - 1])}`,
        );
      }
    }
    return ends;
  });
  assertEquals(result.headId, events.length);
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
});

Deno.test("the walk reads the chain in batches, and any batch size verifies it", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 45);
  for (const size of [1, 7, 45, 1000]) {
    const batches: number[] = [];
    const result = await a.store.audit.walk(async (ends, pages) => {
      const counted = (async function* () {
        for await (const page of pages) {
          batches.push(page.length);
          yield page;
        }
      })();
      return await verifyChain(ends, counted);
    }, size);
    assertEquals(result.ok && result.count, 45);
    assert(batches.every((n) => n <= size), `batches ${batches}`);
  }
});

Deno.test("an empty trail verifies with 0 records", async () => {
  await using a = await auditDatabase();
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
  assertEquals(run.stdout.trim(), "Audit trail intact: 0 records");
});

Deno.test("verify names a record whose content was updated", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 20);
  await a.db.sql`
    update audit_events set details = '{"from":"viewer","to":"viewer"}' where id = 12`;
  await a.close();
  const run = await verifyTask(a.env, { process: true });
  assertEquals(run.code, 1, run.stdout);
  assertEquals(
    run.stderr.trim(),
    "Audit trail broken after 11 good records: record #12 was altered",
  );
});

Deno.test("verify names a record updated together with its own hash", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 20);
  // A careful forger recomputes the altered record's hash: the next record
  // still holds the old one.
  const [r] = await a.store.audit.list({ limit: 1, before: 8 });
  const [{ prev_hash }] = await a.db.sql<{ prev_hash: Uint8Array }[]>`
    select prev_hash from audit_events where id = 7`;
  const forged = { ...r, target: { id: 99, username: "someone else" } };
  await a.db.sql`
    update audit_events set target_id = 99, target_username = 'someone else',
      hash = ${chainHash(prev_hash, forged)} where id = 7`;
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertEquals(
    run.stderr.trim(),
    "Audit trail broken after 7 good records: record #7 was altered: record #8 does not follow it",
  );
});

Deno.test("verify names a deleted record", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 20);
  await a.db.sql`delete from audit_events where id = 9`;
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertEquals(
    run.stderr.trim(),
    "Audit trail broken after 8 good records: record #9 was removed",
  );
});

Deno.test("verify names deleted newest and oldest records", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 20);
  await a.db.sql`delete from audit_events where id >= 19`;
  await a.close();
  let run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertMatch(run.stderr, /: records #19 to #20 were removed$/m);

  await a.reopen();
  await writeRecords(a.store, 0);
  await a.db.sql`delete from audit_events where id <= 2`;
  await a.close();
  run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertMatch(run.stderr, /: records #1 to #2 were removed$/m);
});

Deno.test("verify names an inserted record, even one whose hashes are forged to fit", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 20);
  // Forged as the writer would have written it, right after the newest.
  const [last] = await a.db.sql<{ hash: Uint8Array; time: string }[]>`
    select hash, to_char(time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as time
    from audit_events where id = 20`;
  const forged = {
    id: 21,
    time: last.time,
    action: "user.role_changed" as const,
    actor: { id: 1, username: "actor0" },
    target: { id: 66, username: "mallory" },
    details: { from: "viewer", to: "admin" },
    requestId: null,
    clientAddress: null,
    via: null,
  };
  await a.db.sql`
    insert into audit_events (id, time, action, actor_id, actor_username, target_id,
      target_username, details, prev_hash, hash)
    values (21, ${forged.time}::timestamptz, ${forged.action}, 1, 'actor0', 66, 'mallory',
      ${a.db.sql.json(forged.details)}, ${last.hash}, ${
    chainHash(last.hash, forged)
  })`;
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertEquals(
    run.stderr.trim(),
    "Audit trail broken after 20 good records: record #21 was inserted: the chain's head is #20",
  );
});

Deno.test("verify names a record inserted before the oldest", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 5);
  await a.db.sql`
    insert into audit_events (id, time, action, details, prev_hash, hash)
    values (0, now(), 'logout', '{}', decode(repeat('00', 32), 'hex'), decode(repeat('00', 32), 'hex'))`;
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 1, run.stdout);
  assertMatch(
    run.stderr,
    /: record #0 was inserted: the chain starts after #0$/m,
  );
});

Deno.test("verify exits 2 when it cannot read the database at all", async () => {
  const run = await verifyTask({
    DATABASE_URL: "postgres://nobody@127.0.0.1:1/none",
  }, { process: true });
  assertEquals(run.code, 2);
  assert(run.stderr.includes("Cannot open the database"), run.stderr);
});
