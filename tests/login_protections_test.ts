/**
 * Protections that cannot be turned against users: a refused attempt counts
 * nowhere (so one address cannot lock an account for every address), a
 * known device keeps its own count past the ceiling, throttled attempts
 * are recorded once per name and window whatever the address, and an IPv6
 * client counts by its /64.
 */
import { auditPages, type AuditRecord } from "@user-admin/client";
import { rotateDeviceKey } from "../src/cli/rotate-device-key.ts";
import { newDeviceKey } from "../src/auth/tokens.ts";
import { NO_DEADLINE } from "../src/db/write.ts";
import { assert, assertEquals } from "./support/assert.ts";
import { runTask } from "./support/process.ts";
import {
  ADMIN,
  type ConfiguredApp,
  ON_EMBEDDED,
  sharedService,
} from "./support/service.ts";

// Bursts of logins on one counter row on a busy machine can outlast the
// default statement timeout; deadlines are faults_test's subject. What is
// counted is the subject, not bcrypt's work: its cheapest cost.
const service = sharedService({ REQUEST_TIMEOUT_MS: "60000" }, {
  bcryptCost: 4,
});

const TOO_MANY = { error: "Too many login attempts" };

/** A login from a client address (as a trusted proxy reports it), with a known-device cookie if given. */
async function login(
  api: Pick<ConfiguredApp, "fetch">,
  username: string,
  password: string,
  from: string,
  did?: string,
) {
  const res = await api.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify({ username, password }),
    headers: {
      "x-forwarded-for": from,
      ...(did ? { cookie: `did=${did}` } : {}),
    },
  });
  const didSet = res.headers.getSetCookie().find((c) => c.startsWith("did="));
  return {
    status: res.status,
    body: await res.json(),
    did: didSet && /^did=([^;]*)/.exec(didSet)![1],
  };
}

const statusOf = async (p: ReturnType<typeof login>) => (await p).status;

/** Every record of an action (`login.throttled` unless named), newest first, read through the API. */
async function throttledRecords(
  admin: Awaited<ReturnType<typeof service>>["admin"],
  action: "login.throttled" | "login.failed" = "login.throttled",
) {
  const all: AuditRecord[] = [];
  for await (const page of auditPages(admin, { limit: 1000, action })) {
    all.push(...page);
  }
  return all;
}

Deno.test("attempts answered 429 count nowhere: 51 wrong passwords from one address leave every other address able to log in", async () => {
  const svc = await service();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "5", TRUST_PROXY: "true" });
  const statuses: number[] = [];
  for (let i = 0; i < 51; i++) {
    statuses.push(
      await statusOf(login(api, "admin", `wrong-${i}-pass`, "192.0.2.2")),
    );
  }
  assertEquals(statuses.slice(0, 5), [401, 401, 401, 401, 401]);
  assert(statuses.slice(5).every((s) => s === 429), String(statuses));
  // Five failed checks in all: nowhere near the ceiling of 50.
  const other = await login(api, "admin", ADMIN.password, "192.0.2.3");
  assertEquals(other.status, 200);
  // The first address stays locked for its window.
  const first = await login(api, "admin", ADMIN.password, "192.0.2.2");
  assertEquals([first.status, first.body], [429, TOO_MANY]);
});

