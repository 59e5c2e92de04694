/**
 * Nothing a client sends holds the service: a seeded fuzz of the SCIM and
 * import surfaces (filters, PATCH bodies, CSV and NDJSON records, password
 * hashes) against the service run as an operator runs it, with `/health`
 * probed beside every case. Each case is answered without a 5xx, the
 * process stays up, `/health` answers within 250 ms all along, and the
 * process's peak resident memory during the case stays within 256 MiB of
 * its level before it, and within 128 MiB once the case is answered.
 *
 * Seeded: the seed is printed, and FUZZ_SEED=<seed> runs the same cases
 * again. Known attacks stand first among each property's cases.
 */
import fc from "fast-check";
import { assert, assertEquals } from "../support/assert.ts";
import { type Instance, sleep, spawnService } from "../support/process.ts";
import { probeHealthWithin } from "../support/health.ts";
import { loginCookie, testDatabase } from "../support/service.ts";
import { PATCH_SCHEMA, SCIM_MEDIA_TYPE, USER_SCHEMA } from "../scim_support.ts";

const SEED = Number(Deno.env.get("FUZZ_SEED") ?? Date.now() % 2 ** 31);
console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} repeats this run)`);

const MiB = 1024 * 1024;
const PEAK_GROWTH_MAX = 256 * MiB;
/** What may stay after a case: the heap V8 grew and has not handed back yet. */
const KEPT_GROWTH_MAX = 128 * MiB;
/** Longer than any answer may take: a case past it has held the service. */
const CASE_TIMEOUT_MS = 60_000;

interface Running {
  instance: Instance;
  cookie: string;
  scimToken: string;
}

let running: Promise<Running> | undefined;
let database: AsyncDisposable | undefined;

/** One service for the file, as main.ts starts it, on a database of its own. */
function service(): Promise<Running> {
  return running ??= (async () => {
    const db = await testDatabase("first-admin");
    database = db;
    const instance = await spawnService({ ...db.env, LOG_LEVEL: "error" });
    const call = (path: string, init?: RequestInit) =>
      fetch(instance.baseUrl + path, init);
    const cookie = await loginCookie({ fetch: call });
    const res = await call("/api/scim/connections", {
      method: "POST",
      headers: { cookie, "content-type": "application/json" },
      body: JSON.stringify({ name: "Fuzz" }),
    });
    assertEquals(res.status, 201);
    const { token } = await res.json();
    return { instance, cookie, scimToken: token };
  })();
}

Deno.test.afterAll(async () => {
  if (running) await (await running).instance[Symbol.asyncDispose]();
  await database?.[Symbol.asyncDispose]();
});

/** A field of /proc/<pid>/status in bytes (VmRSS, VmHWM). */
async function procBytes(pid: number, field: string): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = status.match(new RegExp(`^${field}:\\s+(\\d+) kB`, "m"));
  assert(kib, `no ${field} in /proc/${pid}/status`);
  return Number(kib[1]) * 1024;
}

/**
 * Runs one case while /health is asked every 10 ms; answers the case's
 * status after checking the guarantees. The peak is the kernel's own high
 * water mark, reset before the case (writing 5 to clear_refs).
 */
async function oneCase(
  label: string,
  send: (svc: Running) => Promise<number>,
): Promise<number> {
  const svc = await service();
  const { pid, baseUrl } = svc.instance;
  const before = await procBytes(pid, "VmRSS");
  await Deno.writeTextFile(`/proc/${pid}/clear_refs`, "5");
  const what = `${label} (FUZZ_SEED=${SEED})`;
  const probed = await probeHealthWithin(baseUrl, what, () => send(svc));
  const status = probed.result;
  const peak = await procBytes(pid, "VmHWM");
  const after = await procBytes(pid, "VmRSS");
  assert(status < 500, `${what}: answered ${status}`);
  assert(
    peak - before <= PEAK_GROWTH_MAX,
    `${what}: memory rose from ${before / MiB | 0} MiB to ${
      peak / MiB | 0
    } MiB`,
  );
  assert(
    after - before <= KEPT_GROWTH_MAX,
    `${what}: memory stayed at ${after / MiB | 0} MiB from ${
      before / MiB | 0
    } MiB`,
  );
  return status;
}

/** A request to the service with a deadline; answers its status, body read. */
async function send(
  svc: Running,
  path: string,
  init: RequestInit & { headers: Record<string, string> },
): Promise<number> {
  const res = await fetch(svc.instance.baseUrl + path, {
    ...init,
    signal: AbortSignal.timeout(CASE_TIMEOUT_MS),
  });
  await res.arrayBuffer();
  return res.status;
}

const scim = (svc: Running, method: string, path: string, body?: unknown) =>
  send(svc, `/scim/v2${path}`, {
    method,
    headers: {
      authorization: `Bearer ${svc.scimToken}`,
      "content-type": SCIM_MEDIA_TYPE,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

// SCIM filters: the grammar with every attribute, operator and value kind,
// nested, and the shapes that once held the service.

const ATTRIBUTES = [
  "userName",
  "emails.value",
  "emails.type",
  "externalId",
  "active",
  "displayName",
  "name.formatted",
  "meta.created",
  "meta.lastModified",
  "id",
  "nickName",
  "title",
];
const OPERATORS = ["eq", "ne", "co", "sw", "ew", "gt", "ge", "lt", "le"];
const quoted = (text: string) =>
  `"${text.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
