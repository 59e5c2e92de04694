/**
 * One user: who they are, their role, password, access, sessions, keys and
 * the audit records about them. Every change sends the ETag the page
 * shows (If-Match): a change made meanwhile elsewhere answers 412, and the
 * page offers to reload rather than overwrite it.
 */
import { useState } from "preact/hooks";
import type { Account } from "../../../clients/mod.ts";
import {
  api,
  type ApiKey,
  type AuditRecord,
  type Failure,
  type NewApiKey,
  nextCursor,
  type Reply,
  send,
  type Session,
  type UserDetail,
} from "../api.ts";
import { href, navigate } from "../router.ts";
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
import { AuditList } from "./audit.tsx";

interface Loaded {
  user: UserDetail;
  etag: string;
}

export function UserPage({ id, me }: { id: string; me: Account }) {
  const userId = Number(id);
  const { reply, reload } = useLoad(
    (signal) =>
      send(
        () =>
          api.GET("/api/users/{id}", {
            params: { path: { id: userId } },
            signal,
          }),
        signal,
      ),
    id,
  );
  if (!reply) return <p role="status">Loading…</p>;
  if (!reply.ok) {
    return (
      <>
        <Title>{reply.status === 404 ? "User not found" : "User"}</Title>
        <Notice
          failure={reply}
          onRetry={reply.status === 404 ? undefined : reload}
        />
        <p>
          <a href={href("/users")}>Back to users</a>
        </p>
      </>
    );
  }
  const loaded = { user: reply.data, etag: reply.headers.get("etag") ?? "" };
  return <UserView loaded={loaded} me={me} reload={reload} />;
}

function UserView(
  { loaded, me, reload }: { loaded: Loaded; me: Account; reload: () => void },
) {
  const { user } = loaded;
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);
  // Counts changes made here: the audit records reload after each.
  const [changes, setChanges] = useState(0);
  const changed = () => setChanges((n) => n + 1);

  /** Runs a change; afterwards the page shows the user as the API now has them. */
  const change = async (
    what: string,
    call: () => Promise<Reply<unknown>>,
    after?: () => void,
  ) => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    const answer = await call();
    setBusy(false);
    if (!answer.ok) {
      // Deleted meanwhile: the reload shows the API's 404.
      if (answer.status === 404) reload();
      setFailure(answer);
      return;
    }
    setDone(what);
    after?.();
    changed();
    reload();
  };
  const path = {
    params: { path: { id: user.id }, header: { "if-match": loaded.etag } },
  };

  return (
    <>
      <p class="crumbs">
        <a href={href("/users")}>Users</a>
      </p>
      <Title>
        <Text>{user.name}</Text>
      </Title>
      {failure && (
        <Notice
          failure={failure}
          onRetry={failure.status === 412
            ? () => {
              setFailure(undefined);
              reload();
            }
            : undefined}
          retryLabel="Reload"
        >
          {failure.status === 412 && (
            <p>
              Someone changed this user meanwhile. Reload to see their change,
              then try again.
            </p>
          )}
        </Notice>
      )}
      {done && <Done>{done}</Done>}

      <section aria-labelledby="profile">
        <h2 id="profile">Profile</h2>
        <dl class="facts">
          <dt>Username</dt>
          <dd>
            <Text>{user.username}</Text>
          </dd>
          <dt>E-mail</dt>
          <dd class="wrap">
            <Text>{user.email}</Text>
          </dd>
          <dt>Role</dt>
          <dd>{user.role}</dd>
          <dt>Created</dt>
          <dd>
            <Time iso={user.createdAt} />
          </dd>
          <dt>Last sign-in</dt>
          <dd>
            <Time iso={user.lastLoginAt} />
          </dd>
          <dt>Status</dt>
          <dd>
            {user.disabled
              ? (
                <>
                  Disabled since <Time iso={user.disabled.since} />
                  {user.disabled.until && (
                    <>
                      {" "}until <Time iso={user.disabled.until} />
                    </>
                  )}
                  {user.disabled.reason && (
                    <>
                      : <Text>{user.disabled.reason}</Text>
                    </>
                  )}
                </>
              )
              : "Active"}
          </dd>
        </dl>
      </section>

      <RoleForm
        key={loaded.etag}
        user={user}
        busy={busy}
        onSave={(role) =>
          change(`Role changed to ${role}.`, () =>
            send(() =>
              api.PATCH("/api/users/{id}", { ...path, body: { role } })
            ))}
      />
      <PasswordForm
        busy={busy}
        onSave={(password, clear) =>
          change("Password reset.", () =>
            send(() =>
              api.PATCH("/api/users/{id}", { ...path, body: { password } })
            ), clear)}
      />
      <AccessForm
        user={user}
        busy={busy}
        onDisable={(reason, until) =>
          change("User disabled.", () =>
            send(() =>
              api.POST("/api/users/{id}/disable", {
                params: { path: { id: user.id } },
                body: { reason: reason || null, until: until || null },
              })
            ))}
        onEnable={() =>
          change("User enabled.", () =>
            send(() =>
              api.POST("/api/users/{id}/enable", {
                params: { path: { id: user.id } },
              })
            ))}
      />
      <SecondFactors
        user={user}
        self={user.id === me.id}
        busy={busy}
        onReset={() =>
          change("Second factors reset.", () =>
            send(() =>
              api.DELETE("/api/users/{id}/mfa", {
                params: { path: { id: user.id } },
              })
            ))}
      />
      <Sessions userId={user.id} onChange={changed} />
      <Keys userId={user.id} onChange={changed} />

      <section aria-labelledby="records">
        <h2 id="records">Audit records</h2>
        <UserAudit key={changes} userId={user.id} />
      </section>

      {user.id !== me.id && (
        <section aria-labelledby="delete">
          <h2 id="delete">Delete</h2>
          <p>Deleting ends their sessions and removes their keys.</p>
          <ConfirmButton
            label="Delete user"
            question={`Delete ${user.username}?`}
            busy={busy}
            onConfirm={async () => {
              setBusy(true);
              setFailure(undefined);
              const answer = await send(() =>
                api.DELETE("/api/users/{id}", path)
              );
              setBusy(false);
              if (answer.ok) navigate(href("/users"));
              else setFailure(answer);
            }}
          />
        </section>
      )}
    </>
  );
}