Deno.test("a known device logs in while the ceiling is tripped from ten addresses; its own failures lock only itself; a did of another name counts for nothing", async () => {
  const svc = await service();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "5", TRUST_PROXY: "true" });
  const { account, password } = await svc.userClient("viewer");
  // Two browsers of the admin, and one of another user, become known.
  const laptop = (await login(api, "admin", ADMIN.password, "198.51.100.1"))
    .did!;
  const phone = (await login(api, "admin", ADMIN.password, "198.51.100.2"))
    .did!;
  const others = (await login(api, account.username, password, "198.51.100.3"))
    .did!;
  assert(laptop && phone && others && laptop !== phone);

  // Distributed guessing trips the ceiling (10 x 5 failed checks).
  for (let a = 1; a <= 10; a++) {
    for (let i = 0; i < 5; i++) {
      const res = await login(api, "admin", `guess-${a}-${i}`, `10.9.0.${a}`);
      assertEquals(res.status, 401, `address ${a}`);
    }
  }
  assertEquals(
    await statusOf(login(api, "admin", ADMIN.password, "203.0.113.9")),
    429,
    "the ceiling holds for an unknown browser",
  );
  assertEquals(
    await statusOf(
      login(api, "admin", ADMIN.password, "203.0.113.9", others),
    ),
    429,
    "another user's did does not count for admin",
  );
  // The owner's known browser, from any address: in.
  const owner = await login(
    api,
    "admin",
    ADMIN.password,
    "203.0.113.9",
    laptop,
  );
  assertEquals(owner.status, 200);
  assert(owner.did, "a success from a device renews its cookie");

  // The laptop's own failures lock the laptop alone.
  for (let i = 0; i < 5; i++) {
    assertEquals(
      await statusOf(
        login(api, "admin", `typo-${i}-pass`, "203.0.113.9", laptop),
      ),
      401,
    );
  }
  const lockedLaptop = await login(
    api,
    "admin",
    ADMIN.password,
    "203.0.113.9",
    laptop,
  );
  assertEquals([lockedLaptop.status, lockedLaptop.body], [429, TOO_MANY]);
  assertEquals(
    await statusOf(login(api, "admin", ADMIN.password, "203.0.113.9", phone)),
    200,
    "the phone, from the same address, is not locked",
  );
  // The other user's device logs in as that user.
  assertEquals(
    await statusOf(
      login(api, account.username, password, "203.0.113.9", others),
    ),
    200,
  );

  // A password reset clears every count of the name, devices included.
  const reset = await svc.admin.PATCH("/api/users/{id}", {
    params: { path: { id: svc.adminAccount.id } },
    body: { password: "a-fresh-password" },
  });
  assertEquals(reset.response.status, 200);
  assertEquals(
    await statusOf(
      login(api, "admin", "a-fresh-password", "203.0.113.9", laptop),
    ),
    200,
  );
});

Deno.test("rotating the device key: cookies signed with the old key stop counting on the running service", async () => {
  const svc = await service();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "2", TRUST_PROXY: "true" });
  const did = (await login(api, "admin", ADMIN.password, "198.51.100.7")).did!;
  for (let a = 1; a <= 10; a++) {
    for (let i = 0; i < 2; i++) {
      await login(api, "admin", `guess-${a}-${i}`, `10.8.0.${a}`);
    }
  }
  assertEquals(
    await statusOf(login(api, "admin", ADMIN.password, "203.0.113.1", did)),
    200,
  );
  if (ON_EMBEDDED) {
    // PGlite has one owner, the service: the task's own write, in-process.
    await svc.store.deviceKey.replace(newDeviceKey(), NO_DEADLINE);
  } else {
    const task = await runTask(rotateDeviceKey, [], {
      DATABASE_URL: svc.config.DATABASE_URL!,
    });
    assertEquals(task.code, 0, task.stderr);
  }
  // Every instance reads the key again within DEVICE_KEY_TTL_MS (5 s).
  let status = 200;
  for (let i = 0; i < 40 && status === 200; i++) {
    await new Promise((r) => setTimeout(r, 250));
    status = await statusOf(
      login(api, "admin", ADMIN.password, "203.0.113.1", did),
    );
  }
  assertEquals(status, 429, "the old cookie still counted 10 s on");
});

Deno.test("throttled attempts are recorded once per name and window, whatever the address, unknown names alike", async () => {
  const svc = await service();
  const settings = { LOGIN_MAX_FAILURES: "2", TRUST_PROXY: "true" };
  const api = svc.configured(settings);
  const before = (await throttledRecords(svc.admin)).length;
  const burst = async (
    name: string,
    from: string,
    n: number,
    app = api,
  ) => {
    const statuses = [];
    for (let i = 0; i < n; i++) {
      statuses.push(await statusOf(login(app, name, `wrong-${i}-pass`, from)));
    }
    return statuses;
  };
  assertEquals(await burst("admin", "192.0.2.10", 22), [
    401,
    401,
    ...Array(20).fill(429),
  ]);
  assertEquals((await throttledRecords(svc.admin)).length - before, 1);
  assertEquals(await burst("admin", "192.0.2.11", 7), [
    401,
    401,
    ...Array(5).fill(429),
  ]);
  assertEquals(await burst("nobody-here", "192.0.2.10", 12), [
    401,
    401,
    ...Array(10).fill(429),
  ]);
  const all = await throttledRecords(svc.admin);
  const records = all.slice(0, all.length - before); // newest first
  assertEquals(
    records.map((r) => [r.target?.username ?? "", r.clientAddress]).sort(),
    [["", "192.0.2.10"], ["admin", "192.0.2.10"]],
  );
  // A window of one second has ended on the same rows: a new window, whose
  // first 429 is recorded again, and only that one. Two seconds pass for
  // the rows' windows alone (both of their times move back together).
  const short = svc.configured({ ...settings, LOGIN_WINDOW_SECONDS: "1" });
  await svc.sql`
    update login_failures set
      window_started_at = window_started_at - interval '2 seconds',
      throttled_window = throttled_window - interval '2 seconds'`;
  assertEquals(await burst("admin", "192.0.2.10", 6, short), [
    401,
    401,
    429,
    429,
    429,
    429,
  ]);
  const after = await throttledRecords(svc.admin);
  assertEquals(after.length - before, 3);
});