const dates = fc.oneof(
  fc.integer({ min: -20_000, max: 20_000 }).map((y) =>
    `"${y}-01-02T03:04:05Z"`
  ),
  fc.date({ noInvalidDate: true }).map((d) => `"${d.toISOString()}"`),
);
const filterValue = fc.oneof(
  fc.string({ maxLength: 40 }).map(quoted),
  fc.string({ maxLength: 10 }).map((s) => `"${s}`),
  fc.constantFrom("true", "false", "null", "42", "-1.5e300"),
  dates,
);
const comparison = fc.oneof(
  fc.tuple(
    fc.constantFrom(...ATTRIBUTES),
    fc.constantFrom(...OPERATORS),
    filterValue,
  ).map(([a, o, v]) => `${a} ${o} ${v}`),
  fc.constantFrom(...ATTRIBUTES).map((a) => `${a} pr`),
  fc.tuple(fc.constantFrom("work", "home", '"'), filterValue).map(([t, v]) =>
    `emails[type eq "${t}" and value co ${v}]`
  ),
);
const { filter: filterText } = fc.letrec((tie) => ({
  filter: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    comparison,
    fc.tuple(tie("filter"), fc.constantFrom("and", "or"), tie("filter"))
      .map(([a, op, b]) => `${a} ${op} ${b}`),
    tie("filter").map((f) => `not (${f})`),
    tie("filter").map((f) => `(${f})`),
  ),
}));
const hostileFilters = [
  `userName eq "${"\n".repeat(30)}`,
  `userName eq "${"\n".repeat(40)}x`,
  `${"not (".repeat(3_000)}userName eq "a"${")".repeat(3_000)}`,
  Array.from({ length: 10_000 }, (_, i) => `userName eq "u${i}"`).join(
    " or ",
  ),
  `meta.created gt "0000-01-01T00:00:00Z"`,
  `meta.created lt "10000-01-01T00:00:00Z"`,
  `userName eq "${"x".repeat(8_000)}"`,
  `userName eq "a\u0000b"`,
];

Deno.test("fuzz: no SCIM filter holds the service, answers 5xx or costs memory", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        { weight: 4, arbitrary: filterText },
        { weight: 1, arbitrary: fc.constantFrom(...hostileFilters) },
      ),
      async (filter) => {
        const status = await oneCase(
          `filter ${JSON.stringify(filter.slice(0, 80))}`,
          // A long one in a body, as a request line has its own limit.
          (svc) =>
            filter.length > 2_000
              ? scim(svc, "POST", "/Users/.search", {
                schemas: [
                  "urn:ietf:params:scim:api:messages:2.0:SearchRequest",
                ],
                filter,
              })
              : scim(svc, "GET", `/Users?filter=${encodeURIComponent(filter)}`),
        );
        assert([200, 400].includes(status), `${status} for ${filter}`);
      },
    ),
    {
      numRuns: 60,
      seed: SEED,
      examples: hostileFilters.map((f) => [f]),
    },
  );
});

// SCIM PATCH bodies: operations of every name, path and value, many of
// them, over long multi-valued attributes.

const emailList = (n: number, from = 0) =>
  Array.from({ length: n }, (_, i) => ({
    value: `e${from + i}@example.com`,
    type: "work",
  }));
