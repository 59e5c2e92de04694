/**
 * Password hashes made by other systems, kept as given at import and
 * checked at login by their own algorithm (docs/migrating.md lists the
 * formats): bcrypt, argon2id and argon2i (PHC), scrypt (PHC), PBKDF2-SHA256
 * (PHC, passlib, Django) and Firebase's scrypt in Supabase Auth's
 * `$fbscrypt$` form. Every check runs off the event loop (libuv's thread
 * pool). A hash whose work factor would take over about a second to check
 * is refused at import (WORK_CEILING), so no login can be made to cost more.
 */
import { verify as argon2Verify } from "@node-rs/argon2";
import {
  createCipheriv,
  pbkdf2,
  scrypt,
  type ScryptOptions,
  timingSafeEqual,
} from "node:crypto";
import { Buffer } from "node:buffer";

export type HashScheme =
  | "bcrypt"
  | "argon2id"
  | "argon2i"
  | "scrypt"
  | "pbkdf2-sha256"
  | "firebase-scrypt";

/**
 * The most work a hash given at import may ask of a login: each bound is
 * about a second on one core of a current server, and 128 MiB of memory at
 * the most; beyond it the hash is `Unsupported password hash`.
 */
export const WORK_CEILING = {
  /** bcrypt's cost (2^cost rounds). */
  bcryptCost: 14,
  /** argon2's memory in KiB (128 MiB) and memory times passes. */
  argon2MemoryKiB: 131_072,
  argon2MemoryTimesPasses: 1_048_576,
  argon2Parallelism: 16,
  /** scrypt's N·r·p (each step mixes 128·r bytes). */
  scryptWork: 2 ** 20,
  /**
   * scrypt's memory as OpenSSL takes it, 128·r·(N + 2 + p) bytes: 128 MiB
   * of mixing (N·r of 2^20) and a margin for its other terms.
   */
  scryptMemoryBytes: 129 * 1024 * 1024,
  /**
   * PBKDF2-SHA256's iterations times its 32-byte blocks (a longer key
   * repeats every iteration once per block).
   */
  pbkdf2IterationBlocks: 2_000_000,
} as const;

/** A stored hash read: its scheme, and how a password is checked against it. */
export interface KnownHash {
  scheme: HashScheme;
  /** Never rejects: a check that fails is a password that does not match. */
  check(password: string): Promise<boolean>;
}

const BCRYPT = /^\$2[aby]\$(\d\d)\$[./A-Za-z0-9]{53}$/;
const B64 = "[A-Za-z0-9+/.]+={0,2}";
const ARGON2 = new RegExp(
  `^\\$(argon2id|argon2i)\\$(?:v=(\\d+)\\$)?m=(\\d+),t=(\\d+),p=(\\d+)\\$(${B64})\\$(${B64})$`,
);
const SCRYPT = new RegExp(
  `^\\$scrypt\\$ln=(\\d+),r=(\\d+),p=(\\d+)\\$(${B64})\\$(${B64})$`,
);
const PBKDF2_PHC = new RegExp(
  `^\\$pbkdf2-sha256\\$i=(\\d+),l=(\\d+)\\$(${B64})\\$(${B64})$`,
);
const PBKDF2_PASSLIB = new RegExp(
  `^\\$pbkdf2-sha256\\$(\\d+)\\$(${B64})\\$(${B64})$`,
);
const PBKDF2_DJANGO = new RegExp(
  `^pbkdf2_sha256\\$(\\d+)\\$([^$]{1,128})\\$(${B64})$`,
);
const FBSCRYPT = new RegExp(
  `^\\$fbscrypt\\$v=1,n=(\\d+),r=(\\d+),p=(\\d+),ss=(${B64}),sk=(${B64})\\$(${B64})\\$(${B64})$`,
);

/** Standard base64, PHC's unpadded form and passlib's `.` for `+` alike. */
const bytes = (text: string) =>
  Buffer.from(text.replaceAll(".", "+"), "base64");

/** Whether both digests are equal, in time that does not depend on where they differ. */
const same = (a: Uint8Array, b: Uint8Array) =>
  a.length === b.length && a.length > 0 && timingSafeEqual(a, b);

const derivePbkdf2 = (
  password: string,
  salt: Uint8Array | string,
  iterations: number,
  length: number,
) =>
  new Promise<Uint8Array>((resolve, reject) =>
    pbkdf2(
      password,
      salt,
      iterations,
      length,
      "sha256",
      (e, key) => e ? reject(e) : resolve(key),
    )
  );

const deriveScrypt = (
  password: string,
  salt: Uint8Array,
  length: number,
  options: ScryptOptions,
) =>
  new Promise<Uint8Array>((resolve, reject) =>
    scrypt(
      password,
      salt,
      length,
      // scryptWithin held the parameters to this.
      { ...options, maxmem: WORK_CEILING.scryptMemoryBytes },
      (e, key) => e ? reject(e) : resolve(key),
    )
  );

const int = (text: string) => Number.parseInt(text, 10);

/** Digests no format makes shorter or longer: a hash outside them is no hash of ours to check. */
const digestFits = (digest: Uint8Array) =>
  digest.length >= 16 && digest.length <= 128;

