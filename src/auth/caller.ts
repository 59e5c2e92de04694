import type { Account } from "../users/user.ts";
import type { Access } from "./permissions.ts";

/**
 * Who makes a request: the account behind its session or its API key,
 * fresh from the database, and that credential: a session named by its
 * token's SHA-256, or a key by its id. A write on the caller's behalf
 * re-checks both inside its own transaction. `access`: what the caller may
 * do, resolved in the same lookup (permissions.ts).
 */
export type Caller =
  & { account: Account; access: Access }
  & (
    | { session: Uint8Array; keyId?: never; secondFactor?: SecondFactorState }
    | { keyId: number; session?: never; secondFactor?: never }
  );

/** A session's second factor: whether its user has one, and how long ago the session passed one. */
export interface SecondFactorState {
  enrolled: boolean;
  /** Seconds; null: this session never passed one. */
  age: number | null;
}
