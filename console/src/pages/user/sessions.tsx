/**
 * Live sessions, each ended alone or all at once: a user's, as an admin
 * sees them on the user's page, and the person's own on My account. One
 * list for both; each says where its calls go and how it words them.
 * Loaded and changed on their own: no ETag of the user's row is involved.
 */
import { useState } from "preact/hooks";
import {
  api,
  type Failure,
  type Reply,
  send,
  type Session,
  signedOut,
} from "../../api.ts";
import { ConfirmButton, Done, Notice, Text, Time, useLoad } from "../../ui.tsx";
import { deviceOf } from "./device.ts";

/** A user's sessions, as an admin sees and ends them. */
export function Sessions(
  { userId, onChange }: { userId: number; onChange: () => void },
) {
  const path = { params: { path: { id: userId } } };
  return (
    <SessionList
      loadKey={String(userId)}
      load={(signal) =>
        send(
          () => api.GET("/api/users/{id}/sessions", { ...path, signal }),
          signal,
        )}
      endOne={(sessionId) =>
        send(() =>
          api.DELETE("/api/users/{id}/sessions/{sessionId}", {
            params: { path: { id: userId, sessionId } },
          })
        )}
      endAll={() => send(() => api.DELETE("/api/users/{id}/sessions", path))}
      words={{
        current: "(this session)",
        endOne: "End session",
        endOneQuestion: "End this session?",
        endAll: "End all sessions",
        endAllQuestion: (n) => `End all ${n}?`,
        endedOne: "Session ended.",
        endedAll: (n) => `${n} ${n === 1 ? "session" : "sessions"} ended.`,
      }}
      onEnded={onChange}
    />
  );
}

/** The signed-in person's own sessions, on My account. */
export function OwnSessions() {
  return (
    <SessionList
      loadKey="own"
      load={(signal) =>
        send(() => api.GET("/api/auth/sessions", { signal }), signal)}
      endOne={(sessionId) =>
        send(() =>
          api.DELETE("/api/auth/sessions/{sessionId}", {
            params: { path: { sessionId } },
          })
        )}
      endAll={() => send(() => api.DELETE("/api/auth/sessions"))}
      words={{
        current: "This device",
        endOne: "Sign out",
        endOneQuestion: "Sign out this session?",
        endAll: "Sign out all other sessions",
        endAllQuestion: (n) =>
          `Sign out ${n - 1} other ${n === 2 ? "session" : "sessions"}?`,
        endedOne: "Session signed out.",
        endedAll: (n) =>
          n === 0
            ? "No other sessions were signed in."
            : `${n} other ${n === 1 ? "session" : "sessions"} signed out.`,
      }}
      // The only one left is this device: nothing else to sign out.
      allNeedsOthers
      // This device signed out: the service cleared its cookie.
      onCurrentEnded={() => signedOut("You signed out this device.")}
    />
  );
}

interface Words {
  /** Marks the session of the console itself. */
  current: string;
  endOne: string;
  endOneQuestion: string;
  endAll: string;
  endAllQuestion: (listed: number) => string;
  endedOne: string;
  endedAll: (ended: number) => string;
}

type Ended = Reply<{ ok: true; ended: number }>;

function SessionList(
  {
    loadKey,
    load,
    endOne,
    endAll,
    words,
    allNeedsOthers = false,
    onEnded,
    onCurrentEnded,
  }: {
    loadKey: string;
    load: (signal: AbortSignal) => Promise<Reply<Session[]>>;
    endOne: (sessionId: string) => Promise<Ended>;
    endAll: () => Promise<Ended>;
    words: Words;
    /** "End all" ends the others only: offered when there are any. */
    allNeedsOthers?: boolean;
    onEnded?: () => void;
    onCurrentEnded?: () => void;
  },
) {
  const { reply, reload } = useLoad(load, loadKey);
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();
  const end = async (session?: Session) => {
    setFailure(undefined);
    setDone(undefined);
    const answer = session ? await endOne(session.id) : await endAll();
    if (!answer.ok) {
      setFailure(answer);
    } else if (session?.current && onCurrentEnded) {
      return onCurrentEnded();
    } else {
      setDone(session ? words.endedOne : words.endedAll(answer.data.ended));
      onEnded?.();
    }
    reload();
  };
  const sessions: Session[] = reply?.ok ? reply.data : [];
  return (
    <section aria-labelledby="sessions-h">
      <h2 id="sessions-h">Sessions</h2>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {failure && <Notice failure={failure} />}
      {done && <Done>{done}</Done>}
      {reply?.ok && sessions.length === 0 && (
        <p class="muted">No live sessions.</p>
      )}
      {sessions.length > 0 && (
        <>
          <ul class="cards">
            {sessions.map((s) => (
              <li key={s.id}>
                <p>
                  <strong>{deviceOf(s.userAgent)}</strong>
                  {s.current && <>{" "}· {words.current}</>}
                </p>
                <p>
                  {s.clientAddress ?? "unknown address"} · last seen{" "}
                  <Time iso={s.lastSeenAt} />, since <Time iso={s.createdAt} />
                </p>
                {s.userAgent && (
                  <p class="muted wrap">
                    <Text>{s.userAgent}</Text>
                  </p>
                )}
                <ConfirmButton
                  label={words.endOne}
                  question={words.endOneQuestion}
                  onConfirm={() => end(s)}
                />
              </li>
            ))}
          </ul>
          {(!allNeedsOthers || sessions.some((s) => !s.current)) && (
            <ConfirmButton
              label={words.endAll}
              question={words.endAllQuestion(sessions.length)}
              onConfirm={() => end()}
            />
          )}
        </>
      )}
    </section>
  );
}
