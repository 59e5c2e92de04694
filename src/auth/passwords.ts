import { hash, verify } from "@node-rs/bcrypt";
import { bcryptSeesWhole } from "../users/account-rules.ts";
import { type HashScheme, isBcrypt, knownHash } from "./hashes.ts";

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /**
   * Checks against the hash, or against a dummy one when there is no user
   * or the password is one bcrypt cannot see whole: the same work either way.
   * A hash of another scheme, imported as given (hashes.ts), is checked by
   * its own algorithm; one of no known scheme against the dummy.
   */
  verify(password: string, hash: string | undefined): Promise<boolean>;
}

/**
 * bcrypt on libuv's thread pool, off the event loop. bcrypt ignores bytes
 * past 72 and stops at NUL, so such a password is never hashed (the account
 * rules refuse it first) and never matches: otherwise `pass\0anything` or a
 * 72-byte password plus anything would log in as the password before it.
 */
export function createPasswordHasher(cost: number): PasswordHasher {
  const dummy = dummyHash(cost);
  return {
    hash(password) {
      if (!bcryptSeesWhole(password)) {
        return Promise.reject(
          new Error("refusing to hash a password bcrypt would truncate"),
        );
      }
      return hash(password, cost);
    },
    async verify(password, stored) {
      if (stored !== undefined && !isBcrypt(stored)) {
        const known = knownHash(stored);
        if (known) return await known.check(password);
        await verify(password, dummy);
        return false;
      }
      const whole = bcryptSeesWhole(password);
      const against = (whole && stored) || dummy;
      const ok = await verify(password, against);
      return ok && whole && stored !== undefined;
    },
  };
}

/**
 * What a password is checked against when there is no hash to check: a
 * bcrypt hash of a random value nobody kept, its cost field set to `cost`.
 * bcrypt does the whole cost's work before it finds no match, as for a real
 * user, and nothing is hashed at startup or on the first login to make it.
 */
const dummyHash = (cost: number) =>
  `$2b$${String(cost).padStart(2, "0")}$${DUMMY_SALT_AND_DIGEST}`;
const DUMMY_SALT_AND_DIGEST =
  "rL60lBa65WZtYM2QmI89X.WlfUKG2zn/R.cpZa33.2kUZ6IEAd3SO";

/** A stored hash of another scheme replaced by bcrypt after a right password. */
export interface PasswordUpgrade {
  passwordHash: string;
  /** The scheme it replaces (recorded as `password.upgraded` `{from}`). */
  from: HashScheme;
  /** The hash it replaces: written only while the row still holds it. */
  replaces: string;
}

/**
 * The bcrypt hash that replaces an imported hash of another scheme, after
 * the password was checked right against it; undefined for a bcrypt hash,
 * and for a password bcrypt cannot see whole (it keeps the hash it has).
 */
export async function upgradeOf(
  passwords: PasswordHasher,
  password: string,
  stored: string,
): Promise<PasswordUpgrade | undefined> {
  if (isBcrypt(stored) || !bcryptSeesWhole(password)) return undefined;
  const known = knownHash(stored);
  if (!known) return undefined;
  return {
    passwordHash: await passwords.hash(password),
    from: known.scheme,
    replaces: stored,
  };
}
