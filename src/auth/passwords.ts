import { hash, verify } from "@node-rs/bcrypt";
import { bcryptSeesWhole } from "../users/account-rules.ts";

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /**
   * Checks against the hash, or against a dummy one when there is no user
   * or the password is one bcrypt cannot see whole: the same work either way.
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
  let dummy: Promise<string> | undefined;
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
      dummy ??= hash(crypto.randomUUID(), cost);
      const whole = bcryptSeesWhole(password);
      const against = (whole && stored) || await dummy;
      const ok = await verify(password, against);
      return ok && whole && stored !== undefined;
    },
  };
}
