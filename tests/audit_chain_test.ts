/**
 * The hash chain: intact after many records, and `deno task audit:verify`
 * (a separate process on the test's database) names the first record
 * altered, removed or inserted.
 */
import { chainHash } from "../src/audit/chain.ts";
import { verifyChain } from "../src/audit/verify.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { auditDatabase, verifyTask, writeRecords } from "./audit_support.ts";

Deno.test("the chain of 300 records of every action verifies, with the count and head", async () => {
  await using a = await auditDatabase();
  await writeRecords(a.store, 300);
  const [head] = await a.db.sql<{ id: string; hash: string }[]>`
    select id::text, encode(hash, 'hex') as hash from audit_events
    order by audit_events.id desc limit 1`;
  await a.close();
  const run = await verifyTask(a.env);
  assertEquals(run.code, 0, run.stderr);
  assertEquals(
    run.stdout.trim(),
    `Audit trail intact: 300 records, head #300 sha256 ${head.hash}`,
  );
  assertEquals(head.id, "300");
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
  const run = await verifyTask(a.env);
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
  });
  assertEquals(run.code, 2);
  assert(run.stderr.includes("Cannot open the database"), run.stderr);
});
