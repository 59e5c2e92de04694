/**
 * The signed-in person's own second factors: an authenticator app (TOTP,
 * its QR code and secret shown while it is set up), passkeys, and the
 * recovery codes (shown once, when made). Removing a factor and new codes
 * need a recent second factor: `send` asks for it.
 */
import { useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, MESSAGES, type MfaSummary, send } from "../api.ts";
import { passkeysSupported, withPasskey } from "../passkey.ts";
import { href } from "../router.ts";
import {
  ConfirmButton,
  Done,
  Field,
  Notice,
  onSubmit,
  Secret,
  Text,
  Time,
  Title,
  useLoad,
} from "../ui.tsx";

type TotpEnrolment = components["schemas"]["TotpEnrolment"];

export function Factors({ query }: { query: URLSearchParams }) {
  const { reply, reload } = useLoad(
    (signal) => send(() => api.GET("/api/auth/mfa", { signal }), signal),
    "",
  );
  const [codes, setCodes] = useState<string[]>();
  const [done, setDone] = useState<string>();
  const mine = reply?.ok ? reply.data : undefined;
  const hasFactor = !!mine && (mine.totp !== null || mine.passkeys.length > 0);
  const changed = (what: string, newCodes?: string[] | null) => {
    setDone(what);
    if (newCodes) setCodes(newCodes);
    reload();
  };
  return (
    <>
      <Title>My second factors</Title>
      {query.has("required") && mine && !hasFactor && (
        <div class="notice error" role="alert">
          <p>
            <strong>{MESSAGES.enrollmentRequired}</strong>{" "}
            Your account needs a second factor before anything else: set one up
            here.
          </p>
        </div>
      )}
      <p>
        After the password, signing in asks for one of these; so do dangerous
        actions (deleting a user, minting a key…) when the last one was a while
        ago.
      </p>
      {done && <Done>{done}</Done>}
      {codes && (
        <Secret
          label="Recovery codes"
          value={codes.join("\n")}
          onDismiss={() => setCodes(undefined)}
        />
      )}
      {codes && (
        <p>
          Each recovery code works once, in place of a code or a passkey. Keep
          them apart from your devices.{" "}
          {query.has("required") && (
            <a href={href("/users")}>Go on to the users</a>
          )}
        </p>
      )}
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {mine && (
        <>
          <AuthenticatorApp mine={mine} onChange={changed} />
          <Passkeys mine={mine} onChange={changed} />
          {hasFactor && <RecoveryCodes mine={mine} onChange={changed} />}
        </>
      )}
    </>
  );
}

type Changed = (what: string, codes?: string[] | null) => void;

/** The QR code the service drew, as an image: no markup of it enters the page. */
const svgImage = (svg: string) =>
  `data:image/svg+xml;charset=utf-8,${encodeURIComponent(svg)}`;

function AuthenticatorApp(
  { mine, onChange }: { mine: MfaSummary; onChange: Changed },
) {
  const [enrolment, setEnrolment] = useState<TotpEnrolment>();
  const [code, setCode] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const run = async <T,>(
    call: () => Promise<
      { ok: true; data: T } | Failure
    >,
    then: (data: T) => void,
  ) => {
    setBusy(true);
    setFailure(undefined);
    const answer = await call();
    setBusy(false);
    if (answer.ok) then(answer.data);
    else setFailure(answer);
  };
  const begin = () =>
    run(() => send(() => api.POST("/api/auth/mfa/totp")), setEnrolment);
  const confirm = () =>
    run(
      () =>
        send(() =>
          api.POST("/api/auth/mfa/totp/confirm", {
            body: { code: code.trim() },
          })
        ),
      ({ recoveryCodes }) => {
        setEnrolment(undefined);
        setCode("");
        onChange("Authenticator app set up.", recoveryCodes);
      },
    );
  const remove = () =>
    run(
      () => send(() => api.DELETE("/api/auth/mfa/totp")),
      () => onChange("Authenticator app removed."),
    );

  return (
    <section aria-labelledby="totp-h">
      <h2 id="totp-h">Authenticator app</h2>
      {failure && <Notice failure={failure} />}
      {mine.totp && (
        <>
          <p>
            Set up <Time iso={mine.totp.enrolledAt} />.
          </p>
          <ConfirmButton
            label="Remove authenticator app"
            question="Remove the authenticator app?"
            busy={busy}
            onConfirm={remove}
          />
        </>
      )}
      {!mine.totp && !enrolment && (
        <>
          <p class="muted">No authenticator app.</p>
          <button type="button" disabled={busy} onClick={begin}>
            Set up an authenticator app
          </button>
        </>
      )}
      {!mine.totp && enrolment && (
        <div class="enrol">
          <p>
            Scan this QR code with an authenticator app (or{" "}
            <a href={enrolment.otpauthUrl}>open it in the app</a>{" "}
            on this device):
          </p>
          <img
            class="qr"
            src={svgImage(enrolment.qrCodeSvg)}
            alt="QR code of the authenticator app's secret"
            width={200}
            height={200}
          />
          <p>
            Or type its secret:{" "}
            <code class="wrap totp-secret">{enrolment.secret}</code>
          </p>
          <form class="inline" onSubmit={onSubmit(confirm)}>
            <Field
              label="Code from the app"
              id="totp-code"
              hint="The 6 digits it shows now"
            >
              <input
                id="totp-code"
                autocomplete="one-time-code"
                inputMode="numeric"
                maxLength={64}
                aria-describedby="totp-code-hint"
                value={code}
                onInput={(e) => setCode(e.currentTarget.value)}
              />
            </Field>
            <button type="submit" disabled={busy || code.trim() === ""}>
              Confirm
            </button>
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setEnrolment(undefined);
                setFailure(undefined);
              }}
            >
              Cancel
            </button>
          </form>
        </div>
      )}
    </section>
  );
}