Deno.test("past the ceiling, 429s for one name from a hundred forwarded addresses write one login.throttled record and, after the first, no counter row", async () => {
  const svc = await service();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "2", TRUST_PROXY: "true" });
  const before = (await throttledRecords(svc.admin)).length;
  // Distributed guessing trips the ceiling (10 x 2 failed checks).
  for (let a = 1; a <= 10; a++) {
    for (let i = 0; i < 2; i++) {
      const from = `198.51.100.${a}`;
      assertEquals(await statusOf(login(api, "admin", `w-${i}`, from)), 401);
    }
  }
  const [{ rows }] = await svc.sql<{ rows: number }[]>`
    select count(*)::int as rows from login_failures`;
  // Each refusal from an address of its own: rotated IPv4, IPv6 from other
  // /64s, and a client's own first hop before an appending proxy's.
  const rotated = Array.from({ length: 100 }, (_, i) =>
    [
      `203.0.113.${i}`,
      `2001:db8:${i.toString(16)}::1`,
      `192.0.2.${i}, 10.0.0.1`,
    ][i % 3]);
  for (const from of rotated) {
    const res = await login(api, "admin", ADMIN.password, from);
    assertEquals([from, res.status, res.body], [from, 429, TOO_MANY]);
  }
  const records = await throttledRecords(svc.admin);
  assertEquals(records.length - before, 1);
  assertEquals(records[0].clientAddress, "203.0.113.0");
  const [after] = await svc.sql<{ rows: number }[]>`
    select count(*)::int as rows from login_failures`;
  // The recorded refusal's transaction made its address's row; the other
  // 99 only read.
  assertEquals(after.rows, rows + 1, "later refusals write no counter row");
});

Deno.test("an IPv6 client counts by its /64: addresses rotated within one /64 share its limit; records keep the whole address", async () => {
  const svc = await service();
  const api = svc.configured({ LOGIN_MAX_FAILURES: "3", TRUST_PROXY: "true" });
  const failedBefore = (await throttledRecords(svc.admin, "login.failed"))
    .length;
  const throttledBefore = (await throttledRecords(svc.admin)).length;
  const rotating = [
    "2001:db8:5:6::1",
    "2001:db8:5:6:ffff:ffff:ffff:ffff",
    "2001:DB8:5:6:0:0:0:AB",
  ];
  for (const from of rotating) {
    assertEquals(await statusOf(login(api, "admin", "wrong-pass", from)), 401);
  }
  const locked = await login(api, "admin", ADMIN.password, "2001:db8:5:6:7::9");
  assertEquals([locked.status, locked.body], [429, TOO_MANY]);
  // The next /64, and IPv4, count on their own.
  assertEquals(
    await statusOf(login(api, "admin", ADMIN.password, "2001:db8:5:7::1")),
    200,
  );
  const failed = await throttledRecords(svc.admin, "login.failed");
  assertEquals(
    failed.slice(0, failed.length - failedBefore).map((r) => r.clientAddress)
      .reverse(),
    ["2001:db8:5:6::1", "2001:db8:5:6:ffff:ffff:ffff:ffff", "2001:db8:5:6::ab"],
  );
  const throttled = await throttledRecords(svc.admin);
  assertEquals(throttled.length - throttledBefore, 1);
  assertEquals(throttled[0].clientAddress, "2001:db8:5:6:7::9");
  const line = svc.logs.find((l) =>
    l.msg === "request" && l.ip === "2001:db8:5:6:7::9"
  );
  assertEquals(line?.status, 429, "the log names the whole address");
});
