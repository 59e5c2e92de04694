import type { Context, TypedResponse } from "hono";
import type { ServedConfig } from "../config.ts";
import type { Store } from "../db/store.ts";
import type { LoginCounter } from "../db/throttle.ts";
import { auditEvents } from "../audit/events.ts";
import type { ProviderFields, SsoProvider } from "../db/sso-providers.ts";
import type { ProviderIdentity } from "../db/sso.ts";
import { LOGIN_CEILING_FACTOR } from "../auth/auth.handlers.ts";
import type { Sessions } from "../auth/session.ts";
import { sha256 } from "../auth/tokens.ts";
import { auditContext } from "../http/audit-context.ts";
import { callerWrites } from "../http/caller-write.ts";
import { CONSOLE_PATH } from "../http/console-path.ts";
import type { Handlers } from "../http/endpoint.ts";
import type { AppEnv } from "../http/env.ts";
import { countedBlock } from "../http/ip.ts";
import { type Message, MSG } from "../http/messages.ts";
import { clientIp } from "../http/origin.ts";
import { ACCOUNT_RULES } from "../users/account-rules.ts";
import { isRefusal, refuse } from "../refusal.ts";
import type { Oidc } from "./oidc.ts";
import type * as routes from "./sso.routes.ts";

export interface SsoDeps {
  store: Store;
  sessions: Sessions;
  oidc: Oidc;
  config: Pick<
    ServedConfig,
    | "TRUST_PROXY"
    | "PUBLIC_URL"
    | "LOGIN_MAX_FAILURES"
    | "LOGIN_WINDOW_SECONDS"
  >;
}

type Handler<K extends keyof typeof routes> = Handlers<typeof routes>[K];

/** How long a sign-in may stay at the provider. */
export const PENDING_SIGN_IN_SECONDS = 600;

/** Where a sign-in lands when it names nowhere. */
const DEFAULT_RETURN = CONSOLE_PATH;

/** The `amr` values that say the provider passed a second factor (RFC 8176). */
const SECOND_FACTOR_AMR = ["mfa", "hwk"];

const str = (v: unknown) => typeof v === "string" && v !== "" ? v : undefined;

/** Whether the new account's fields meet every rule an admin's creation meets. */
const fitsRules = (a: { username: string; name: string; email: string }) =>
  ACCOUNT_RULES.every((r) => r.field === "password" || r.ok(a[r.field]));

/** 302 to `location` (a bodiless answer, as the routes declare it). */
const redirect = (c: Context<AppEnv>, location: string) =>
  c.body(null, 302, { Location: location }) as unknown as TypedResponse<
    // deno-lint-ignore ban-types
    {},
    302,
    string
  >;

