import type { Caller } from "../auth/caller.ts";
import type { Need } from "../auth/permissions.ts";
import type { Sessions } from "../auth/session.ts";
import type { Logger } from "../log.ts";
import type { Message } from "./messages.ts";
import type { ErrorForm } from "./openapi.ts";

/** What middleware hands to guards and handlers through `c.var`. */
export type AppEnv = {
  Variables: {
    requestId: string;
    log: Logger;
    /** The session service the app was built with, for the guards. */
    sessions: Sessions;
    /**
     * The endpoint's own 500 message, for any failure it did not foresee;
     * unset outside the declared endpoints (the error handler then answers
     * the contract's generic one).
     */
    failure: Message;
    /** The authenticated caller, fresh from the database on this request. */
    caller: Caller;
    /** What the caller's writes re-check they still hold: the route's permission (guards.ts's `permitted`). */
    needs: readonly Need[];
    /** performance.now() after which no write may begin (the store checks it). */
    writeBy: number;
    /** Set when the deadline answered: work still pending is abandoned. */
    expired: boolean;
    /** How the route answers its checks, when not as `{error}` (its `errorForm`). */
    errorForm: ErrorForm;
    /** What an error answer of that form says of the failure in particular. */
    errorDetail: string;
  };
};
