import type { Logger } from "../log.ts";
import type { Message } from "./messages.ts";
import type { SessionUser } from "../db/store.ts";

/** What middleware hands to handlers through `c.var`. */
export type AppEnv = {
  Variables: {
    requestId: string;
    log: Logger;
    /** The endpoint's own 500 message, for any failure it did not foresee. */
    failure: Message;
    /** The authenticated caller, fresh from the database on this request. */
    caller: SessionUser;
    /** performance.now() after which no write may start (see `beforeWrite`). */
    writeBy: number;
    /** The SHA-256 of the caller's session token. */
    sessionHash: Uint8Array;
    /** Set when the deadline answered: work still pending is abandoned. */
    expired: boolean;
  };
};
