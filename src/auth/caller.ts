import type { Account } from "../users/user.ts";

/**
 * Who makes a request: the account behind its session or its API key,
 * fresh from the database, and that credential: a session named by its
 * token's SHA-256, or a key by its id. A write on the caller's behalf
 * re-checks both inside its own transaction.
 */
export type Caller =
  & { account: Account }
  & (
    | { session: Uint8Array; keyId?: never }
    | { keyId: number; session?: never }
  );