function Passkeys(
  { mine, onChange }: { mine: MfaSummary; onChange: Changed },
) {
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const supported = passkeysSupported();

  const add = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await withPasskey(
      "create",
      () => send(() => api.POST("/api/auth/mfa/passkeys/options")),
      (response) =>
        send(() =>
          api.POST("/api/auth/mfa/passkeys", {
            body: { response, ...(name.trim() ? { name: name.trim() } : {}) },
          })
        ),
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setName("");
    onChange(`Passkey ${answer.data.name} added.`, answer.data.recoveryCodes);
  };
  const remove = async (id: number, what: string) => {
    setFailure(undefined);
    const answer = await send(() =>
      api.DELETE("/api/auth/mfa/passkeys/{id}", { params: { path: { id } } })
    );
    if (!answer.ok) return setFailure(answer);
    onChange(`Passkey ${what} removed.`);
  };

  return (
    <section aria-labelledby="passkeys-h">
      <h2 id="passkeys-h">Passkeys</h2>
      {failure && <Notice failure={failure} />}
      {mine.passkeys.length === 0 && <p class="muted">No passkeys.</p>}
      {mine.passkeys.length > 0 && (
        <ul class="cards">
          {mine.passkeys.map((p) => (
            <li key={p.id}>
              <p>
                <strong>
                  <Text>{p.name}</Text>
                </strong>
              </p>
              <p class="muted">
                Added <Time iso={p.createdAt} />; last used{" "}
                <Time iso={p.lastUsedAt} />
              </p>
              <ConfirmButton
                label="Remove"
                question={`Remove ${p.name}?`}
                onConfirm={() => remove(p.id, p.name)}
              />
            </li>
          ))}
        </ul>
      )}
      {supported
        ? (
          <form class="inline" onSubmit={onSubmit(add)}>
            <Field
              label="Passkey name"
              id="passkey-name"
              hint="Optional, to tell them apart: Laptop, Phone…"
            >
              <input
                id="passkey-name"
                maxLength={100}
                dir="auto"
                aria-describedby="passkey-name-hint"
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
              />
            </Field>
            <button type="submit" disabled={busy}>Add a passkey</button>
          </form>
        )
        : (
          <p class="muted">
            This browser cannot make passkeys here (they need HTTPS, or
            localhost).
          </p>
        )}
    </section>
  );
}

function RecoveryCodes(
  { mine, onChange }: { mine: MfaSummary; onChange: Changed },
) {
  const [failure, setFailure] = useState<Failure>();
  const renew = async () => {
    setFailure(undefined);
    const answer = await send(() => api.POST("/api/auth/mfa/recovery-codes"));
    if (!answer.ok) return setFailure(answer);
    onChange("New recovery codes made; the old ones no longer work.", [
      ...answer.data.recoveryCodes,
    ]);
  };
  return (
    <section aria-labelledby="codes-h">
      <h2 id="codes-h">Recovery codes</h2>
      {failure && <Notice failure={failure} />}
      <p>{mine.recoveryCodesLeft} of 10 left.</p>
      <ConfirmButton
        label="New recovery codes"
        question="Replace them? The old ones stop working."
        onConfirm={renew}
      />
    </section>
  );
}