const patchPath = fc.constantFrom(
  undefined,
  "displayName",
  "name.givenName",
  "name",
  "emails",
  'emails[type eq "work"].value',
  'emails[value co "e1"]',
  'emails[value eq "e3@example.com"].type',
  "active",
  "externalId",
  "title",
  "nickName",
  "members",
  'emails[value eq "',
);
const patchValue = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.integer({ min: 0, max: 300 }).map((n) => emailList(n)),
  fc.string({ maxLength: 300 }),
  fc.constantFrom("True", "False", true, false),
);
const operation = fc.record({
  op: fc.constantFrom("add", "replace", "remove", "Add", "REPLACE", "move"),
  path: patchPath,
  value: patchValue,
}, { requiredKeys: ["op"] });
const hostilePatches = [
  // 4,000 e-mails, then 800 replaces each filtering the whole list.
  [
    { op: "add", path: "emails", value: emailList(4_000) },
    ...Array.from({ length: 800 }, (_, i) => ({
      op: "replace",
      path: `emails[value eq "e${i}@example.com"].type`,
      value: "home",
    })),
  ],
  Array.from({ length: 5_000 }, (_, i) => ({
    op: "replace",
    path: "displayName",
    value: `Name ${i}`,
  })),
  [{ op: "replace", path: "externalId", value: "x".repeat(8_000) }],
];

let patched = 0;
Deno.test("fuzz: no SCIM PATCH body holds the service, answers 5xx or costs memory", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        {
          weight: 5,
          arbitrary: fc.array(operation, { maxLength: 40 }) as fc.Arbitrary<
            unknown[]
          >,
        },
        { weight: 1, arbitrary: fc.constantFrom<unknown[]>(...hostilePatches) },
      ),
      async (operations) => {
        const svc = await service();
        const res = await fetch(`${svc.instance.baseUrl}/scim/v2/Users`, {
          method: "POST",
          headers: {
            authorization: `Bearer ${svc.scimToken}`,
            "content-type": SCIM_MEDIA_TYPE,
          },
          body: JSON.stringify({
            schemas: [USER_SCHEMA],
            userName: `patched${patched++}@example.com`,
            displayName: "Patched",
          }),
        });
        assertEquals(res.status, 201);
        const { id } = await res.json();
        const status = await oneCase(
          `PATCH of ${operations.length} operations`,
          (svc) =>
            scim(svc, "PATCH", `/Users/${id}`, {
              schemas: [PATCH_SCHEMA],
              Operations: operations,
            }),
        );
        assert([200, 400].includes(status), `${status}`);
      },
    ),
    {
      numRuns: 40,
      seed: SEED,
      examples: hostilePatches.map((p) => [p] as [unknown[]]),
    },
  );
});

// Import bodies: CSV and NDJSON records of any text, quotes left open,
// lines too long, and password hashes of every format and work factor.

/**
 * Uploads an import body; one the service took (202) is cancelled as soon
 * as it is answered, so that no case's import runs on beside the next.
 */
async function upload(svc: Running, body: string, type: string) {
  const res = await fetch(`${svc.instance.baseUrl}/api/imports`, {
    method: "POST",
    headers: { cookie: svc.cookie, "content-type": type },
    body,
    signal: AbortSignal.timeout(CASE_TIMEOUT_MS),
  });
  const answer = await res.json();
  if (res.status === 202) {
    const cancel = await fetch(
      `${svc.instance.baseUrl}/api/imports/${answer.id}/cancel`,
      { method: "POST", headers: { cookie: svc.cookie } },
    );
    await cancel.body?.cancel();
  }
  return res.status;
}

/** About `bytes` of CSV lines after a header and one stray quote. */
function strayQuote(bytes: number): string {
  const line = `someone,Some One ${"x".repeat(600)},someone@example.com,\n`;
  return "username,name,email,password\n" + 'quoted,"Stray,x@example.com,\n' +
    line.repeat(Math.ceil(bytes / line.length));
}
const csvField = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.string({ maxLength: 30 }).map((s) => `"${s.replaceAll('"', '""')}"`),
  fc.constantFrom('"', '"unclosed', 'a"b', '""', "\r", "\n"),
);
const csvBody = fc.array(fc.array(csvField, { minLength: 1, maxLength: 6 }), {
  maxLength: 50,
}).map((rows) =>
  "username,name,email,password\n" +
  rows.map((r) => r.join(",")).join("\n")
);
const hostileCsv = [strayQuote(12 * MiB)];

Deno.test("fuzz: no CSV upload holds the service, answers 5xx or costs memory", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        { weight: 6, arbitrary: csvBody },
        { weight: 1, arbitrary: fc.constantFrom(...hostileCsv) },
      ),
      async (body) => {
        const status = await oneCase(
          `CSV of ${body.length} characters`,
          (svc) => upload(svc, body, "text/csv"),
        );
        assert([202, 400, 413].includes(status), `${status}`);
      },
    ),
    { numRuns: 25, seed: SEED, examples: hostileCsv.map((b) => [b]) },
  );
});

