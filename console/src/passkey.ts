/**
 * Passkeys through the browser's WebAuthn (with @simplewebauthn/browser,
 * the counterpart of the server's library): options from the API, the
 * browser makes or signs a credential, its JSON goes back to the API.
 */
import {
  browserSupportsWebAuthn,
  startAuthentication,
  startRegistration,
} from "@simplewebauthn/browser";
import { REFUSED, type Reply } from "./api.ts";

/** Whether this browser can use passkeys at all (a secure context with WebAuthn). */
export const passkeysSupported = browserSupportsWebAuthn;

/** WebAuthn JSON, as the client types it (an object it does not look into). */
type Json = Record<string, never>;

/** Why the browser declined, in words (its own messages name specifications). */
function declined(e: unknown): string {
  const name = e instanceof Error ? e.name : "";
  if (name === "NotAllowedError" || name === "AbortError") {
    return "No passkey was given (cancelled, timed out or not allowed).";
  }
  if (name === "InvalidStateError") {
    return "This authenticator holds one of your passkeys already.";
  }
  return e instanceof Error ? e.message : String(e);
}

/**
 * Asks the API for options (`options`), has the browser sign with a passkey
 * (`get`) or make one (`create`), and sends its JSON (`finish`): the API's
 * answer, or a failure of status {@link REFUSED} when the browser declined.
 */
export async function withPasskey<T>(
  kind: "get" | "create",
  options: () => Promise<Reply<unknown>>,
  finish: (credential: Json) => Promise<Reply<T>>,
): Promise<Reply<T>> {
  const got = await options();
  if (!got.ok) return got;
  let credential;
  try {
    // The options are the server library's own JSON, as these expect.
    credential = kind === "get"
      ? await startAuthentication({ optionsJSON: got.data as never })
      : await startRegistration({ optionsJSON: got.data as never });
  } catch (e) {
    return { ok: false, status: REFUSED, error: declined(e) };
  }
  return await finish(credential as unknown as Json);
}
