/**
 * Signing in: the API's login, its messages as they are; for a user with a
 * second factor, a second step (a code or a passkey) once the password is
 * right.
 */
import { useState } from "preact/hooks";
import type { Account } from "../../../clients/mod.ts";
import { api, type Failure, MESSAGES, send } from "../api.ts";
import { SecondFactorForm } from "../factor.tsx";
import { Field, Notice, onSubmit, Title, useLoad } from "../ui.tsx";

/**
 * What a sign-in through an identity provider may end with, as the service
 * sends it back (`/admin?error=`). Only these are shown: a link cannot
 * make the page say anything else.
 */
const SIGN_IN_ERRORS: readonly string[] = [
  "Sign-in was cancelled",
  "Sign-in expired, please try again",
  "Identity provider refused the sign-in",
  "No account for this identity",
  "Account disabled",
  "E-mail domain not allowed",
  "Identity provider unavailable",
  "Too many login attempts",
];

/** The error the service sent back with, once; the address loses it. */
function takeSignInError(): string | undefined {
  const params = new URLSearchParams(location.search);
  const error = params.get("error");
  if (error === null) return undefined;
  params.delete("error");
  const rest = params.toString();
  history.replaceState(
    null,
    "",
    `${location.pathname}${rest ? `?${rest}` : ""}${location.hash}`,
  );
  return SIGN_IN_ERRORS.includes(error) ? error : undefined;
}

export function SignIn(
  { ended, onSignedIn }: {
    /** The API's message when a session ended while the console was open. */
    ended?: string;
    onSignedIn: (account: Account) => void;
  },
) {
  const [username, setUsername] = useState("");
  const [password, setPassword] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  // The password was right: the pending login (cookie `mfa`) waits for a factor.
  const [secondStep, setSecondStep] = useState(false);
  const [providerError] = useState(takeSignInError);
  const providers = useLoad(
    (signal) =>
      send(() => api.GET("/api/sso/providers/public", { signal }), signal),
    "",
  );

  const signIn = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() =>
      api.POST("/api/auth/login", { body: { username, password } })
    );
    setBusy(false);
    if (answer.ok) return onSignedIn(answer.data);
    if (
      answer.status === 401 && answer.error === MESSAGES.secondFactorRequired
    ) {
      setPassword("");
      return setSecondStep(true);
    }
    setFailure(answer);
  };

  if (secondStep) {
    return (
      <main id="main" class="signin">
        <Title key="factor">Second factor</Title>
        <p>
          The password of <bdi>{username}</bdi>{" "}
          is right. Now your second factor: a code or a passkey.
        </p>
        <SecondFactorForm
          id="signin"
          submitLabel="Sign in"
          offerPasskey
          submit={(factor) =>
            send(() =>
              api.POST("/api/auth/login/second-factor", { body: factor })
            )}
          options={() =>
            send(() => api.POST("/api/auth/login/second-factor/options"))}
          onDone={onSignedIn}
          onGone={(gone) => {
            // The pending login expired or was used: start again.
            setFailure(gone);
            setSecondStep(false);
          }}
        >
          <button
            type="button"
            class="secondary"
            onClick={() => setSecondStep(false)}
          >
            Back to the password
          </button>
        </SecondFactorForm>
      </main>
    );
  }

  return (
    <main id="main" class="signin">
      <Title key="password">Sign in</Title>
      <p class="muted">User administration</p>
      {ended && !failure && (
        <div class="notice error" role="alert">
          <p>
            <strong>{ended}</strong> Your session has ended: sign in again.
          </p>
        </div>
      )}
      {providerError && !failure && (
        <div class="notice error" role="alert">
          <p>
            <strong>{providerError}</strong>
          </p>
        </div>
      )}
      {failure && <Notice failure={failure} />}
      {providers.reply?.ok && providers.reply.data.length > 0 && (
        <ul class="providers">
          {providers.reply.data.map((p) => (
            <li key={p.id}>
              <a
                class="button secondary"
                href={`/api/sso/${p.id}/start?returnTo=${
                  encodeURIComponent(`/admin${location.hash}`)
                }`}
              >
                Sign in with <bdi>{p.name}</bdi>
              </a>
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={onSubmit(signIn)}>
        <Field label="Username" id="username">
          <input
            id="username"
            name="username"
            autocomplete="username"
            value={username}
            onInput={(e) => setUsername(e.currentTarget.value)}
          />
        </Field>
        <Field label="Password" id="password">
          <input
            id="password"
            name="password"
            type="password"
            autocomplete="current-password"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
