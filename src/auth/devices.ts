import { Buffer } from "node:buffer";
import type { Context } from "hono";
import { getCookie, setCookie } from "hono/cookie";
import type { Config } from "../config.ts";
import type { Store } from "../db/store.ts";
import { secureCookie } from "./session.ts";

/**
 * Known devices (OWASP "device cookies"): a successful login sets `did`, a
 * value signed by the service that names the user it logged in (id and
 * canonical name) and a random device id. A login that presents a valid
 * one for the name it tries is counted per device (store.loginThrottle), so
 * failures from elsewhere cannot lock that browser out.
 */
export const DEVICE_COOKIE = "did";

/** A device cookie lasts 180 days. */
export const DEVICE_TTL_SECONDS = 180 * 86_400;

/**
 * How long an instance uses the key it read before it reads it again: a
 * rotation (`deno task rotate-device-key`) takes effect on every instance
 * within this time, and a login reads the key at most this often (one
 * small query every few seconds instead of one per login).
 */
export const DEVICE_KEY_TTL_MS = 5_000;

type DeviceConfig = Pick<Config, "COOKIE_SECURE" | "TRUST_PROXY">;

/** What a `did` names. */
interface DeviceClaim {
  /** The user's id. */
  u: number;
  /** The user's canonical username (src/users/canonical.ts). */
  n: string;
  /** The device: 128 random bits, base64url. */
  d: string;
  /** Expiry, seconds since the epoch. */
  x: number;
}

export interface Devices {
  /**
   * The device id of the request's `did`, when its signature holds, it has
   * not expired and it names this user (id and canonical name); else
   * undefined, and the login is counted by its address.
   */
  recognise(
    c: Context,
    user: { id: number; canonicalName: string } | undefined,
  ): Promise<string | undefined>;
  /**
   * The cookie value for a login that succeeded: the device it came from
   * if known, else a new one. Signed before the login's write, so that no
   * failure after it commits the session.
   */
  issue(
    user: { id: number; canonicalName: string },
    device: string | undefined,
  ): Promise<string>;
  /** Sets the cookie `issue` made on the answer. */
  set(c: Context, value: string): void;
}

const encoder = new TextEncoder();
const b64url = (bytes: Uint8Array) =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString(
    "base64url",
  );
/** A cookie value of this size or more is no cookie of ours. */
const MAX_VALUE = 1024;

export function createDevices(
  store: Pick<Store, "deviceKey">,
  config: DeviceConfig,
  keyTtlMs = DEVICE_KEY_TTL_MS,
): Devices {
  let cached: { key: Promise<CryptoKey>; at: number } | undefined;
  const key = () => {
    const now = performance.now();
    if (!cached || now - cached.at > keyTtlMs) {
      const loading = store.deviceKey.current().then((raw) =>
        crypto.subtle.importKey(
          "raw",
          new Uint8Array(raw),
          { name: "HMAC", hash: "SHA-256" },
          false,
          ["sign", "verify"],
        )
      );
      const entry = { key: loading, at: now };
      cached = entry;
      // A failed read is not kept: the next login reads again.
      loading.catch(() => {
        if (cached === entry) cached = undefined;
      });
    }
    return cached.key;
  };

  return {
    async recognise(c, user) {
      const value = getCookie(c, DEVICE_COOKIE);
      // The signature is checked for unknown names too: the same work
      // either way, so the time tells nothing about which names exist.
      if (!value || value.length >= MAX_VALUE) return undefined;
      const [payload, signature, ...rest] = value.split(".");
      if (!payload || !signature || rest.length) return undefined;
      const valid = await crypto.subtle.verify(
        "HMAC",
        await key(),
        Buffer.from(signature, "base64url"),
        encoder.encode(payload),
      );
      if (!valid) return undefined;
      let claim: DeviceClaim;
      try {
        claim = JSON.parse(Buffer.from(payload, "base64url").toString());
      } catch {
        return undefined;
      }
      const fresh = typeof claim.x === "number" && claim.x * 1000 > Date.now();
      return fresh && user !== undefined && claim.u === user.id &&
          claim.n === user.canonicalName && typeof claim.d === "string"
        ? claim.d
        : undefined;
    },

    async issue(user, device) {
      const claim: DeviceClaim = {
        u: user.id,
        n: user.canonicalName,
        d: device ?? b64url(crypto.getRandomValues(new Uint8Array(16))),
        x: Math.floor(Date.now() / 1000) + DEVICE_TTL_SECONDS,
      };
      const payload = b64url(encoder.encode(JSON.stringify(claim)));
      const signature = await crypto.subtle.sign(
        "HMAC",
        await key(),
        encoder.encode(payload),
      );
      return `${payload}.${b64url(new Uint8Array(signature))}`;
    },

    set(c, value) {
      setCookie(c, DEVICE_COOKIE, value, {
        httpOnly: true,
        sameSite: "Strict",
        path: "/api/auth/login",
        secure: secureCookie(c, config),
        maxAge: DEVICE_TTL_SECONDS,
      });
    },
  };
}
