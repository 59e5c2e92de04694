/** Pieces every page uses: notices, fields, times, secrets, confirmations, loading. */
import type { ComponentChildren } from "preact";
import { useCallback, useEffect, useRef, useState } from "preact/hooks";
import type { Failure, Reply } from "./api.ts";

/** A failed call in words: the API's message as it is, and what may help. */
export function Notice(
  { failure, onRetry, retryLabel = "Try again", children }: {
    failure: Failure;
    onRetry?: () => void;
    retryLabel?: string;
    children?: ComponentChildren;
  },
) {
  return (
    <div class="notice error" role="alert">
      <p>
        <strong>{failure.error}</strong>
        {failure.status === 0 && " Check the connection, then try again."}
        {failure.retryAfter !== undefined &&
          ` Try again in ${failure.retryAfter} s.`}
      </p>
      {children}
      {onRetry && <button type="button" onClick={onRetry}>{retryLabel}</button>}
    </div>
  );
}

/**
 * A page of one thing (a user, a group, an import) that did not load: a 404
 * names it not found; anything else may be tried again.
 */
export function NotLoaded(
  { failure, thing, back, onRetry }: {
    failure: Failure;
    /** `User`: the title, and `User not found`. */
    thing: string;
    /** Where the page came from, e.g. `<a href="#/users">Back to users</a>`. */
    back: ComponentChildren;
    onRetry: () => void;
  },
) {
  const gone = failure.status === 404;
  return (
    <>
      <Title>{gone ? `${thing} not found` : thing}</Title>
      <Notice failure={failure} onRetry={gone ? undefined : onRetry} />
      <p>{back}</p>
    </>
  );
}

/** A success or piece of news, read out politely. */
export function Done({ children }: { children: ComponentChildren }) {
  return <p class="notice ok" role="status">{children}</p>;
}

/** The page's heading; focused when the page opens, for screen readers and the keyboard. */
export function Title({ children }: { children: ComponentChildren }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return <h1 tabIndex={-1} ref={ref}>{children}</h1>;
}

/** `toLocaleString()`'s form, made once: a formatter per call costs a list of hundreds dearly. */
const LOCAL_TIME = new Intl.DateTimeFormat(undefined, {
  year: "numeric",
  month: "numeric",
  day: "numeric",
  hour: "numeric",
  minute: "numeric",
  second: "numeric",
});

/** A time from the API, in the reader's own zone and language. */
export function Time({ iso }: { iso: string | null | undefined }) {
  if (!iso) return <span class="muted">never</span>;
  return (
    <time dateTime={iso} title={iso}>{LOCAL_TIME.format(new Date(iso))}</time>
  );
}

/** Text a person typed (names may be right-to-left or emoji), isolated from its surroundings. */
export function Text({ children }: { children: string | null | undefined }) {
  return <bdi>{children ?? ""}</bdi>;
}

/** A labelled input; its id ties the label to it. */
export function Field(
  { label, id, hint, children }: {
    label: string;
    id: string;
    hint?: string;
    children: ComponentChildren;
  },
) {
  return (
    <div class="field">
      <label for={id}>{label}</label>
      {children}
      {hint && <small id={`${id}-hint`}>{hint}</small>}
    </div>
  );
}

/**
 * A secret the API shows this once, with a way to copy it; several lines
 * (recovery codes) show as one a line.
 */
export function Secret(
  { label, value, onDismiss }: {
    label: string;
    value: string;
    onDismiss: () => void;
  },
) {
  const [copied, setCopied] = useState(false);
  const field = useRef<HTMLInputElement & HTMLTextAreaElement>(null);
  useEffect(() => field.current?.select(), []);
  const copy = async () => {
    field.current?.select();
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      // No clipboard access: the text stays selected for Ctrl+C.
    }
  };
  const lines = value.split("\n").length;
  const shown = {
    ref: field,
    readOnly: true,
    value,
    "aria-label": label,
    class: "mono",
    spellcheck: false,
  };
  return (
    <div class="notice secret" role="status">
      <p>
        <strong>{label}</strong> {lines > 1 ? "They are" : "It is"}{" "}
        shown this once: copy {lines > 1 ? "them" : "it"} now.
      </p>
      {lines > 1 ? <textarea rows={lines} {...shown} /> : <input {...shown} />}
      <div class="actions">
        <button type="button" onClick={copy}>
          {copied ? "Copied" : "Copy"}
        </button>
        <button type="button" class="secondary" onClick={onDismiss}>
          Done
        </button>
      </div>
    </div>
  );
}

