/**
 * What the second-factor tests share: a user with a confirmed TOTP,
 * enrolled through the API as a person would, and codes computed from the
 * enrolment's secret with otpauth (the library an authenticator app
 * follows), never from the service's code.
 */
import type { Role, UserAdminClient } from "@user-admin/client";
import { Secret, TOTP } from "otpauth";
import { assert, assertEquals } from "./support/assert.ts";
import type { TestService } from "./support/service.ts";

/** The code of the secret's time step `offset` steps from now (0: now's). */
export const codeAt = (secret: string, offset = 0) =>
  new TOTP({
    secret: Secret.fromBase32(secret),
    algorithm: "SHA1",
    digits: 6,
    period: 30,
  }).generate({ timestamp: Date.now() + offset * 30_000 });

/**
 * Waits, when fewer than `ms` are left of the current 30 s step, for the
 * next one: a test that names codes by their distance from now (`codeAt`)
 * must be answered within the step it counted from, or a code two steps
 * ahead becomes one step ahead, which is accepted.
 */
export async function untilStepHasLeft(ms: number) {
  const left = 30_000 - Date.now() % 30_000;
  if (left < ms) await new Promise((done) => setTimeout(done, left + 50));
}

/**
 * A code of now's step for a test whose subject is not replays: the steps
 * the user used already are forgotten first, as if the test waited for
 * the next period.
 */
export async function freshCode(
  svc: Pick<TestService, "sql">,
  userId: number,
  secret: string,
) {
  await svc.sql`update mfa_totp set last_step = 0 where user_id = ${userId}`;
  return codeAt(secret);
}

/** Starts and confirms a TOTP enrolment for the client's user: its secret and recovery codes. */
export async function enrolTotp(client: UserAdminClient) {
  const begun = await client.post("/api/auth/mfa/totp");
  assert(begun.ok, `enrol: ${!begun.ok && begun.error}`);
  const confirmed = await client.post("/api/auth/mfa/totp/confirm", {
    body: { code: codeAt(begun.data.secret) },
  });
  assert(confirmed.ok, `confirm: ${!confirmed.ok && confirmed.error}`);
  assertEquals(confirmed.data.recoveryCodes.length, 10);
  return {
    secret: begun.data.secret,
    recoveryCodes: confirmed.data.recoveryCodes,
  };
}

/** A new user of `role` with a confirmed TOTP, logged in (the enrolling session counts as second-factored). */
export async function userWithTotp(svc: TestService, role: Role = "admin") {
  const user = await svc.userClient(role);
  const totp = await enrolTotp(user.client);
  return { ...user, ...totp };
}

/** The service's audit records of `action` about user `targetId`, oldest first. */
export async function records(
  svc: TestService,
  action: string,
  targetId: number,
) {
  await svc.store.audit.seal();
  return await svc.sql<{ actor_id: number | null; details: unknown }[]>`
    select actor_id, details from audit_events
    where action = ${action} and target_id = ${targetId} order by id`;
}

/** Makes the sessions of the user as if their last second factor was an hour ago. */
export async function ageSecondFactor(
  svc: Pick<TestService, "sql">,
  userId: number,
) {
  await svc.sql`
    update sessions set second_factor_at = now() - interval '1 hour'
    where user_id = ${userId} and second_factor_at is not null`;
}
