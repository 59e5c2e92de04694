/**
 * Requests timed under a database fault, and what the contract lets each
 * answer: in time, with the endpoint's own 500 message or a success.
 */
import { assert, assertEquals } from "./assert.ts";
import { newUser, type TestService } from "./service.ts";

/** Every request answers within 5 seconds, database down or not: REQUEST_TIMEOUT_MS (4.5 s) and the answer itself (docs/operations.md). */
export const ANSWER_WITHIN_MS = 5_000;

export interface Timed {
  what: string;
  status: number;
  body: unknown;
  ms: number;
}

/** Each endpoint's own message for a failure it did not foresee. */
const FAILURE: Record<string, string> = {
  list: "Failed to list users",
  create: "Failed to create user",
  login: "Login failed",
  logout: "Internal server error",
  me: "Internal server error",
};

/** One request, timed, and abandoned (failing the test) if it takes far too long. */
export async function timed(
  svc: TestService,
  what: string,
  path: string,
  init: RequestInit = {},
): Promise<Timed> {
  const started = performance.now();
  const res = await svc.fetch(path, {
    ...init,
    signal: AbortSignal.timeout(ANSWER_WITHIN_MS * 3),
  });
  const body = await res.json();
  return { what, status: res.status, body, ms: performance.now() - started };
}

export function assertContractAnswer(a: Timed) {
  assert(a.ms < ANSWER_WITHIN_MS, `${a.what} took ${Math.round(a.ms)} ms`);
  if (a.what === "health") {
    assertEquals(a.body, { status: a.status === 200 ? "ok" : "unavailable" });
    assert([200, 503].includes(a.status), `health ${a.status}`);
  } else if (a.status >= 500) {
    assertEquals({ status: a.status, body: a.body }, {
      status: 500,
      body: { error: FAILURE[a.what] },
    }, a.what);
  } else {
    assert([200, 201].includes(a.status), `${a.what} ${a.status}`);
  }
}

/** A viewer's creation as the holder of `cookie`, timed. */
export const timedCreate = (svc: TestService, cookie: string, name: string) =>
  timed(svc, "create", "/api/users", {
    method: "POST",
    headers: { cookie },
    body: JSON.stringify(newUser(name)),
  });

/** Columns of `users` that are empty unless something happened (a disable, a login). */
const EMPTY_UNTIL_USED = new Set([
  "disabled_at",
  "disabled_reason",
  "disabled_until",
  "last_login_at",
  "modified_at",
  "external_id",
  "import_id",
  // Optional profile fields (src/accounts/fields.ts).
  "department",
]);

/** Every row is whole (a create is there completely or not at all), and every 201 is there. */
export async function assertWholeRows(svc: TestService, created: Set<string>) {
  const rows = await svc.sql<Record<string, unknown>[]>`select * from users`;
  for (const row of rows) {
    for (const [k, v] of Object.entries(row)) {
      if (EMPTY_UNTIL_USED.has(k)) continue;
      assert(v !== null && v !== "", `${row.username}: ${k} is empty`);
    }
    assert(/^\$2[aby]\$\d\d\$/.test(String(row.password_hash)));
  }
  const names = new Set(rows.map((r) => r.username));
  for (const name of created) {
    assert(names.has(name), `${name} got 201 but is gone`);
  }
}

/**
 * Resolves once the service has no store call and no bcrypt job in flight
 * (its /metrics gauges; start it with METRICS_PORT): every write it began,
 * even one whose client was answered 500, has committed or rolled back, so
 * a write's absence is final from then on.
 */
export async function settled(svc: TestService) {
  const until = performance.now() + 30_000;
  while (true) {
    const text = await (await fetch(svc.metricsUrl!)).text();
    if (
      /^useradmin_db_operations_in_flight 0$/m.test(text) &&
      /^useradmin_bcrypt_jobs_in_flight 0$/m.test(text)
    ) return;
    if (performance.now() > until) {
      throw new Error("the service's work still in flight after 30 s");
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}
