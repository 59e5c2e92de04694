/**
 * Provisioning connections (SCIM 2.0): one per identity provider, its
 * token shown once at creation; renamed, its admin groups changed, deleted
 * (which revokes the token; the users it made stay).
 */
import { useRef, useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, send } from "../api.ts";
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

type Connection = components["schemas"]["ScimConnection"];
type NewConnection = components["schemas"]["NewScimConnection"];

/** One group name a line; blank lines dropped. */
const groupsOf = (text: string) =>
  text.split("\n").map((g) => g.trim()).filter((g) => g !== "");

export function ScimConnections() {
  const { reply, reload } = useLoad(
    (signal) =>
      send(() => api.GET("/api/scim/connections", { signal }), signal),
    "",
  );
  const [created, setCreated] = useState<NewConnection>();
  return (
    <>
      <Title>Provisioning</Title>
      <p>
        Identity providers (Okta, Entra ID, …) create and update users through
        SCIM 2.0, each with a connection's token, at this base URL:
      </p>
      <BaseUrl />
      {created && (
        <Secret
          label={`Token of ${created.name}`}
          value={created.token}
          onDismiss={() => setCreated(undefined)}
        />
      )}
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {reply?.ok && reply.data.length === 0 && (
        <p class="muted">No connections.</p>
      )}
      {reply?.ok && reply.data.length > 0 && (
        <ul class="cards">
          {reply.data.map((c) => (
            <ConnectionItem key={c.id} connection={c} onChange={reload} />
          ))}
        </ul>
      )}
      <CreateConnection
        onCreated={(c) => {
          setCreated(c);
          reload();
        }}
      />
    </>
  );
}

/** The SCIM base URL to paste into the identity provider, with a way to copy it. */
function BaseUrl() {
  const url = `${location.origin}/scim/v2`;
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    field.current?.select();
    try {
      await navigator.clipboard.writeText(url);
      setCopied(true);
    } catch {
      // No clipboard access: the text stays selected for Ctrl+C.
    }
  };
  return (
    <div class="copy-field">
      <input
        ref={field}
        readOnly
        class="mono"
        aria-label="SCIM base URL"
        value={url}
        spellcheck={false}
      />
      <button type="button" class="secondary" onClick={copy}>
        {copied ? "Copied" : "Copy URL"}
      </button>
    </div>
  );
}

function ConnectionItem(
  { connection, onChange }: { connection: Connection; onChange: () => void },
) {
  const [editing, setEditing] = useState(false);
  const [name, setName] = useState(connection.name);
  const [groups, setGroups] = useState(connection.adminGroups.join("\n"));
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();
  const path = { params: { path: { id: connection.id } } };
  const save = async () => {
    setFailure(undefined);
    const answer = await send(() =>
      api.PATCH("/api/scim/connections/{id}", {
        ...path,
        body: { name, adminGroups: groupsOf(groups) },
      })
    );
    if (!answer.ok) return setFailure(answer);
    setEditing(false);
    setDone("Connection saved.");
    onChange();
  };
  const remove = async () => {
    setFailure(undefined);
    const answer = await send(() =>
      api.DELETE("/api/scim/connections/{id}", path)
    );
    if (!answer.ok) return setFailure(answer);
    onChange();
  };
  const id = `connection-${connection.id}`;
  return (
    <li>
      <p>
        <strong>
          <Text>{connection.name}</Text>
        </strong>{" "}
        <span class="muted">
          created <Time iso={connection.createdAt} />
        </span>
      </p>
      <p>
        Last request: {connection.lastUsedAt
          ? <Time iso={connection.lastUsedAt} />
          : <span class="muted">none yet</span>}
      </p>
      <p>
        Admin groups: {connection.adminGroups.length
          ? <Text>{connection.adminGroups.join(", ")}</Text>
          : (
            <span class="muted">
              none (everyone it provisions is a viewer)
            </span>
          )}
      </p>
      {failure && <Notice failure={failure} />}
      {done && <Done>{done}</Done>}
      {editing
        ? (
          <form onSubmit={onSubmit(save)}>
            <Field label="Name" id={`${id}-name`}>
              <input
                id={`${id}-name`}
                dir="auto"
                value={name}
                onInput={(e) => setName(e.currentTarget.value)}
              />
            </Field>
            <Field
              label="Admin groups"
              id={`${id}-groups`}
              hint="One group name a line"
            >
              <textarea
                id={`${id}-groups`}
                rows={3}
                aria-describedby={`${id}-groups-hint`}
                value={groups}
                onInput={(e) =>
                  setGroups(e.currentTarget.value)}
              />
            </Field>
            <div class="actions">
              <button type="submit">Save</button>
              <button
                type="button"
                class="secondary"
                onClick={() => setEditing(false)}
              >
                Cancel
              </button>
            </div>
          </form>
        )
        : (
          <div class="actions">
            <button
              type="button"
              class="secondary"
              onClick={() => {
                setDone(undefined);
                setEditing(true);
              }}
            >
              Edit {connection.name}
            </button>
            <ConfirmButton
              label="Delete connection"
              question={`Delete ${connection.name}? Its token stops working.`}
              onConfirm={remove}
            />
          </div>
        )}
    </li>
  );
}

function CreateConnection(
  { onCreated }: { onCreated: (c: NewConnection) => void },
) {
  const [name, setName] = useState("");
  const [groups, setGroups] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const create = async () => {
    setBusy(true);
    setFailure(undefined);
    const adminGroups = groupsOf(groups);
    const answer = await send(() =>
      api.POST("/api/scim/connections", {
        body: { name, ...(adminGroups.length ? { adminGroups } : {}) },
      })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setName("");
    setGroups("");
    onCreated(answer.data);
  };
  return (
    <section aria-labelledby="new-connection">
      <h2 id="new-connection">New connection</h2>
      {failure && <Notice failure={failure} />}
      <form onSubmit={onSubmit(create)}>
        <Field label="Connection name" id="connection-name">
          <input
            id="connection-name"
            dir="auto"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Groups whose members are admins"
          id="connection-groups"
          hint="One group name a line; members of other groups are viewers"
        >
          <textarea
            id="connection-groups"
            rows={3}
            aria-describedby="connection-groups-hint"
            value={groups}
            onInput={(e) => setGroups(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy}>Create connection</button>
      </form>
    </section>
  );
}
