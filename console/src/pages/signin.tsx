/** Signing in: the API's login, its messages as they are. */
import { useState } from "preact/hooks";
import type { Account } from "../../../clients/mod.ts";
import { api, type Failure, send } from "../api.ts";
import { Field, Notice, onSubmit, Title } from "../ui.tsx";

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

  const signIn = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() =>
      api.POST("/api/auth/login", { body: { username, password } })
    );
    setBusy(false);
    if (answer.ok) onSignedIn(answer.data);
    else setFailure(answer);
  };

  return (
    <main id="main" class="signin">
      <Title>Sign in</Title>
      <p class="muted">User administration</p>
      {ended && !failure && (
        <div class="notice error" role="alert">
          <p>
            <strong>{ended}</strong> Your session has ended: sign in again.
          </p>
        </div>
      )}
      {failure && <Notice failure={failure} />}
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