const ndjsonLine = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v)),
  fc.string({ maxLength: 100 }),
  fc.integer({ min: 1, max: 200_000 }).map((n) =>
    "[".repeat(n) + "]".repeat(n)
  ),
);
const hostileNdjson = [
  JSON.stringify({ username: "long", name: "x".repeat(8 * MiB) }) + "\n",
  "[".repeat(2 * MiB) + "\n",
];

Deno.test("fuzz: no NDJSON upload holds the service, answers 5xx or costs memory", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        {
          weight: 6,
          arbitrary: fc.array(ndjsonLine, { maxLength: 30 }).map((lines) =>
            lines.join("\n") + "\n"
          ),
        },
        { weight: 1, arbitrary: fc.constantFrom(...hostileNdjson) },
      ),
      async (body) => {
        const status = await oneCase(
          `NDJSON of ${body.length} characters`,
          (svc) => upload(svc, body, "application/x-ndjson"),
        );
        assert([202, 400, 413].includes(status), `${status}`);
      },
    ),
    { numRuns: 25, seed: SEED, examples: hostileNdjson.map((b) => [b]) },
  );
});

const b64 = (n: number) => btoa("s".repeat(n)).replaceAll("=", "");
const hashText = fc.oneof(
  fc.tuple(
    fc.integer({ min: 1, max: 20_000_000 }),
    fc.integer({ min: 1, max: 1024 }),
  ).map(([i, l]) => `$pbkdf2-sha256$i=${i},l=${l}$${b64(16)}$${b64(l)}`),
  fc.integer({ min: 1, max: 20_000_000 }).map((i) =>
    `pbkdf2_sha256$${i}$salt$${btoa("k".repeat(32))}`
  ),
  fc.integer({ min: 0, max: 99 }).map((cost) =>
    `$2b$${String(cost).padStart(2, "0")}$${"a".repeat(53)}`
  ),
  fc.tuple(
    fc.integer({ min: 0, max: 2 ** 24 }),
    fc.integer({ min: 0, max: 100 }),
    fc.integer({ min: 0, max: 300 }),
  ).map(([m, t, p]) =>
    `$argon2id$v=19$m=${m},t=${t},p=${p}$${b64(16)}$${b64(32)}`
  ),
  fc.tuple(
    fc.integer({ min: 0, max: 40 }),
    fc.integer({ min: 0, max: 64 }),
    fc.integer({ min: 0, max: 64 }),
  ).map(([ln, r, p]) => `$scrypt$ln=${ln},r=${r},p=${p}$${b64(16)}$${b64(32)}`),
  fc.string({ maxLength: 200 }),
);
const hostileHashes = [
  `$pbkdf2-sha256$i=2000000,l=128$${b64(16)}$${b64(128)}`,
  `$pbkdf2-sha256$i=2000000,l=1024$${b64(16)}$${b64(1024)}`,
];

/** The import's status once it has ended. */
async function ended(svc: Running, id: number) {
  for (const until = Date.now() + CASE_TIMEOUT_MS; Date.now() < until;) {
    const res = await fetch(`${svc.instance.baseUrl}/api/imports/${id}`, {
      headers: { cookie: svc.cookie },
    });
    const body = await res.json();
    if (!["queued", "running"].includes(body.status)) return body;
    await sleep(50);
  }
  throw new Error(`import ${id} did not end`);
}

let hashed = 0;
Deno.test("fuzz: no imported password hash makes a login hold the service or answer 5xx", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(
        { weight: 5, arbitrary: hashText },
        { weight: 1, arbitrary: fc.constantFrom(...hostileHashes) },
      ),
      async (passwordHash) => {
        const svc = await service();
        const username = `hashed${hashed++}`;
        const res = await fetch(`${svc.instance.baseUrl}/api/imports`, {
          method: "POST",
          headers: {
            cookie: svc.cookie,
            "content-type": "application/x-ndjson",
          },
          body: JSON.stringify({
            username,
            name: username,
            email: `${username}@example.com`,
            passwordHash,
          }) + "\n",
        });
        assertEquals(res.status, 202);
        const job = await ended(svc, (await res.json()).id);
        assertEquals(job.status, "finished");
        const status = await oneCase(
          `login with the hash ${passwordHash.slice(0, 60)}`,
          (svc) =>
            send(svc, "/api/auth/login", {
              method: "POST",
              headers: { "content-type": "application/json" },
              body: JSON.stringify({ username, password: "not-the-password" }),
            }),
        );
        assertEquals(status, 401, passwordHash);
      },
    ),
    { numRuns: 30, seed: SEED, examples: hostileHashes.map((h) => [h]) },
  );
});
