/**
 * The console's one way to the API: the typed client of `clients/` over
 * this page's own origin (the browser sends the session cookie itself),
 * and `send`, which turns every answer into a {@link Reply} the pages show
 * as it is: the API's message, or the console's words for an answer that
 * never came.
 */
import {
  createUserAdminClient,
  nextLink,
  result,
  UnexpectedResponseError,
} from "../../clients/mod.ts";

export type {
  ApiKey,
  AuditAction,
  AuditRecord,
  DeliveryAttempt,
  NewApiKey,
  Role,
  Session,
  User,
  UserDetail,
  Webhook,
} from "../../clients/mod.ts";

/** Said when no answer came at all (the service or the network is down). */
export const UNREACHABLE = "The service could not be reached.";

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
api.use({
  async onResponse({ request, response }) {
    const path = new URL(request.url).pathname;
    if (response.status === 401 && !SIGN_IN.test(path)) {
      const body = await response.clone().json().catch(() => ({}));
      signedOut(typeof body.error === "string" ? body.error : "Unauthorised");
    }
    return response;
  },
});

/** What a page shows of an answer. */
export type Reply<T> =
  | { ok: true; status: number; data: T; headers: Headers }
  | Failure;

/** A failed call: status 0 when no answer came. */
export interface Failure {
  ok: false;
  status: number;
  /** The API's message, or {@link UNREACHABLE}. */
  error: string;
  /** Seconds to wait, from a 429's `Retry-After`. */
  retryAfter?: number;
}

/**
 * Runs one call of the typed client (`api.GET(...)` and friends) and
 * answers its {@link Reply}; never throws, except when `signal` aborted it.
 */
export async function send<T>(
  call: () => Promise<{ data?: T; error?: unknown; response: Response }>,
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
