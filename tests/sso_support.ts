/**
 * What the sign-in tests share: a real OpenID Connect provider
 * (oidc-provider) started locally, whose accounts' claims each test
 * chooses; a proxy in front of it that can alter the ID token its token
 * endpoint answers (re-signed with a key of the test's, announced in the
 * provider's keys or not) or answer slowly; and the redirect dance driven
 * over HTTP as a browser would (cookies per origin, the provider's
 * devInteractions login and consent forms).
 */
import { createServer, type Server } from "node:http";
import Provider from "oidc-provider";
import { freePort } from "./support/process.ts";
import type { TestService } from "./support/service.ts";

export const CLIENT_ID = "user-admin";
export const CLIENT_SECRET = "the-client-secret-of-user-admin";

/** The claims of each subject the provider signs in (`login` in its form is the subject). */
export type Accounts = Map<string, Record<string, unknown>>;

/** What the proxy does to the token endpoint's answer. */
export type Tamper =
  | undefined
  | { kind: "unknown-key" }
  | { kind: "alg-none" }
  | { kind: "claims"; change: Record<string, unknown> };

export interface Idp extends AsyncDisposable {
  /** The issuer the service is configured with: the proxy's origin. */
  issuer: string;
  accounts: Accounts;
  /** Set per test; reset by `reset()`. */
  tamper: Tamper;
  /** Holds every request to the proxy until `release()` (a slow provider). */
  slow: boolean;
  /** Resolves once a request is held by `slow`. */
  held(): Promise<void>;
  release(): void;
  /** No answer at all: the proxy refuses connections (a provider down). */
  down(): Promise<void>;
  reset(): void;
}

const b64u = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes)).replaceAll("+", "-").replaceAll(
    "/",
    "_",
  ).replace(/=+$/, "");
const b64uJson = (v: unknown) =>
  b64u(new TextEncoder().encode(JSON.stringify(v)));
const fromB64u = (s: string) =>
  JSON.parse(
    new TextDecoder().decode(
      Uint8Array.from(
        atob(s.replaceAll("-", "+").replaceAll("_", "/")),
        (c) => c.charCodeAt(0),
      ),
    ),
  );

/** An RS256 key of the test's own, for tokens the proxy re-signs. */
async function rsaKey(kid: string) {
  const pair = await crypto.subtle.generateKey(
    {
      name: "RSASSA-PKCS1-v1_5",
      modulusLength: 2048,
      publicExponent: new Uint8Array([1, 0, 1]),
      hash: "SHA-256",
    },
    true,
    ["sign", "verify"],
  );
  const jwk = await crypto.subtle.exportKey("jwk", pair.publicKey);
  const sign = async (header: object, payload: object) => {
    const input = `${b64uJson({ ...header, alg: "RS256", kid })}.${
      b64uJson(payload)
    }`;
    const signature = await crypto.subtle.sign(
      "RSASSA-PKCS1-v1_5",
      pair.privateKey,
      new TextEncoder().encode(input),
    );
    return `${input}.${b64u(new Uint8Array(signature))}`;
  };
  return {
    publicJwk: {
      kty: jwk.kty,
      n: jwk.n,
      e: jwk.e,
      kid,
      alg: "RS256",
      use: "sig",
    },
    sign,
  };
}

/**
 * A provider on a port of its own behind the proxy on another; its
 * registered redirect URIs are `publicUrl` + `/api/sso/{1..500}/callback`.
 */
