/**
 * Asking for a second factor: a code (TOTP or recovery code) or a passkey,
 * at sign-in's second step and at a step-up, with the API's answers
 * (`Invalid code`, 429) shown as they are and the next try open.
 */
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";
import type { SecondFactor } from "../../clients/mod.ts";
import {
  api,
  type Failure,
  MESSAGES,
  onStepUp,
  type Reply,
  send,
} from "./api.ts";
import { passkeysSupported, withPasskey } from "./passkey.ts";
import { Field, Notice, onSubmit } from "./ui.tsx";

export function SecondFactorForm<T>(
  { id, submitLabel, offerPasskey, submit, options, onDone, onGone, children }:
    {
      /** Prefix of the form's element ids. */
      id: string;
      submitLabel: string;
      /** Whether to offer a passkey (and the browser can use one). */
      offerPasskey: boolean;
      /** Sends `{code}` or `{passkey}`. */
      submit: (factor: SecondFactor) => Promise<Reply<T>>;
      /** The passkey options of the same operation. */
      options: () => Promise<Reply<unknown>>;
      onDone: (data: T) => void;
      /** A 401 that is not `Invalid code`: what the form was for is gone. */
      onGone?: (failure: Failure) => void;
      /** More buttons beside the form's own (a way out). */
      children?: ComponentChildren;
    },
) {
  const [code, setCode] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const input = useRef<HTMLInputElement>(null);

  const answered = (answer: Reply<T>) => {
    setBusy(false);
    if (answer.ok) return onDone(answer.data);
    if (
      answer.status === 401 && answer.error !== MESSAGES.invalidCode && onGone
    ) {
      return onGone(answer);
    }
    setFailure(answer);
    setCode("");
    input.current?.focus();
  };
  const withCode = async () => {
    setBusy(true);
    setFailure(undefined);
    answered(await submit({ code: code.trim() }));
  };
  const withKey = async () => {
    setBusy(true);
    setFailure(undefined);
    answered(
      await withPasskey(
        "get",
        options,
        (passkey) => submit({ passkey }),
      ),
    );
  };

  return (
    <>
      {failure && <Notice failure={failure} />}
      <form onSubmit={onSubmit(withCode)}>
        <Field
          label="Code"
          id={`${id}-code`}
          hint="6 digits from your authenticator app, or one of your recovery codes"
        >
          <input
            ref={input}
            id={`${id}-code`}
            name="code"
            autocomplete="one-time-code"
            autoFocus
            autocapitalize="off"
            spellcheck={false}
            maxLength={64}
            aria-describedby={`${id}-code-hint`}
            value={code}
            onInput={(e) => setCode(e.currentTarget.value)}
          />
        </Field>
        <div class="actions">
          <button type="submit" disabled={busy || code.trim() === ""}>
            {submitLabel}
          </button>
          {offerPasskey && passkeysSupported() && (
            <button
              type="button"
              class="secondary"
              disabled={busy}
              onClick={withKey}
            >
              Use a passkey
            </button>
          )}
          {children}
        </div>
      </form>
    </>
  );
}

/**
 * The step-up: when an action answers 403 `Recent second factor required`,
 * a modal dialog asks for a factor (`POST /api/auth/step-up`); `send` then
 * runs the action again. Cancelling leaves the action's 403 shown.
 */
export function StepUpDialog() {
  const [asking, setAsking] = useState(false);
  const [hasPasskeys, setHasPasskeys] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);
  const answer = useRef<((ok: boolean) => void) | undefined>(undefined);

  useEffect(() => {
    const off = onStepUp(() =>
      new Promise<boolean>((done) => {
        answer.current = done;
        setAsking(true);
      })
    );
    // Signed out meanwhile: the action waiting for the answer gets a no.
    return () => {
      off();
      answer.current?.(false);
    };
  }, []);
  useEffect(() => {
    if (!asking) return;
    dialog.current?.showModal();
    // Offer a passkey only to someone who has one.
    send(() => api.GET("/api/auth/mfa")).then((mine) =>
      setHasPasskeys(mine.ok && mine.data.passkeys.length > 0)
    );
  }, [asking]);

  const close = (ok: boolean) => {
    dialog.current?.close();
    answer.current?.(ok);
    answer.current = undefined;
    setAsking(false);
  };

  return (
    <dialog
      ref={dialog}
      class="step-up"
      aria-labelledby="step-up-title"
      onCancel={(e) => {
        e.preventDefault();
        close(false);
      }}
    >
      {asking && (
        <>
          <h2 id="step-up-title">Confirm it is you</h2>
          <p>
            This action needs a recent second factor. Once confirmed, it goes
            ahead.
          </p>
          <SecondFactorForm
            id="step-up"
            submitLabel="Confirm"
            offerPasskey={hasPasskeys}
            submit={(factor) =>
              send(() => api.POST("/api/auth/step-up", { body: factor }))}
            options={() => send(() => api.POST("/api/auth/step-up/options"))}
            onDone={() => close(true)}
          >
            <button
              type="button"
              class="secondary"
              onClick={() => close(false)}
            >
              Cancel
            </button>
          </SecondFactorForm>
        </>
      )}
    </dialog>
  );
}
