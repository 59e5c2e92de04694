/**
 * The OpenID Connect relying party, on openid-client: discovery and keys
 * from the issuer, the authorization request (code, PKCE S256, `state`,
 * `nonce`), and the code's exchange with every check of the ID token
 * (signature against the issuer's keys, `alg`, `iss`, `aud`, `exp` and
 * `iat` within openid-client's 30 s of clock tolerance, `nonce`). Each call
 * to the issuer gives up after `timeoutMs`; it is awaited, so a slow issuer
 * holds only the sign-in waiting for it.
 */
import * as client from "openid-client";

/** The issuer could not be reached in time (or answered 5xx): `Identity provider unavailable`. */
class Unreachable extends Error {}

/** Why a sign-in ends at the provider: it is down or slow, or it (or its token) said no. */
export type ProviderFailure = "unavailable" | "refused";

export interface ProviderClient {
  issuer: string;
  clientId: string;
  clientSecret: string;
}

/** What a sign-in keeps while the browser is at the provider. */
export interface SignInStart {
  url: URL;
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** Whether the failure's cause, at any depth, is the issuer being out of reach. */
function failureOf(e: unknown): ProviderFailure {
  for (let cause = e, depth = 0; cause && depth < 8; depth++) {
    if (cause instanceof Unreachable) return "unavailable";
    cause = (cause as { cause?: unknown }).cause;
  }
  return "refused";
}

export function createOidc(timeoutMs: number) {
  /** Every call to an issuer: bounded in time; no answer, or a 5xx, is unreachable. */
  const boundedFetch: client.CustomFetch = async (url, options) => {
    const signals = [AbortSignal.timeout(timeoutMs)];
    if (options.signal) signals.push(options.signal);
    let res: Response;
    try {
      res = await fetch(url, {
        ...options,
        signal: AbortSignal.any(signals),
      } as RequestInit);
    } catch (e) {
      throw new Unreachable(`${new URL(url).origin} not reached`, {
        cause: e,
      });
    }
    if (res.status >= 500) {
      await res.body?.cancel();
      throw new Unreachable(`${new URL(url).origin} answered ${res.status}`);
    }
    return res;
  };

  const discover = async (p: ProviderClient) => {
    const issuer = new URL(p.issuer);
    const config = await client.discovery(
      issuer,
      p.clientId,
      p.clientSecret,
      undefined,
      {
        [client.customFetch]: boundedFetch,
        // http is allowed only on loopback (urls.ts: isIssuer).
        execute: issuer.protocol === "http:"
          ? [client.allowInsecureRequests]
          : [],
      },
    );
    // The ID token's signature is checked against the issuer's keys, even
    // from the token endpoint.
    client.enableNonRepudiationChecks(config);
    return config;
  };

  return {
    /** The provider's authorization URL for a new sign-in, or why there is none. */
    async begin(
      p: ProviderClient,
      redirectUri: string,
      scopes: string[],
    ): Promise<SignInStart | ProviderFailure> {
      try {
        const config = await discover(p);
        const state = client.randomState();
        const nonce = client.randomNonce();
        const codeVerifier = client.randomPKCECodeVerifier();
        const url = client.buildAuthorizationUrl(config, {
          redirect_uri: redirectUri,
          scope: scopes.join(" "),
          code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
          code_challenge_method: "S256",
          state,
          nonce,
        });
        return { url, state, nonce, codeVerifier };
      } catch (e) {
        return failureOf(e);
      }
    },

    /**
     * The ID token's claims for the code the provider sent back to
     * `currentUrl` (the redirect URI and its query), or why there are none.
     */
    async finish(
      p: ProviderClient,
      currentUrl: URL,
      checks: { state: string; nonce: string; codeVerifier: string },
    ): Promise<client.IDToken | ProviderFailure> {
      try {
        const config = await discover(p);
        const tokens = await client.authorizationCodeGrant(config, currentUrl, {
          pkceCodeVerifier: checks.codeVerifier,
          expectedState: checks.state,
          expectedNonce: checks.nonce,
          idTokenExpected: true,
        });
        return tokens.claims() ?? "refused";
      } catch (e) {
        return failureOf(e);
      }
    },
  };
}

export type Oidc = ReturnType<typeof createOidc>;