export async function startIdp(publicUrl: string): Promise<Idp> {
  const accounts: Accounts = new Map();
  const innerPort = freePort();
  const proxyPort = freePort();
  const issuer = `http://127.0.0.1:${proxyPort}`;
  const inner = `http://127.0.0.1:${innerPort}`;
  const redirectUris = Array.from(
    { length: 500 },
    (_, i) => `${publicUrl}/api/sso/${i + 1}/callback`,
  );
  const provider = new Provider(
    issuer,
    {
      clients: [{
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uris: redirectUris,
        grant_types: ["authorization_code"],
        response_types: ["code"],
        token_endpoint_auth_method: "client_secret_post",
      }],
      claims: {
        openid: ["sub"],
        email: ["email", "email_verified"],
        profile: ["preferred_username", "name"],
      },
      conformIdTokenClaims: false,
      features: { devInteractions: { enabled: true } },
      findAccount: (_ctx: unknown, sub: string) => ({
        accountId: sub,
        claims: () => ({ sub, ...accounts.get(sub) }),
      }),
      // The devInteractions' pages are served over http on loopback.
      cookies: { keys: ["test-cookie-key"] },
    } as ConstructorParameters<typeof Provider>[1],
  );
  provider.proxy = true;
  const server: Server = createServer(provider.callback());
  await new Promise<void>((r) => server.listen(innerPort, "127.0.0.1", r));

  const extra = await rsaKey("test-extra-key");
  const stranger = await rsaKey("test-stranger-key");
  let released: (() => void) | undefined;
  let gate: Promise<void> | undefined;
  let onHeld: (() => void) | undefined;
  let heldNow = Promise.withResolvers<void>();
  onHeld = heldNow.resolve;

  const idp: Idp = {
    issuer,
    accounts,
    tamper: undefined,
    slow: false,
    held: () => heldNow.promise,
    release() {
      released?.();
      gate = released = undefined;
      heldNow = Promise.withResolvers<void>();
      onHeld = heldNow.resolve;
    },
    async down() {
      await proxy.shutdown();
    },
    reset() {
      idp.tamper = undefined;
      idp.slow = false;
      idp.release();
      accounts.clear();
    },
    async [Symbol.asyncDispose]() {
      released?.();
      await proxy.shutdown().catch(() => {});
      await new Promise<void>((r) => server.close(() => r()));
      server.closeAllConnections?.();
    },
  };

  const proxy = Deno.serve(
    { hostname: "127.0.0.1", port: proxyPort, onListen: () => {} },
    async (req) => {
      if (idp.slow) {
        gate ??= new Promise<void>((r) => released = r);
        onHeld?.();
        // Held until the test ends it, or the client gives up.
        await Promise.race([
          gate,
          new Promise((r) => req.signal.addEventListener("abort", r)),
        ]);
      }
      const url = new URL(req.url);
      // The provider names its endpoints after the host it was asked on.
      const headers = new Headers(req.headers);
      headers.set("x-forwarded-host", url.host);
      headers.set("x-forwarded-proto", "http");
      const forwarded = await fetch(inner + url.pathname + url.search, {
        method: req.method,
        headers,
        body: req.body,
        redirect: "manual",
      });
      const body = await forwarded.arrayBuffer();
      const answered = new Headers(forwarded.headers);
      answered.delete("content-length");
      answered.delete("content-encoding");
      if (url.pathname === "/jwks" && forwarded.ok) {
        // The extra key is the provider's as far as clients can tell.
        const jwks = JSON.parse(new TextDecoder().decode(body));
        jwks.keys.push(extra.publicJwk);
        return Response.json(jwks, { headers: answered });
      }
      if (url.pathname === "/token" && forwarded.ok && idp.tamper) {
        const answer = JSON.parse(new TextDecoder().decode(body));
        const [h, p] = answer.id_token.split(".");
        const header = fromB64u(h);
        const payload = fromB64u(p);
        const t = idp.tamper;
        answer.id_token = t.kind === "alg-none"
          ? `${b64uJson({ alg: "none", typ: "JWT" })}.${b64uJson(payload)}.`
          : t.kind === "unknown-key"
          ? await stranger.sign({ typ: header.typ }, payload)
          : await extra.sign({ typ: header.typ }, { ...payload, ...t.change });
        return Response.json(answer, { headers: answered });
      }
      return new Response(body, {
        status: forwarded.status,
        headers: answered,
      });
    },
  );
  return idp;
}

/** The provider's settings for the service, with `extra` over them. */
export const providerBody = (
  idp: Idp,
  extra: Record<string, unknown> = {},
) => ({
  name: "Test IdP",
  issuer: idp.issuer,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  ...extra,
});