function RoleForm(
  { user, busy, onSave }: {
    user: UserDetail;
    busy: boolean;
    onSave: (role: "admin" | "viewer") => void;
  },
) {
  const [role, setRole] = useState(user.role);
  return (
    <section aria-labelledby="role-h">
      <h2 id="role-h">Role</h2>
      <form class="inline" onSubmit={onSubmit(() => onSave(role))}>
        <Field label="New role" id="new-role">
          <select
            id="new-role"
            value={role}
            onChange={(e) => setRole(e.currentTarget.value as typeof role)}
          >
            <option value="admin">admin</option>
            <option value="viewer">viewer</option>
          </select>
        </Field>
        <button type="submit" disabled={busy || role === user.role}>
          Change role
        </button>
      </form>
    </section>
  );
}

function PasswordForm(
  { busy, onSave }: {
    busy: boolean;
    onSave: (password: string, clear: () => void) => void;
  },
) {
  const [password, setPassword] = useState("");
  return (
    <section aria-labelledby="password-h">
      <h2 id="password-h">Password</h2>
      <form
        class="inline"
        onSubmit={onSubmit(() => onSave(password, () => setPassword("")))}
      >
        <Field
          label="New password"
          id="new-password"
          hint="At least 8 characters. Their other sessions end."
        >
          <input
            id="new-password"
            type="password"
            autocomplete="new-password"
            aria-describedby="new-password-hint"
            value={password}
            onInput={(e) => setPassword(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy}>Reset password</button>
      </form>
    </section>
  );
}

function AccessForm(
  { user, busy, onDisable, onEnable }: {
    user: UserDetail;
    busy: boolean;
    onDisable: (reason: string, until: string) => void;
    onEnable: () => void;
  },
) {
  const [reason, setReason] = useState("");
  const [until, setUntil] = useState("");
  return (
    <section aria-labelledby="access-h">
      <h2 id="access-h">Access</h2>
      {user.disabled && (
        <p>
          <button type="button" disabled={busy} onClick={onEnable}>
            Enable user
          </button>
        </p>
      )}
      <form
        onSubmit={onSubmit(() =>
          onDisable(reason, until ? new Date(until).toISOString() : "")
        )}
      >
        <Field
          label="Reason"
          id="reason"
          hint="Optional, at most 200 characters"
        >
          <input
            id="reason"
            maxLength={200}
            dir="auto"
            aria-describedby="reason-hint"
            value={reason}
            onInput={(e) => setReason(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Until"
          id="until"
          hint="Optional: enabled again by itself then"
        >
          <input
            id="until"
            type="datetime-local"
            aria-describedby="until-hint"
            value={until}
            onInput={(e) => setUntil(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" class="danger" disabled={busy}>
          {user.disabled ? "Update disable" : "Disable user"}
        </button>
      </form>
    </section>
  );
}

/** The user's factors as the API summarises them (never a secret), and the reset. */
function SecondFactors(
  { user, self, busy, onReset }: {
    user: UserDetail;
    self: boolean;
    busy: boolean;
    onReset: () => void;
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
          <p>
            For someone who lost their factors: they sign in with the password
            alone and may set up new ones.{" "}
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
    </section>
  );
}

function Sessions(
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

function Keys(
  { userId, onChange }: { userId: number; onChange: () => void },
) {
  const params = { params: { path: { id: userId } } };
  const { reply, reload } = useLoad(
    (signal) =>
      send(
        () => api.GET("/api/users/{id}/keys", { ...params, signal }),
        signal,
      ),
    String(userId),
  );
  const [name, setName] = useState("");
  const [expires, setExpires] = useState("");
  const [created, setCreated] = useState<NewApiKey>();
  const [failure, setFailure] = useState<Failure>();
  const [busy, setBusy] = useState(false);

  const create = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() =>
      api.POST("/api/users/{id}/keys", {
        ...params,
        body: {
          name,
          ...(expires ? { expiresAt: new Date(expires).toISOString() } : {}),
        },
      })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setCreated(answer.data);
    setName("");
    setExpires("");
    onChange();
    reload();
  };
  const revoke = async (key: ApiKey) => {
    setFailure(undefined);
    const answer = await send(() =>
      api.DELETE("/api/users/{id}/keys/{keyId}", {
        params: { path: { id: userId, keyId: key.id } },
      })
    );
    if (!answer.ok) setFailure(answer);
    else onChange();
    reload();
  };
  const keys = reply?.ok ? reply.data : [];

  return (
    <section aria-labelledby="keys-h">
      <h2 id="keys-h">API keys</h2>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {failure && <Notice failure={failure} />}
      {created && (
        <Secret
          label={`Key ${created.name}`}
          value={created.key}
          onDismiss={() => setCreated(undefined)}
        />
      )}
      {reply?.ok && keys.length === 0 && <p class="muted">No keys.</p>}
      {keys.length > 0 && (
        <ul class="cards">
          {keys.map((k) => (
            <li key={k.id}>
              <p>
                <strong>
                  <Text>{k.name}</Text>
                </strong>{" "}
                <code>{k.prefix}…</code>
              </p>
              <p class="muted">
                Created <Time iso={k.createdAt} /> by{" "}
                <Text>{k.createdBy.username}</Text>; expires{" "}
                {k.expiresAt ? <Time iso={k.expiresAt} /> : "never"}; last used
                {" "}
                <Time iso={k.lastUsedAt} />
              </p>
              <ConfirmButton
                label="Revoke"
                question={`Revoke ${k.name}?`}
                onConfirm={() => revoke(k)}
              />
            </li>
          ))}
        </ul>
      )}
      <form onSubmit={onSubmit(create)}>
        <Field label="Key name" id="key-name">
          <input
            id="key-name"
            maxLength={100}
            dir="auto"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Expires"
          id="key-expires"
          hint="Optional, at most 2 years ahead"
        >
          <input
            id="key-expires"
            type="datetime-local"
            aria-describedby="key-expires-hint"
            value={expires}
            onInput={(e) => setExpires(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy}>Create key</button>
      </form>
    </section>
  );
}

const USER_AUDIT_PAGE = 20;

function UserAudit({ userId }: { userId: number }) {
  const [records, setRecords] = useState<AuditRecord[]>([]);
  const [before, setBefore] = useState<number>();
  const { reply, reload } = useLoad(async (signal) => {
    const answer = await send(() =>
      api.GET("/api/audit", {
        params: {
          query: {
            targetId: userId,
            limit: USER_AUDIT_PAGE,
            ...(before ? { before } : {}),
          },
        },
        signal,
      }), signal);
    if (answer.ok) {
      setRecords((had) => before ? [...had, ...answer.data] : answer.data);
    }
    return answer;
  }, `${userId}:${before ?? ""}`);
  const more = reply?.ok ? nextCursor(reply.headers, "before") : undefined;
  return (
    <>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {records.length === 0 && reply?.ok && <p class="muted">No records.</p>}
      <AuditList records={records} />
      {more && (
        <button
          type="button"
          class="secondary"
          onClick={() => setBefore(Number(more))}
        >
          Older records
        </button>
      )}
    </>
  );
}
