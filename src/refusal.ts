/**
 * The one error type of the service: a request refused for a reason of one
 * closed catalogue, with words (`detail`) where the reason alone does not
 * say enough (which SCIM attribute, which filter token). Every layer makes
 * it (the store, the account write path, SCIM's parsers, the filter
 * parser); each surface renders it: the API as the route's declared check
 * (`{error}`, endpoint.ts), SCIM as RFC 7644's error schema (scim/errors.ts),
 * an import as its line's error (imports/line-error.ts). It is returned,
 * not thrown, so a handler's type says which refusals its route declares.
 * Failures nothing foresaw (a deadline, a bug) stay exceptions, answered
 * by the one error handler.
 *
 * Imports nothing of the service: every layer may use it.
 */

/** Every reason a request can be refused for. */
export const REASONS = [
  // The caller, found gone or demoted by the write itself.
  "caller_gone",
  "caller_not_permitted",
  "caller_outranked",
  "caller_out_of_reach",
  // What the store or a handler finds.
  "not_found",
  "user_not_found",
  "session_not_found",
  "duplicate",
  "precondition_failed",
  "managed_elsewhere",
  "too_many",
  "too_large",
  "too_many_streams",
  "history_gone",
  "target_refused",
  "beyond_held",
  "role_assigned",
  "group_not_found",
  "provider_owned",
  // Logging in and second factors.
  "invalid_credentials",
  "disabled",
  "throttled",
  "second_factor_required",
  "invalid_code",
  "invalid_passkey",
  "no_factor",
  "enrolled",
  "provider_only",
  "wrong_password",
  "no_password",
  // Webhooks.
  "nothing_to_retry",
  // RFC 7644's kinds, of what a SCIM request says.
  "invalidValue",
  "invalidSyntax",
  "invalidFilter",
  "invalidPath",
  "noTarget",
  "mutability",
] as const;

export type Reason = typeof REASONS[number];

/** A request refused for `reason`, and (optionally) why in words. */
class Refused<R extends Reason> {
  constructor(readonly reason: R, readonly detail?: string) {}
}

/**
 * A refusal for one of the reasons `R`: a union of one type per reason, so
 * a test of `reason` narrows it.
 */
export type Refusal<R extends Reason = Reason> = R extends Reason ? Refused<R>
  : never;

/** Refuses for `reason`, with `detail` in words when the reason needs them. */
export const refuse = <const R extends Reason>(
  reason: R,
  detail?: string,
): Refusal<R> => new Refused(reason, detail) as Refusal<R>;

export const isRefusal = (x: unknown): x is Refusal => x instanceof Refused;

/** Whether `x` is a refusal for one of `reasons`. */
export const refusedFor = <const R extends Reason>(
  x: unknown,
  reasons: readonly R[],
): x is Refusal<R> =>
  x instanceof Refused && (reasons as readonly Reason[]).includes(x.reason);
