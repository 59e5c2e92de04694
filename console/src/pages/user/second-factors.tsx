/**
 * A user's second factors as an admin sees them, and their reset: apart
 * from the signed-in person's own factors page (factors.tsx), which
 * enrols and removes them.
 */
import type { UserDetail } from "../../api.ts";
import { ConfirmButton, Text, Time } from "../../ui.tsx";

/** The user's factors as the API summarises them (never a secret), and the reset. */
export function SecondFactors(
  { user, self, busy, onReset }: {
    user: UserDetail;
    self: boolean;
    busy: boolean;
    /** Absent for someone who may not reset them. */
    onReset?: () => void;
  },
) {
  const { totp, passkeys, recoveryCodesLeft } = user.mfa;
  const any = totp !== null || passkeys.length > 0;
  return (
    <section aria-labelledby="factors-h">
      <h2 id="factors-h">Second factors</h2>
      {!any && <p class="muted">No second factor.</p>}
      {any && (
        <>
          <dl class="facts">
            <dt>Authenticator app</dt>
            <dd>
              {totp
                ? (
                  <>
                    set up <Time iso={totp.enrolledAt} />
                  </>
                )
                : "none"}
            </dd>
            <dt>Passkeys</dt>
            <dd>
              {passkeys.length === 0 && "none"}
              {passkeys.map((p, i) => (
                <span key={p.id}>
                  {i > 0 && "; "}
                  <Text>{p.name}</Text>{" "}
                  <span class="muted">
                    (last used <Time iso={p.lastUsedAt} />)
                  </span>
                </span>
              ))}
            </dd>
            <dt>Recovery codes</dt>
            <dd>{recoveryCodesLeft} left</dd>
          </dl>
          {onReset && (
            <>
              <p>
                For someone who lost their factors: they sign in with the
                password alone and may set up new ones.{" "}
                {self && "Your own sessions end too: you sign in again."}
              </p>
              <ConfirmButton
                label="Reset second factors"
                question={`Remove every factor of ${user.username} and end their sessions?`}
                busy={busy}
                onConfirm={onReset}
              />
            </>
          )}
        </>
      )}
    </section>
  );
}
