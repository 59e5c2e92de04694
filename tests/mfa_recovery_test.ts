/**
 * The recovery task for a second factor: `deno task create-admin
 * --username NAME --reset-mfa` on the service's database, for when no
 * admin who could reset it can log in.
 */
import { createAdmin } from "../src/cli/create-admin.ts";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
import { runTask } from "./support/process.ts";
import { startService, testDatabase } from "./support/service.ts";
import { userWithTotp } from "./mfa_support.ts";

Deno.test("create-admin --reset-mfa removes the user's factors and ends their sessions, recorded without actor; the password stays", async () => {
  await using db = await testDatabase("first-admin");
  let user: Awaited<ReturnType<typeof userWithTotp>>;
  {
    // Stopped before the task runs: the embedded database has one owner.
    await using svc = await startService(db.env, { bcryptCost: 4 });
    user = await userWithTotp(svc, "admin");
    const first = await svc.client().login(
      user.account.username,
      user.password,
    );
    assertEquals(first.status, 401);
  }
  // A new password alone would not get them in: the task says what would.
  const newPassword = await runTask(createAdmin, [
    "--username",
    user.account.username,
    "--password",
    "a new long passphrase",
  ], db.env);
  assertEquals(newPassword.code, 0, newPassword.stderr);
  assert(
    newPassword.stdout.includes(
      `They keep their second factor: if it is lost, run deno task create-admin --username ${user.account.username} --reset-mfa`,
    ),
    newPassword.stdout,
  );
  user.password = "a new long passphrase";
  const reset = await runTask(createAdmin, [
    "--username",
    user.account.username.toUpperCase(),
    "--reset-mfa",
  ], db.env);
  assertEquals(reset.code, 0, reset.stderr);
  assertMatch(reset.stdout, /has no second factor now/);
  const unknown = await runTask(createAdmin, [
    "--username",
    "nobody-here",
    "--reset-mfa",
  ], db.env);
  assertEquals(unknown.code, 1);
  assertMatch(unknown.stderr, /no user "nobody-here"/);

  await using svc = await startService(db.env, { bcryptCost: 4 });
  const sessions = await svc.sql`
    select 1 from sessions where user_id = ${user.account.id}`;
  assertEquals(sessions.length, 0, "the user's sessions ended");
  const login = await svc.client().login(user.account.username, user.password);
  assertEquals(login.status, 200);
  await svc.store.audit.seal();
  const [record] = await svc.sql<{ actor_id: number | null }[]>`
    select actor_id from audit_events
    where action = 'mfa.reset' and target_id = ${user.account.id}`;
  assert(record);
  assertEquals(record.actor_id, null);
  const [{ role }] = await svc.sql<{ role: string }[]>`
    select role from users where id = ${user.account.id}`;
  assertEquals(role, "admin");
});
