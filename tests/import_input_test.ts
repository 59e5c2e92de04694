/**
 * Imports of bad input: each refused record is named by its line with the
 * message `POST /api/users` would answer, a body of another type or over
 * its limit is refused whole, and a cancelled import keeps what it made.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { rawHttp } from "./support/raw.ts";
import { postImport, runImport } from "./support/imports.ts";
import { IMPORT_BATCH } from "../src/imports/worker.ts";
import { uploadChunks } from "../src/cli/import.ts";
import {
  loginCookie,
  sharedService,
  type TestService,
} from "./support/service.ts";

// Plain passwords are hashed at import: cheaply here, bcrypt is not the subject.
const service = sharedService({}, { bcryptCost: 4 });

/** A bcrypt hash (cost 4) given as is: the fast path. */
const HASH = "$2b$04$rL60lBa65WZtYM2QmI89X.WlfUKG2zn/R.cpZa33.2kUZ6IEAd3SO";

const line = (username: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({
    username,
    name: `Person ${username}`,
    email: `${username}@example.com`,
    password: `${username}-password`,
    ...extra,
  });

const usernames = async (svc: TestService) =>
  (await svc.sql<{ username: string }[]>`
    select username from users where username <> 'admin' order by id`)
    .map((r) => r.username);

Deno.test("each refused NDJSON record is named by its line with the message POST /api/users answers", async () => {
  const svc = await service();
  const enc = new TextEncoder();
  const body = new Uint8Array([
    ...enc.encode(line("good1") + "\n"),
    ...enc.encode('{"username":"cut","name":"Cut","em\n'),
    ...enc.encode('{"username":"bad'),
    0xff,
    0xfe,
    ...enc.encode('utf8","name":"x","email":"x@example.com"}\n'),
    ...enc.encode("\n"),
    ...enc.encode('["an","array"]\n'),
    ...enc.encode(line("noemail", { email: null }) + "\n"),
    ...enc.encode(line("bademail", { email: "not-an-address" }) + "\n"),
    ...enc.encode(line("badrole", { role: "root" }) + "\n"),
    ...enc.encode(line("short", { password: "short" }) + "\n"),
    ...enc.encode(line("Good1", { email: "other@example.com" }) + "\n"),
    ...enc.encode(line("good2", { email: "GOOD1@example.com" }) + "\n"),
    ...enc.encode(line("good3")),
  ]);
  const { done, errors } = await runImport(svc, body);
  assertEquals(errors, [
    { line: 2, error: "Invalid request body" },
    { line: 3, error: "Invalid request body" },
    { line: 5, error: "Invalid request body" },
    { line: 6, error: "All fields are required" },
    { line: 7, error: "Email must be a valid address" },
    { line: 8, error: "Role must be admin or viewer" },
    { line: 9, error: "Password must be at least 8 characters" },
    { line: 10, error: "Username or email already exists" },
    { line: 11, error: "Username or email already exists" },
  ]);
  assertEquals(await usernames(svc), ["good1", "good3"]);
  assertEquals(
    { total: done.total, created: done.created, failed: done.failed },
    { total: 11, created: 2, failed: 9 },
  );
});

Deno.test("a name given twice in one file is refused the second time, also batches apart", async () => {
  const svc = await service();
  // The last line in the batch after the first's.
  const count = IMPORT_BATCH + 500;
  const lines = Array.from(
    { length: count },
    (_, i) => line(`user${i}`, { password: null, passwordHash: HASH }),
  );
  lines.push(line("user3", { email: "again@example.com" }));
  const { done, errors } = await runImport(svc, lines.join("\n"), {
    query: "?onConflict=skip",
  });
  assertEquals(errors, [
    { line: count + 1, error: "Username or email already exists" },
  ]);
  assertEquals(done.created, count);
  assertEquals(done.skipped, 0);
});

Deno.test("CSV: a header names the fields, a quoted field may hold a newline, a row short of a column is refused", async () => {
  const svc = await service();
  const csv = [
    "username,name,email,role,password",
    'csv1,"Smith, Jane",csv1@example.com,admin,csv1-password',
    'csv2,Two Lines,csv2@example.com,,"csv2 pass',
    'word"',
    "csv3,Short Row,csv3@example.com",
    'csv4,"Quote ""inside""",csv4@example.com,viewer,csv4-password',
    'csv5,"never closed,csv5@example.com,viewer,csv5-password',
  ].join("\r\n");
  const { errors } = await runImport(svc, csv, {
    type: "text/csv; charset=utf-8",
  });
  assertEquals(errors, [
    { line: 5, error: "Invalid request body" },
    { line: 7, error: "Invalid request body" },
  ]);
  const rows = await svc.sql<
    { username: string; name: string; role: string }[]
  >`
    select username, name, role from users where username like 'csv%'
    order by username`;
  assertEquals([...rows], [
    { username: "csv1", name: "Smith, Jane", role: "admin" },
    { username: "csv2", name: "Two Lines", role: "viewer" },
    { username: "csv4", name: 'Quote "inside"', role: "viewer" },
  ]);
  const login = await svc.client().login("csv2", "csv2 pass\nword");
  assert(login.ok, "the quoted newline is part of the password");
});

Deno.test("a CSV record over 64 KiB, its quoted lines included, is refused at its first line and the rows after it are read", async () => {
  const svc = await service();
  // 2,000 lines of 40 bytes in one quoted name: each line short, the record not.
  const long = Array.from({ length: 2000 }, () => "x".repeat(40)).join("\n");
  const csv = [
    "username,name,email,password",
    "big1,First,big1@example.com,big1-password",
    `big2,"${long}",big2@example.com,big2-password`,
    "big3,Third,big3@example.com,big3-password",
  ].join("\n");
  const { errors } = await runImport(svc, csv, { type: "text/csv" });
  assertEquals(errors, [{ line: 3, error: "Invalid request body" }]);
  assertEquals(await usernames(svc), ["big1", "big3"]);
});

Deno.test("a CSV line over 64 KiB is refused at its own line and the next row is read", async () => {
  const svc = await service();
  const csv = [
    "username,name,email,password",
    `wide1,${"w".repeat(70_000)},wide1@example.com,wide1-password`,
    "wide2,Second,wide2@example.com,wide2-password",
  ].join("\n");
  const { errors } = await runImport(svc, csv, { type: "text/csv" });
  assertEquals(errors, [{ line: 2, error: "Invalid request body" }]);
  assertEquals(await usernames(svc), ["wide2"]);
});

Deno.test("CSV without an email column: every row is `All fields are required`", async () => {
  const svc = await service();
  const { errors } = await runImport(
    svc,
    "username,name,password\nnomail,No Mail,nomail-password\n",
    { type: "text/csv" },
  );
  assertEquals(errors, [{ line: 2, error: "All fields are required" }]);
});

Deno.test("a body that is neither NDJSON nor CSV answers 415", async () => {
  const svc = await service();
  for (const type of ["application/json", "text/plain", ""]) {
    const res = await postImport(svc, line("x"), { type });
    assertEquals(res.status, 415);
    assertEquals(res.body, {
      error: "Import must be application/x-ndjson or text/csv",
    });
  }
});

Deno.test("a body declared over 1 GiB is refused 413 before it is read", async () => {
  const svc = await service();
  const port = new URL(svc.baseUrl).port;
  const res = await rawHttp(Number(port), [
    "POST /api/imports HTTP/1.1\r\n" +
    `Host: 127.0.0.1:${port}\r\n` +
    `Cookie: ${await loginCookie(svc)}\r\n` +
    "Content-Type: application/x-ndjson\r\n" +
    "Content-Length: 2147483648\r\n\r\n",
    line("declared") + "\n",
  ]);
  assertEquals(res.status, 413);
  assertEquals(JSON.parse(res.body), { error: "Request body too large" });
});

Deno.test("a streamed body past 1 GiB is refused 413 and leaves nothing behind", async () => {
  const svc = await service();
  // One endless line: held never whole (64 KiB at most), counted to the limit.
  const chunk = new TextEncoder().encode("x".repeat(1024 * 1024));
  let sent = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent > 1024 ** 3 + chunk.length) return controller.close();
      sent += chunk.length;
      controller.enqueue(chunk);
    },
  });
  // Over the port, past the harness's recorder, which would read it whole.
  const res = await fetch(`${svc.baseUrl}/api/imports`, {
    method: "POST",
    headers: {
      "content-type": "application/x-ndjson",
      cookie: await loginCookie(svc),
    },
    body,
  });
  assertEquals(res.status, 413);
  assertEquals(await res.json(), { error: "Request body too large" });
  const [{ jobs, records }] = await svc.sql<
    { jobs: number; records: number }[]
  >`select (select count(*)::int from import_jobs where status = 'receiving') as jobs,
      (select count(*)::int from import_records) as records`;
  assertEquals({ jobs, records }, { jobs: 0, records: 0 });
});

Deno.test("deno task import sends a file in pieces whose HTTP chunks are 64 KiB with their framing, the bytes unchanged", async () => {
  const bytes = new Uint8Array(200_000).map((_, i) => i % 251);
  const pieces: Uint8Array[] = [];
  await ReadableStream.from([bytes.subarray(0, 7), bytes.subarray(7)])
    .pipeThrough(uploadChunks())
    .pipeTo(new WritableStream({ write: (p) => void pieces.push(p) }));
  // A chunk of 65,528 bytes is framed as `fff8\r\n` ... `\r\n`: 65,536.
  assertEquals(pieces.map((p) => p.length), [65_528, 65_528, 65_528, 3_416]);
  const joined = new Uint8Array(bytes.length);
  let at = 0;
  for (const p of pieces) joined.set(p, (at += p.length) - p.length);
  assertEquals(joined, bytes);
});