/** Cookies per origin, as a browser keeps them (name=value only). */
class Jar {
  #byOrigin = new Map<string, Map<string, string>>();
  header(url: URL) {
    const jar = this.#byOrigin.get(url.origin);
    return jar ? [...jar].map(([k, v]) => `${k}=${v}`).join("; ") : "";
  }
  take(url: URL, res: Response) {
    const jar = this.#byOrigin.get(url.origin) ?? new Map();
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair.indexOf("=");
      jar.set(pair.slice(0, i).trim(), pair.slice(i + 1));
    }
    this.#byOrigin.set(url.origin, jar);
  }
}

/** Where a step of the dance ended: the service's answer to its callback. */
export interface Landing {
  status: number;
  location: string | null;
  /** The `sid` the callback set, if any. */
  sid?: string;
  /** The error the console's sign-in page would show. */
  error?: string | null;
}

/**
 * A browser signing in through the provider as `login`: from the service's
 * start to the provider's login and consent forms and back to the
 * service's callback. `stopAt: "callback"` answers the callback URL the
 * provider sent the browser to, without calling it (for replays).
 */
export async function signIn(
  svc: Pick<TestService, "fetch">,
  providerId: number,
  login: string,
  { returnTo, cancel = false, finishOn = svc }: {
    returnTo?: string;
    cancel?: boolean;
    /** The instance the provider sends the browser back to (another app on the same database). */
    finishOn?: Pick<TestService, "fetch">;
  } = {},
): Promise<Landing & { callback: string }> {
  const jar = new Jar();
  const start = await svc.fetch(
    `/api/sso/${providerId}/start${
      returnTo ? `?returnTo=${encodeURIComponent(returnTo)}` : ""
    }`,
    { redirect: "manual" },
  );
  await start.body?.cancel();
  let location = start.headers.get("location")!;
  if (start.status !== 302 || location.startsWith("/admin")) {
    return { ...landing(start), callback: "" };
  }
  // Through the provider until it sends the browser to the service.
  for (let i = 0; i < 20; i++) {
    const url = new URL(location);
    if (url.pathname.startsWith("/api/sso/")) {
      const callback = url.pathname + url.search;
      const res = await finishOn.fetch(callback, { redirect: "manual" });
      await res.body?.cancel();
      return { ...landing(res), callback };
    }
    const res = await fetch(url, {
      redirect: "manual",
      headers: { cookie: jar.header(url) },
    });
    jar.take(url, res);
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel();
      location = new URL(res.headers.get("location")!, url).href;
      continue;
    }
    const html = await res.text();
    const action = /<form[^>]*action="([^"]+)"/.exec(html)?.[1];
    if (!action) throw new Error(`no form at ${url}: ${res.status} ${html}`);
    const form = new URL(action, url);
    if (cancel) {
      // The page's `[ Cancel ]` link: the person cancels.
      const abort = /href="([^"]+)">\[ Cancel \]/.exec(html)?.[1];
      if (!abort) throw new Error(`no cancel link: ${html}`);
      location = new URL(abort.replaceAll("&amp;", "&"), url).href;
      continue;
    }
    const body = html.includes('name="prompt" value="login"')
      ? new URLSearchParams({ prompt: "login", login, password: "x" })
      : new URLSearchParams({ prompt: "consent" });
    const posted = await fetch(form, {
      method: "POST",
      redirect: "manual",
      headers: {
        cookie: jar.header(form),
        "content-type": "application/x-www-form-urlencoded",
      },
      body,
    });
    jar.take(form, posted);
    await posted.body?.cancel();
    location = new URL(posted.headers.get("location")!, form).href;
  }
  throw new Error("the dance did not end");
}

function landing(res: Response): Landing {
  const location = res.headers.get("location");
  const sid = /^sid=([^;]+)/.exec(
    res.headers.getSetCookie().find((c) => c.startsWith("sid=")) ?? "",
  )?.[1];
  const error = location?.startsWith("/admin?")
    ? new URLSearchParams(location.slice("/admin?".length)).get("error")
    : null;
  return { status: res.status, location, sid, error };
}
