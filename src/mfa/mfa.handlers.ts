import type { TransactionSql } from "postgres";
import { auditContext } from "../http/audit-context.ts";
import {
  answer,
  type AuthDeps,
  createLoginEnd,
} from "../auth/auth.handlers.ts";
import { type Factors, refusal } from "../auth/mfa/factors.ts";
import type { Passkeys } from "../auth/mfa/passkeys.ts";
import { CHALLENGE_SECONDS } from "../auth/mfa/passkeys.ts";
import { clearPendingCookie } from "../auth/mfa/pending.ts";
import { newRecoveryCodes } from "../auth/mfa/recovery.ts";
import { newTotpSecret, totpEnrolment, totpStep } from "../auth/mfa/totp.ts";
import { sha256 } from "../auth/tokens.ts";
import type { ServedConfig } from "../config.ts";
import { callerWrites } from "../http/caller-write.ts";
import type { Handlers } from "../http/endpoint.ts";
import { canonicalKey } from "../users/canonical.ts";
import type * as routes from "./mfa.routes.ts";
import { isRefusal, refuse } from "../refusal.ts";

export interface MfaDeps
  extends Pick<AuthDeps, "store" | "sessions" | "devices"> {
  factors: Factors;
  passkeys: Passkeys;
  config: AuthDeps["config"] & Pick<ServedConfig, "PUBLIC_URL">;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** The handlers run after their routes' steps (mfa.routes.ts). */
export function createMfaHandlers(deps: MfaDeps) {
  const { store, factors, passkeys, config } = deps;
  const end = createLoginEnd(deps);
  const callerWrite = callerWrites(config.TRUST_PROXY);
  const issuer = `User admin (${new URL(config.PUBLIC_URL).host})`;

  const secondFactor: Handler<"secondFactor"> = async (
    c,
    { pending, body },
  ) => {
    const { user } = pending;
    const canonicalName = canonicalKey(user.username);
    const full = await factors.windowFull(c, user.id);
    if (full) return full;
    const known = { id: user.id, canonicalName };
    const counted = await end.counter(c, sha256(canonicalName), known);
    const input = body.code !== undefined
      ? { code: body.code }
      : { passkey: body.passkey };
    const factor = await factors.prepare(c, user.id, input, "login");
    const ended = await end.finish(c, user, known, counted, {
      methods: () => [factor.method],
      write: async (tx: TransactionSql) =>
        refusal(c, await factors.decide(tx, c, user, factor, "login")) ??
          // Single use: a pending login used meanwhile opens no other session.
          (await store.mfa.takePending(tx, pending.hash)
            ? undefined
            : refuse("caller_gone")),
    });
    // Used or outdated meanwhile: as if it had been so a moment earlier.
    if (isRefusal(ended) && ended.reason === "invalid_credentials") {
      return refuse("caller_gone");
    }
    if (!isRefusal(ended)) clearPendingCookie(c, config);
    return answer(c, ended);
  };

  const secondFactorOptions: Handler<"secondFactorOptions"> = async (
    c,
    { pending },
  ) => {
    const options = await passkeys.authenticationOptions(
      await store.mfa.passkeys(pending.user.id),
    );
    await store.mfa.saveChallenge(
      pending.user.id,
      "login",
      options.challenge,
      CHALLENGE_SECONDS,
      c.get("writeBy"),
    );
    return c.json(options as unknown as Record<string, unknown>, 200);
  };

  const stepUpNow: Handler<"stepUpNow"> = async (c, { caller, body }) => {
    if (!caller.secondFactor?.enrolled) return refuse("no_factor");
    const input = body.code !== undefined
      ? { code: body.code }
      : { passkey: body.passkey };
    const { account } = caller;
    const full = await factors.windowFull(c, account.id);
    if (full) return full;
    const factor = await factors.prepare(c, account.id, input, "step_up");
    const verdict = await store.mfa.stepUp(
      account.id,
      caller.session,
      (tx) => factors.decide(tx, c, account, factor, "step_up"),
      c.get("writeBy"),
    );
    return refusal(c, verdict) ?? c.json({ ok: true as const }, 200);
  };

  const stepUpOptions: Handler<"stepUpOptions"> = async (c, { caller }) => {
    if (!caller.secondFactor?.enrolled) return refuse("no_factor");
    const options = await passkeys.authenticationOptions(
      await store.mfa.passkeys(caller.account.id),
    );
    await store.mfa.saveChallenge(
      caller.account.id,
      "step_up",
      options.challenge,
      CHALLENGE_SECONDS,
      c.get("writeBy"),
    );
    return c.json(options as unknown as Record<string, unknown>, 200);
  };

  const listFactors: Handler<"listFactors"> = async (c, { caller }) => {
    const summary = await store.mfa.summary(caller.account.id);
    return summary ? c.json(summary, 200) : refuse("caller_gone");
  };

  const beginTotp: Handler<"beginTotp"> = async (c, { caller }) => {
    const secret = newTotpSecret();
    const begun = await store.mfa.beginTotp(
      caller.account.id,
      secret,
      c.get("writeBy"),
    );
    if (isRefusal(begun)) return begun;
    return c.json({
      secret,
      ...totpEnrolment(secret, issuer, caller.account.username),
    }, 201);
  };

  const confirmTotp: Handler<"confirmTotp"> = async (c, { caller, body }) => {
    const secret = await store.mfa.totpSecret(caller.account.id, false);
    const step = secret === undefined ? null : totpStep(secret, body.code);
    if (secret === undefined || step === null) return refuse("invalid_code");
    const { codes, hashes } = newRecoveryCodes();
    const confirmed = await store.mfa.confirmTotp(
      caller.account,
      caller.session,
      secret,
      step,
      hashes,
      auditContext(c, config.TRUST_PROXY, "api"),
      c.get("writeBy"),
    );
    if (confirmed === "changed") return refuse("invalid_code");
    if (isRefusal(confirmed)) return confirmed;
    return c.json({ recoveryCodes: codes }, 200);
  };

  const removeTotp: Handler<"removeTotp"> = async (c, { caller }) => {
    const removed = await store.mfa.remove(
      caller.account,
      caller.session,
      undefined,
      auditContext(c, config.TRUST_PROXY, "api"),
      c.get("writeBy"),
    );
    if (isRefusal(removed)) return removed;
    return removed ? c.json({ ok: true as const }, 200) : refuse("not_found");
  };

  const passkeyOptions: Handler<"passkeyOptions"> = async (c, { caller }) => {
    const { account } = caller;
    const options = await passkeys.registrationOptions(
      account,
      await store.mfa.passkeys(account.id),
    );
    await store.mfa.saveChallenge(
      account.id,
      "register",
      options.challenge,
      CHALLENGE_SECONDS,
      c.get("writeBy"),
    );
    return c.json(options as unknown as Record<string, unknown>, 200);
  };

  const addPasskey: Handler<"addPasskey"> = async (c, { caller, body }) => {
    const { account } = caller;
    const writeBy = c.get("writeBy");
    const passkey = await passkeys.verifyRegistration(
      body.response,
      body.name ?? "Passkey",
      (purpose, challenge) =>
        store.mfa.takeChallenge(account.id, purpose, challenge, writeBy),
    );
    if (!passkey) return refuse("invalid_passkey");
    const { codes, hashes } = newRecoveryCodes();
    const added = await store.mfa.addPasskey(
      account,
      caller.session,
      passkey,
      hashes,
      auditContext(c, config.TRUST_PROXY, "api"),
      writeBy,
    );
    if (isRefusal(added)) {
      return added.reason === "duplicate" ? refuse("invalid_passkey") : added;
    }
    const summary = await store.mfa.summary(account.id);
    const shown = summary?.passkeys.find((p) => p.id === added.id);
    if (!shown) return refuse("caller_gone");
    return c.json({
      ...shown,
      recoveryCodes: added.codesIssued ? codes : null,
    }, 201);
  };

  const removePasskey: Handler<"removePasskey"> = async (
    c,
    { caller, id },
  ) => {
    const removed = await store.mfa.remove(
      caller.account,
      caller.session,
      id,
      auditContext(c, config.TRUST_PROXY, "api"),
      c.get("writeBy"),
    );
    if (isRefusal(removed)) return removed;
    return removed ? c.json({ ok: true as const }, 200) : refuse("not_found");
  };

  const regenerateCodes: Handler<"regenerateCodes"> = async (
    c,
    { caller },
  ) => {
    const { codes, hashes } = newRecoveryCodes();
    const done = await store.mfa.regenerateCodes(
      caller.account,
      caller.session,
      hashes,
      auditContext(c, config.TRUST_PROXY, "api"),
      c.get("writeBy"),
    );
    if (isRefusal(done)) return done;
    return done ? c.json({ recoveryCodes: codes }, 200) : refuse("no_factor");
  };

  const resetUser: Handler<"resetUser"> = async (c, { id }) => {
    const reset = await store.mfa.reset(id, callerWrite(c));
    return reset === "reset" ? c.json({ ok: true as const }, 200) : reset;
  };

  return {
    secondFactor,
    secondFactorOptions,
    stepUpNow,
    stepUpOptions,
    listFactors,
    beginTotp,
    confirmTotp,
    removeTotp,
    passkeyOptions,
    addPasskey,
    removePasskey,
    regenerateCodes,
    resetUser,
  };
}
