import { hash, verify } from "@node-rs/bcrypt";

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Checks against the hash, or against a dummy one when there is no user, to take the same time. */
  verify(password: string, hash: string | undefined): Promise<boolean>;
}

/**
 * bcrypt on libuv's thread pool, off the event loop. It would silently
 * ignore bytes past 72: the 72-byte rule at the API edge keeps that honest.
 */
export function createPasswordHasher(cost: number): PasswordHasher {
  let dummy: Promise<string> | undefined;
  return {
    hash: (password) => hash(password, cost),
    async verify(password, stored) {
      dummy ??= hash(crypto.randomUUID(), cost);
      const against = stored ?? await dummy;
      const ok = await verify(password, against);
      return ok && stored !== undefined;
    },
  };
}