export function createSsoHandlers(
  { store, sessions, oidc, config }: SsoDeps,
) {
  const callerWrite = callerWrites(config.TRUST_PROXY);
  const redirectUri = (id: number) =>
    `${config.PUBLIC_URL}/api/sso/${id}/callback`;
  const shown = (p: SsoProvider) => ({ ...p, redirectUri: redirectUri(p.id) });

  /** The console's sign-in page, saying why there is no session. */
  const toSignIn = (c: Context<AppEnv>, message: Message) =>
    redirect(c, `${CONSOLE_PATH}?error=${encodeURIComponent(message)}`);

  /**
   * A sign-in's failures are counted per client address (and provider)
   * alone, as a known device's are: never over all addresses, so no one
   * can lock a provider's sign-ins for everyone.
   */
  const counterOf = (c: Context<AppEnv>, id: number): LoginCounter => ({
    usernameHash: sha256(`sso:${id}`),
    device: `sso:${countedBlock(clientIp(c, config.TRUST_PROXY) ?? "unknown")}`,
  });

  const create: Handler<"create"> = async (c, { body }) => {
    const made = await store.sso.providers.create({
      name: body.name,
      issuer: body.issuer,
      clientId: body.clientId,
      clientSecret: body.clientSecret,
      scopes: body.scopes ?? ["openid", "email", "profile"],
      usernameClaim: body.usernameClaim ?? "preferred_username",
      allowedDomains: [...new Set(body.allowedDomains ?? [])],
      link: body.link ?? "email",
      createUsers: body.createUsers ?? false,
      passwordLogin: body.passwordLogin ?? true,
      mfaAcr: body.mfaAcr ?? null,
      scimConnectionId: body.scimConnectionId ?? null,
    }, callerWrite(c));
    return isRefusal(made) ? made : c.json(shown(made), 201);
  };

  const listPublic: Handler<"listPublic"> = async (c) =>
    c.json(await store.sso.providers.listPublic(), 200);

  const list: Handler<"list"> = async (c) =>
    c.json((await store.sso.providers.list()).map(shown), 200);

  const get: Handler<"get"> = async (c, { id }) => {
    const found = await store.sso.providers.get(id);
    return found ? c.json(shown(found), 200) : refuse("not_found");
  };

  const update: Handler<"update"> = async (c, { id, body }) => {
    const change: Partial<ProviderFields> = {};
    for (const [k, v] of Object.entries(body)) {
      if (v !== undefined) (change as Record<string, unknown>)[k] = v;
    }
    if (change.allowedDomains) {
      change.allowedDomains = [...new Set(change.allowedDomains)];
    }
    const updated = await store.sso.providers.update(
      id,
      change,
      callerWrite(c),
    );
    return isRefusal(updated) ? updated : c.json(shown(updated), 200);
  };

  const remove: Handler<"remove"> = async (c, { id }) => {
    const outcome = await store.sso.providers.remove(id, callerWrite(c));
    return outcome === "deleted" ? c.json({ ok: true as const }, 200) : outcome;
  };

  const start: Handler<"start"> = async (c, { id, provider, query }) => {
    const begun = await oidc.begin(provider, redirectUri(id), provider.scopes);
    if (typeof begun === "string") {
      await store.sso.recordFailure(
        null,
        begun,
        provider,
        auditContext(c, config.TRUST_PROXY, "api"),
        c.get("writeBy"),
      );
      return toSignIn(
        c,
        begun === "unavailable" ? MSG.ssoUnavailable : MSG.ssoRefused,
      );
    }
    await store.sso.pending.create(
      sha256(begun.state),
      id,
      {
        nonce: begun.nonce,
        codeVerifier: begun.codeVerifier,
        returnTo: query.returnTo ?? DEFAULT_RETURN,
      },
      PENDING_SIGN_IN_SECONDS,
      c.get("writeBy"),
    );
    return redirect(c, begun.url.href);
  };

  const callback: Handler<"callback"> = async (c, { id, provider }) => {
    const context = auditContext(c, config.TRUST_PROXY, "api");
    const writeBy = c.get("writeBy");
    const fail = async (
      message: Message,
      reason: string,
      user: { id: number; username: string } | null = null,
    ) => {
      await store.sso.recordFailure(user, reason, provider, context, writeBy);
      return toSignIn(c, message);
    };
    const counter = counterOf(c, id);
    const attempt = await store.loginThrottle.attempt(
      counter,
      {
        max: config.LOGIN_MAX_FAILURES,
        ceiling: LOGIN_CEILING_FACTOR * config.LOGIN_MAX_FAILURES,
        windowSeconds: config.LOGIN_WINDOW_SECONDS,
      },
      (retryAfter) =>
        auditEvents.loginThrottled(undefined, retryAfter, context),
      writeBy,
    );
    if (attempt.blocked) return toSignIn(c, MSG.tooManyLoginAttempts);

    const params = new URL(c.req.url).searchParams;
    const state = params.getAll("state");
    const pending = state.length === 1 && state[0].length <= 512
      ? await store.sso.pending.take(sha256(state[0]), id, writeBy)
      : undefined;
    if (!pending?.live) return await fail(MSG.ssoExpired, "state");
    const error = params.get("error");
    if (error !== null) {
      return error === "access_denied"
        ? await fail(MSG.ssoCancelled, "cancelled")
        : await fail(MSG.ssoRefused, "provider_error");
    }
    // The URL the provider sent the browser to, as registered there.
    const currentUrl = new URL(redirectUri(id));
    currentUrl.search = params.toString();
    const claims = await oidc.finish(provider, currentUrl, {
      state: state[0],
      nonce: pending.nonce,
      codeVerifier: pending.codeVerifier,
    });
    if (claims === "unavailable") {
      return await fail(MSG.ssoUnavailable, "unavailable");
    }
    if (claims === "refused") return await fail(MSG.ssoRefused, "token");
    // OpenID Connect bounds a subject to 255 ASCII characters; no text the
    // database keeps holds NUL.
    const storable = (v: unknown) =>
      typeof v !== "string" || !v.includes("\u0000");
    if (
      claims.sub.length > 255 ||
      ![claims.sub, claims.email, claims.name, claims.preferred_username]
        .every(storable)
    ) {
      return await fail(MSG.ssoRefused, "token");
    }

    const email = str(claims.email);
    const verified = claims.email_verified === true ||
      claims.email_verified === "true";
    if (provider.allowedDomains.length > 0) {
      const domain = email?.slice(email.lastIndexOf("@") + 1).toLowerCase();
      if (!domain || !provider.allowedDomains.includes(domain)) {
        return await fail(MSG.ssoDomainNotAllowed, "domain");
      }
    }
    const username = str(claims[provider.usernameClaim]);
    const newAccount = username && email
      ? {
        username: username.trim(),
        name: (str(claims.name) ?? username).trim(),
        email: email.trim(),
      }
      : undefined;
    const who: ProviderIdentity = {
      subject: claims.sub,
      verifiedEmail: verified ? email : undefined,
      newAccount: newAccount && fitsRules(newAccount) ? newAccount : undefined,
    };
    const user = await store.sso.accountFor(provider, who, context, writeBy);
    if (!user) return await fail(MSG.ssoNoAccount, "no_account");

    const amr = Array.isArray(claims.amr) ? claims.amr : [];
    const secondFactor =
      amr.some((m) => typeof m === "string" && SECOND_FACTOR_AMR.includes(m)) ||
      (provider.mfaAcr !== null && claims.acr === provider.mfaAcr);
    const started = await sessions.start(
      c,
      user,
      counter,
      undefined,
      undefined,
      { provider, secondFactor },
    );
    if (started === "stale") return await fail(MSG.ssoExpired, "stale", user);
    if (started !== "started") return toSignIn(c, MSG.accountDisabled);
    return redirect(c, pending.returnTo);
  };

  return { listPublic, create, list, get, update, remove, start, callback };
}
