import type { Account } from "../users/user.ts";

/**
 * Who makes a request: the account behind its session, fresh from the
 * database, and that session, named by its token's SHA-256. A write on the
 * caller's behalf re-checks both inside its own transaction.
 */
export interface Caller {
  account: Account;
  session: Uint8Array;
}