function pbkdf2Hash(
  iterations: number,
  salt: Uint8Array | string,
  digest: Uint8Array,
): KnownHash | undefined {
  if (
    iterations < 1 || !digestFits(digest) ||
    iterations * Math.ceil(digest.length / 32) >
      WORK_CEILING.pbkdf2IterationBlocks
  ) return undefined;
  return {
    scheme: "pbkdf2-sha256",
    check: async (password) =>
      same(
        await derivePbkdf2(password, salt, iterations, digest.length),
        digest,
      ),
  };
}

/**
 * Within the ceiling, and parameters scrypt itself takes (OpenSSL refuses
 * N of 2^(16·r) or more), so that a login never finds them refused.
 */
function scryptWithin(ln: number, r: number, p: number) {
  const n = 2 ** ln;
  return ln >= 1 && r >= 1 && p >= 1 && ln < 16 * r &&
    n * r * p <= WORK_CEILING.scryptWork &&
    128 * r * (n + 2 + p) <= WORK_CEILING.scryptMemoryBytes;
}

/**
 * The hash read, when it is one of the formats and within the ceiling;
 * undefined otherwise (`Unsupported password hash` at import; at login, a
 * stored hash the ceiling refuses, one kept from before it, is checked as
 * no hash: a wrong password). Parsing does no hashing.
 */
export function knownHash(stored: string): KnownHash | undefined {
  const known = readHash(stored);
  return known && {
    scheme: known.scheme,
    // A library's refusal is no 500 at login: the password does not match.
    check: (password) => known.check(password).catch(() => false),
  };
}

function readHash(stored: string): KnownHash | undefined {
  if (stored.length > 1024) return undefined;
  let m: RegExpExecArray | null;
  if ((m = BCRYPT.exec(stored))) {
    const cost = int(m[1]);
    // The bcrypt check itself is passwords.ts's (dummy work, 72 bytes).
    return cost >= 4 && cost <= WORK_CEILING.bcryptCost
      ? { scheme: "bcrypt", check: () => Promise.resolve(false) }
      : undefined;
  }
  if ((m = ARGON2.exec(stored))) {
    const [, scheme, version, mText, tText, pText, , digest] = m;
    const [memory, passes, lanes] = [int(mText), int(tText), int(pText)];
    if (
      (version !== undefined && version !== "16" && version !== "19") ||
      memory > WORK_CEILING.argon2MemoryKiB ||
      memory * passes > WORK_CEILING.argon2MemoryTimesPasses ||
      lanes > WORK_CEILING.argon2Parallelism || passes < 1 || lanes < 1 ||
      memory < 8 * lanes || !digestFits(bytes(digest))
    ) return undefined;
    return {
      scheme: scheme as "argon2id" | "argon2i",
      check: (password) => argon2Verify(stored, password),
    };
  }
  if ((m = SCRYPT.exec(stored))) {
    const [, lnText, rText, pText, salt, digestText] = m;
    const [ln, r, p] = [int(lnText), int(rText), int(pText)];
    const digest = bytes(digestText);
    if (!scryptWithin(ln, r, p) || !digestFits(digest)) return undefined;
    const n = 2 ** ln;
    return {
      scheme: "scrypt",
      check: async (password) =>
        same(
          await deriveScrypt(password, bytes(salt), digest.length, {
            N: n,
            r,
            p,
          }),
          digest,
        ),
    };
  }
  if ((m = PBKDF2_PHC.exec(stored))) {
    const digest = bytes(m[4]);
    if (int(m[2]) !== digest.length) return undefined;
    return pbkdf2Hash(int(m[1]), bytes(m[3]), digest);
  }
  if ((m = PBKDF2_PASSLIB.exec(stored))) {
    return pbkdf2Hash(int(m[1]), bytes(m[2]), bytes(m[3]));
  }
  if ((m = PBKDF2_DJANGO.exec(stored))) {
    // Django salts with the text itself, not its decoding.
    return pbkdf2Hash(int(m[1]), m[2], bytes(m[3]));
  }
  if ((m = FBSCRYPT.exec(stored))) {
    const [, lnText, rText, pText, separator, signerKey, salt, digestText] = m;
    const [ln, r, p] = [int(lnText), int(rText), int(pText)];
    const digest = bytes(digestText);
    if (!scryptWithin(ln, r, p) || !digestFits(digest)) return undefined;
    const n = 2 ** ln;
    return {
      scheme: "firebase-scrypt",
      check: async (password) => {
        // Firebase: scrypt of the password under salt + separator is the
        // AES-256-CTR key (zero IV) that encrypts the project's signer key.
        const key = await deriveScrypt(
          password,
          Buffer.concat([bytes(salt), bytes(separator)]),
          32,
          { N: n, r, p },
        );
        const cipher = createCipheriv("aes-256-ctr", key, new Uint8Array(16));
        const signed = Buffer.concat([
          cipher.update(bytes(signerKey)),
          cipher.final(),
        ]);
        return same(signed.subarray(0, digest.length), digest);
      },
    };
  }
  return undefined;
}

/** Whether the hash is bcrypt's, which logins keep as it is. */
export const isBcrypt = (stored: string) => BCRYPT.test(stored);
