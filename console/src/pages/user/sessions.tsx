/**
 * A user's live sessions, each ended alone or all at once. Loaded and
 * changed on their own: no ETag of the user's row is involved.
 */
import { useState } from "preact/hooks";
import { api, type Failure, send, type Session } from "../../api.ts";
import { ConfirmButton, Notice, Text, Time, useLoad } from "../../ui.tsx";

export function Sessions(
  { userId, onChange }: { userId: number; onChange: () => void },
) {
  const { reply, reload } = useLoad(
    (signal) =>
      send(
        () =>
          api.GET("/api/users/{id}/sessions", {
            params: { path: { id: userId } },
            signal,
          }),
        signal,
      ),
    String(userId),
  );
  const [failure, setFailure] = useState<Failure>();
  const end = async (sessionId?: string) => {
    setFailure(undefined);
    const answer = sessionId === undefined
      ? await send(() =>
        api.DELETE("/api/users/{id}/sessions", {
          params: { path: { id: userId } },
        })
      )
      : await send(() =>
        api.DELETE("/api/users/{id}/sessions/{sessionId}", {
          params: { path: { id: userId, sessionId } },
        })
      );
    if (!answer.ok) setFailure(answer);
    else onChange();
    reload();
  };
  const sessions: Session[] = reply?.ok ? reply.data : [];
  return (
    <section aria-labelledby="sessions-h">
      <h2 id="sessions-h">Sessions</h2>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {failure && <Notice failure={failure} />}
      {reply?.ok && sessions.length === 0 && (
        <p class="muted">No live sessions.</p>
      )}
      {sessions.length > 0 && (
        <>
          <ul class="cards">
            {sessions.map((s) => (
              <li key={s.id}>
                <p>
                  Since <Time iso={s.createdAt} />, last seen{" "}
                  <Time iso={s.lastSeenAt} />
                  {s.current && <strong>(this session)</strong>}
                </p>
                <p class="muted wrap">
                  {s.clientAddress ?? "unknown address"} ·{" "}
                  <Text>{s.userAgent ?? ""}</Text>
                </p>
                <ConfirmButton
                  label="End session"
                  question="End this session?"
                  onConfirm={() => end(s.id)}
                />
              </li>
            ))}
          </ul>
          <ConfirmButton
            label="End all sessions"
            question={`End all ${sessions.length}?`}
            onConfirm={() => end()}
          />
        </>
      )}
    </section>
  );
}