/** A button that asks once more before doing something that cannot be undone. */
export function ConfirmButton(
  { label, question, onConfirm, busy }: {
    label: string;
    question: string;
    onConfirm: () => void;
    busy?: boolean;
  },
) {
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  if (!asking) {
    return (
      <button
        type="button"
        class="danger"
        disabled={busy}
        onClick={() => setAsking(true)}
      >
        {label}
      </button>
    );
  }
  return (
    <span class="confirm" role="group" aria-label={question}>
      <span>{question}</span>{" "}
      <button
        ref={yes}
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        Yes, {label.toLowerCase()}
      </button>{" "}
      <button type="button" class="secondary" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

/** A call's state while it runs and after. */
export interface Loaded<T> {
  reply: Reply<T> | undefined;
  loading: boolean;
  reload: () => void;
  /** Shows this answer until the next load's (a change that answers with the thing itself). */
  show: (reply: Reply<T>) => void;
}

/**
 * Runs `load` when `key` changes (and on `reload`), aborting the previous
 * run: an answer that arrives after a newer request was sent is dropped.
 */
export function useLoad<T>(
  load: (signal: AbortSignal) => Promise<Reply<T>>,
  key: string,
): Loaded<T> {
  const [reply, setReply] = useState<Reply<T>>();
  const [loading, setLoading] = useState(true);
  const [round, setRound] = useState(0);
  useEffect(() => {
    const abort = new AbortController();
    setLoading(true);
    load(abort.signal).then((r) => {
      if (abort.signal.aborted) return;
      setReply(r);
      setLoading(false);
    }, () => {});
    return () => abort.abort();
  }, [key, round]);
  const reload = useCallback(() => setRound((n) => n + 1), []);
  return { reply, loading, reload, show: setReply };
}

/** One thing of a page, as {@link useOne} gives it: loaded, or the page to show meanwhile. */
export type One<T> =
  | { ok: false; page: ComponentChildren }
  | {
    ok: true;
    data: T;
    headers: Headers;
    reload: () => void;
    show: (reply: Reply<T>) => void;
  };

/**
 * The thing a page is about (a user, a group, an import), loaded by its id
 * as {@link useLoad} loads: until it is, the page says it is loading, and
 * if it did not load, {@link NotLoaded} says why. With `again`, it is
 * loaded again `ms` after each answer that `again.while` holds of (a job
 * followed until it ends).
 */
export function useOne<T>(
  load: (signal: AbortSignal) => Promise<Reply<T>>,
  id: string,
  { thing, back, again }: {
    /** As {@link NotLoaded} takes it: `User`. */
    thing: string;
    /** Where the page came from, e.g. `<a href="#/users">Back to users</a>`. */
    back: ComponentChildren;
    again?: { ms: number; while: (data: T) => boolean };
  },
): One<T> {
  const { reply, reload, show } = useLoad(load, id);
  const wait = reply?.ok && again?.while(reply.data) ? again.ms : undefined;
  useEffect(() => {
    if (wait === undefined) return;
    const timer = setTimeout(reload, wait);
    return () => clearTimeout(timer);
  }, [reply]);
  if (!reply) return { ok: false, page: <p role="status">Loading…</p> };
  if (!reply.ok) {
    return {
      ok: false,
      page: (
        <NotLoaded
          failure={reply}
          thing={thing}
          back={back}
          onRetry={reload}
        />
      ),
    };
  }
  return { ok: true, data: reply.data, headers: reply.headers, reload, show };
}

/** A form's submit without the browser's own navigation. */
export const onSubmit = (run: () => void) => (e: Event) => {
  e.preventDefault();
  run();
};

let flashed: string | undefined;

/** A message for the next page to show (a deletion's, shown on the list it returns to). */
export function flash(message: string) {
  flashed = message;
}

/** The message {@link flash} left, once: taken, it is gone. */
export function takeFlash(): string | undefined {
  const message = flashed;
  flashed = undefined;
  return message;
}

/**
 * A modal question before an action on several things at once: the
 * browser's own dialog (focus kept inside, Escape cancels), its question as
 * its name.
 */
export function ConfirmDialog(
  { question, detail, confirm, onConfirm, onCancel }: {
    question: string;
    detail?: ComponentChildren;
    confirm: string;
    onConfirm: () => void;
    onCancel: () => void;
  },
) {
  const dialog = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    dialog.current?.showModal();
    return () => dialog.current?.close();
  }, []);
  return (
    <dialog
      ref={dialog}
      class="confirm-dialog"
      aria-labelledby="confirm-question"
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <h2 id="confirm-question">{question}</h2>
      {detail}
      <div class="actions">
        <button type="button" class="danger" onClick={onConfirm}>
          {confirm}
        </button>
        <button type="button" class="secondary" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}
