/**
 * The console's one way to the API: the typed client of `clients/` over
 * this page's own origin (the browser sends the session cookie itself),
 * and `send`, which turns every answer into a {@link Reply} the pages show
 * as it is: the API's message, or the console's words for an answer that
 * never came.
 */
import {
  createUserAdminClient,
  type ErrorMessage,
  nextLink,
  result,
  UnexpectedResponseError,
} from "../../clients/mod.ts";

export type {
  ApiKey,
  AuditAction,
  AuditRecord,
  DeliveryAttempt,
  MfaSummary,
  NewApiKey,
  Role,
  Session,
  User,
  UserDetail,
  UserListItem,
  Webhook,
} from "../../clients/mod.ts";

/** Said when no answer came at all (the service or the network is down). */
export const UNREACHABLE = "The service could not be reached.";

/**
 * The contract's messages the console acts on, typed against the client:
 * a message the API renames fails the type check here.
 */
export const MESSAGES = {
  /** A right password of a user with a factor: the login's second step follows. */
  secondFactorRequired: "Second factor required" satisfies ErrorMessage<
    "/api/auth/login",
    "post"
  >,
  /** A wrong second factor: refused, the session (or pending login) stays. */
  invalidCode: "Invalid code" satisfies ErrorMessage<
    "/api/auth/step-up",
    "post"
  >,
  /** A wrong current password at one's own change: refused, the session stays. */
  currentPasswordIncorrect:
    "Current password is incorrect" satisfies ErrorMessage<
      "/api/auth/password",
      "post"
    >,
  /** A dangerous action without a recent second factor: step up, then again. */
  recentSecondFactorRequired:
    "Recent second factor required" satisfies ErrorMessage<
      "/api/users/{id}/mfa",
      "delete"
    >,
  /** MFA_REQUIRED_FOR_ADMINS and an admin without a factor: enrol first. */
  enrollmentRequired:
    "Second factor enrollment required" satisfies ErrorMessage<
      "/api/users",
      "get"
    >,
} as const;

/** Calls that may answer 401 without ending the session (signing in). */
const SIGN_IN = /^\/api\/auth\/(login|me)\b/;

type SignedOutListener = (message: string) => void;
const signedOutListeners = new Set<SignedOutListener>();

/** Runs `listener` whenever an answer says the session is gone (401). */
export function onSignedOut(listener: SignedOutListener): () => void {
  signedOutListeners.add(listener);
  return () => signedOutListeners.delete(listener);
}

/** Tells every listener that the session ended, with the API's message. */
export function signedOut(message: string) {
  for (const listener of signedOutListeners) listener(message);
}

export const api = createUserAdminClient({ baseUrl: location.origin });

// Any call but signing in that answers 401 means the session ended (expired,
// signed out elsewhere, user disabled or deleted): back to the sign-in page.
// A wrong code at a step-up, and a wrong current password at one's own
// change, are 401s too, but the session stays.
api.use({
  async onResponse({ request, response }) {
    const path = new URL(request.url).pathname;
    if (response.status === 401 && !SIGN_IN.test(path)) {
      const body = await response.clone().json().catch(() => ({}));
      const error = typeof body.error === "string"
        ? body.error
        : "Unauthorised";
      const sessionStays = error === MESSAGES.invalidCode ||
        error === MESSAGES.currentPasswordIncorrect;
      if (!sessionStays) signedOut(error);
    }
    return response;
  },
});

/** Asks the person for a second factor; true once the session has a recent one. */
export type StepUp = () => Promise<boolean>;
let stepUpWith: StepUp | undefined;
let steppingUp: Promise<boolean> | undefined;

/**
 * Who asks for the step-up when an action answers 403 `Recent second
 * factor required` (the console's dialog); `send` then runs the action again.
 */
export function onStepUp(ask: StepUp): () => void {
  stepUpWith = ask;
  return () => {
    if (stepUpWith === ask) stepUpWith = undefined;
  };
}

/** One question at a time: calls refused together wait for the same answer. */
function stepUp(): Promise<boolean> {
  if (!stepUpWith) return Promise.resolve(false);
  return steppingUp ??= stepUpWith().finally(() => steppingUp = undefined);
}

type EnrolListener = () => void;
const enrolListeners = new Set<EnrolListener>();

/** Runs `listener` whenever an answer says the person must enrol a factor first. */
export function onEnrollmentRequired(listener: EnrolListener): () => void {
  enrolListeners.add(listener);
  return () => enrolListeners.delete(listener);
}

/** What a page shows of an answer. */
export type Reply<T> =
  | { ok: true; status: number; data: T; headers: Headers }
  | Failure;

/** A failed call: status 0 when no answer came, {@link REFUSED} when the browser declined. */
export interface Failure {
  ok: false;
  status: number;
  /** The API's message, {@link UNREACHABLE}, or why the browser declined. */
  error: string;
  /** Seconds to wait, from a 429's `Retry-After`. */
  retryAfter?: number;
}

/** The status of a {@link Failure} that never reached the API: the browser declined (a passkey not given). */
export const REFUSED = -1;

type Call<T> = () => Promise<{ data?: T; error?: unknown; response: Response }>;

/**
 * Runs one call of the typed client (`api.GET(...)` and friends) and
 * answers its {@link Reply}; never throws, except when `signal` aborted it.
 * An action that needs a recent second factor asks for it (see
 * {@link onStepUp}) and, given it, runs once more.
 */
export async function send<T>(
  call: Call<T>,
  signal?: AbortSignal,
): Promise<Reply<T>> {
  const answer = await sendOnce(call, signal);
  if (answer.ok || answer.status !== 403) return answer;
  if (answer.error === MESSAGES.recentSecondFactorRequired) {
    return await stepUp() ? await sendOnce(call, signal) : answer;
  }
  if (answer.error === MESSAGES.enrollmentRequired) {
    for (const listener of enrolListeners) listener();
  }
  return answer;
}

async function sendOnce<T>(
  call: Call<T>,
  signal?: AbortSignal,
): Promise<Reply<T>> {
  let answer;
  try {
    answer = await call();
  } catch (e) {
    if (signal?.aborted) throw e;
    return { ok: false, status: 0, error: UNREACHABLE };
  }
  const { response } = answer;
  try {
    const outcome = result(
      answer as { data?: T; error?: { error: string }; response: Response },
    );
    if (outcome.ok) {
      return { ...outcome, headers: response.headers };
    }
    const failure: Failure = {
      ok: false,
      status: outcome.status,
      error: outcome.error ?? `${outcome.status} ${response.statusText}`,
    };
    const retryAfter = Number(response.headers.get("retry-after"));
    if (response.status === 429 && retryAfter > 0) {
      failure.retryAfter = retryAfter;
    }
    return failure;
  } catch (e) {
    // Not the API's answer (a proxy's error page, say).
    if (!(e instanceof UnexpectedResponseError)) throw e;
    return {
      ok: false,
      status: e.status,
      error: e.status >= 500
        ? UNREACHABLE
        : `${e.status} ${response.statusText}`,
    };
  }
}

/** The `after` or `before` cursor of an answer's `next` link, if any. */
export function nextCursor(
  headers: Headers,
  name: "after" | "before",
): string | undefined {
  return nextLink(headers.get("link"))?.searchParams.get(name) ?? undefined;
}
