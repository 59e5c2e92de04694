/**
 * What a TOTP code adds to a login, with bcrypt's work made small: the
 * service in-process (tests/support/service.ts) at bcrypt cost 4, one
 * login with a code and one without in turns, `--pairs` times; prints the
 * median of each and of their differences (ms). bench.ts --mfa measures
 * the same beside bcrypt at the service's cost, where bcrypt's spread
 * hides a millisecond.
 *
 *   deno run -A tests/bench/mfa_measure.ts [--pairs 400]
 *
 * PostgreSQL: DATABASE_URL (else the embedded database).
 */
import { Secret, TOTP } from "otpauth";
import { startService } from "../support/service.ts";

const i = Deno.args.indexOf("--pairs");
const pairs = i >= 0 ? Number(Deno.args[i + 1]) : 400;

await using svc = await startService({}, { bcryptCost: 4, inProcess: true });
const plain = await svc.userClient("admin");
const factored = await svc.userClient("admin");
const begun = await factored.client.post("/api/auth/mfa/totp");
if (!begun.ok) throw new Error("enrol");
const totp = new TOTP({
  secret: Secret.fromBase32(begun.data.secret),
  algorithm: "SHA1",
  digits: 6,
  period: 30,
});
await factored.client.post("/api/auth/mfa/totp/confirm", {
  body: { code: totp.generate() },
});
// A code is accepted once per step: the step is made unused again after
// each write, so every login checks and writes as a first use does.
await svc.sql`
  create function bench_step_unused() returns trigger
  language plpgsql as $$ begin new.last_step := 0; return new; end $$`;
await svc.sql`
  create trigger bench_step_unused before update of last_step on mfa_totp
  for each row execute function bench_step_unused()`;
await svc.sql`update mfa_totp set last_step = 0`;

const login = async (body: Record<string, string>) => {
  const start = performance.now();
  const res = await svc.fetch("/api/auth/login", {
    method: "POST",
    body: JSON.stringify(body),
  });
  await res.body?.cancel();
  if (res.status !== 200) {
    throw new Error(`login: ${res.status} ${JSON.stringify(body)}`);
  }
  return performance.now() - start;
};
const withCode = () =>
  login({
    username: factored.account.username,
    password: factored.password,
    code: totp.generate(),
  });
const without = () =>
  login({ username: plain.account.username, password: plain.password });

for (let n = 0; n < 50; n++) await withCode(), await without();
const a: number[] = [];
const b: number[] = [];
for (let n = 0; n < pairs; n++) {
  // The order swaps each pair.
  if (n % 2) a.push(await withCode()), b.push(await without());
  else b.push(await without()), a.push(await withCode());
}
const median = (xs: number[]) => {
  const s = [...xs].sort((x, y) => x - y);
  return (s[(s.length - 1) >> 1] + s[s.length >> 1]) / 2;
};
const diffs = a.map((x, k) => x - b[k]);
console.log(
  `login at bcrypt cost 4, ${pairs} pairs: with a code ${
    median(a).toFixed(2)
  } ms, without ${median(b).toFixed(2)} ms; median difference ${
    median(diffs).toFixed(2)
  } ms (target ≤ 1 ms)`,
);
