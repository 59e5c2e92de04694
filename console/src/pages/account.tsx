/**
 * The signed-in person's own page, whatever their role: their profile as
 * the service has it (read-only here), their own password, their sessions,
 * and where their second factors are.
 */
import { useState } from "preact/hooks";
import type { Account } from "../../../clients/mod.ts";
import { api, type Failure, send } from "../api.ts";
import { FACTORS_PATH } from "../pages.tsx";
import { href } from "../router.ts";
import { Done, Field, Notice, onSubmit, Text, Title } from "../ui.tsx";
import { OwnSessions } from "./user/sessions.tsx";

export function AccountPage({ me }: { me: Account }) {
  return (
    <>
      <Title>My account</Title>
      <section aria-labelledby="profile-h">
        <h2 id="profile-h">Profile</h2>
        <dl class="facts">
          <dt>Username</dt>
          <dd>
            <Text>{me.username}</Text>
          </dd>
          <dt>Name</dt>
          <dd>
            <Text>{me.name}</Text>
          </dd>
          <dt>E-mail</dt>
          <dd>
            <Text>{me.email}</Text>
          </dd>
          <dt>Role</dt>
          <dd>{me.role}</dd>
        </dl>
        <p class="muted">
          An administrator changes these.
        </p>
      </section>
      <OwnPassword />
      <OwnSessions />
      <section aria-labelledby="factors-h">
        <h2 id="factors-h">Second factors</h2>
        <p>
          <a href={href(FACTORS_PATH)}>Manage my second factors</a>{" "}
          (authenticator app, passkeys, recovery codes).
        </p>
      </section>
    </>
  );
}

/** Checked here before the call: the API sees only the new password once. */
const MISMATCH = "The new password and its confirmation differ";

function OwnPassword() {
  const [current, setCurrent] = useState("");
  const [next, setNext] = useState("");
  const [confirm, setConfirm] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState(false);
  const change = async () => {
    setDone(false);
    setFailure(undefined);
    if (next !== confirm) {
      return setFailure({ ok: false, status: 400, error: MISMATCH });
    }
    setBusy(true);
    const answer = await send(() =>
      api.POST("/api/auth/password", {
        body: { currentPassword: current, newPassword: next },
      })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setCurrent("");
    setNext("");
    setConfirm("");
    setDone(true);
  };
  return (
    <section aria-labelledby="own-password-h">
      <h2 id="own-password-h">Change my password</h2>
      {failure && <Notice failure={failure} />}
      {done && (
        <Done>
          Password changed. Your other sessions have been signed out; this one
          stays.
        </Done>
      )}
      <form onSubmit={onSubmit(change)}>
        <Field label="Current password" id="current-password">
          <input
            id="current-password"
            type="password"
            autocomplete="current-password"
            required
            value={current}
            onInput={(e) => setCurrent(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="New password"
          id="own-new-password"
          hint="At least 8 characters, at most 72 bytes."
        >
          <input
            id="own-new-password"
            type="password"
            autocomplete="new-password"
            aria-describedby="own-new-password-hint"
            required
            value={next}
            onInput={(e) => setNext(e.currentTarget.value)}
          />
        </Field>
        <Field label="Confirm new password" id="confirm-password">
          <input
            id="confirm-password"
            type="password"
            autocomplete="new-password"
            required
            value={confirm}
            onInput={(e) => setConfirm(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy}>Change password</button>
      </form>
    </section>
  );
}
