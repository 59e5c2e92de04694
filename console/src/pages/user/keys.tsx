/**
 * A user's API keys: listed, created (the key shown once, limited to a
 * group's members if chosen) and revoked. Loaded and changed on their own,
 * as sessions are.
 */
import { useState } from "preact/hooks";
import { useCan } from "../../access.ts";
import {
  api,
  type ApiKey,
  type Failure,
  type NewApiKey,
  send,
} from "../../api.ts";
import {
  ConfirmButton,
  Field,
  Notice,
  onSubmit,
  Secret,
  Text,
  Time,
  useLoad,
} from "../../ui.tsx";

export function Keys(
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
  const [group, setGroup] = useState("");
  const can = useCan();
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
          ...(group ? { reachGroupId: Number(group) } : {}),
        },
      })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setCreated(answer.data);
    setName("");
    setExpires("");
    setGroup("");
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
                {k.reachGroupId !== null &&
                  `; acts on the members of group ${k.reachGroupId} only`}
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
        {/* Groups are read with roles:manage: others mint unlimited keys. */}
        {can("roles:manage") && (
          <GroupLimit
            value={group}
            onChange={setGroup}
          />
        )}
        <button type="submit" disabled={busy}>Create key</button>
      </form>
    </section>
  );
}

/** The group a new key may be limited to: its members alone, or everyone. */
function GroupLimit(
  { value, onChange }: { value: string; onChange: (id: string) => void },
) {
  const groups = useLoad(
    (signal) => send(() => api.GET("/api/groups", { signal }), signal),
    "groups",
  );
  if (!groups.reply?.ok) return null;
  return (
    <Field
      label="Acts on"
      id="key-group"
      hint="A key limited to a group acts on its members only"
    >
      <select
        id="key-group"
        aria-describedby="key-group-hint"
        value={value}
        onChange={(e) => onChange(e.currentTarget.value)}
      >
        <option value="">Everyone the key's owner reaches</option>
        {groups.reply.data.map((g) => (
          <option key={g.id} value={String(g.id)}>
            Members of {g.displayName}
          </option>
        ))}
      </select>
    </Field>
  );
}
