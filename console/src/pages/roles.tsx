/**
 * Roles: named sets of permissions given to users and groups. Created,
 * changed with the ETag the role was read with (If-Match: a change made
 * meanwhile answers 412 and the page offers to reload), deleted after
 * saying how many assignments end with it.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { labelOf } from "../access.ts";
import { api, type Failure, send } from "../api.ts";
import { href } from "../router.ts";
import { Done, Notice, onSubmit, Text, Time, Title, useLoad } from "../ui.tsx";
import { EditRole, RoleFields } from "./role-form.tsx";

type Role = components["schemas"]["Role"];

export function Roles() {
  const { reply, reload } = useLoad(
    (signal) => send(() => api.GET("/api/roles", { signal }), signal),
    "",
  );
  const [done, setDone] = useState<string>();
  return (
    <>
      <Title>Roles</Title>
      <p>
        A role is a set of permissions. Give it to a person on their page, or to
        a group on the{" "}
        <a href={href("/groups")}>groups page</a>: each member holds it.
      </p>
      {done && <Done>{done}</Done>}
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {reply?.ok && reply.data.length === 0 && (
        <p class="muted">No roles yet.</p>
      )}
      {reply?.ok && reply.data.length > 0 && (
        <ul class="cards">
          {reply.data.map((r) => (
            <RoleItem
              key={r.id}
              role={r}
              onChange={(what) => {
                setDone(what);
                reload();
              }}
            />
          ))}
        </ul>
      )}
      <CreateRole
        onCreated={(r) => {
          setDone(`Role ${r.name} created.`);
          reload();
        }}
      />
    </>
  );
}

function CreateRole({ onCreated }: { onCreated: (role: Role) => void }) {
  const empty = { name: "", description: "", permissions: [] as string[] };
  const [form, setForm] = useState(empty);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const create = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() => api.POST("/api/roles", { body: form }));
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setForm(empty);
    onCreated(answer.data);
  };
  return (
    <section aria-labelledby="new-role-h">
      <h2 id="new-role-h">New role</h2>
      {failure && <Notice failure={failure} />}
      <form onSubmit={onSubmit(create)}>
        <RoleFields
          id="new-role"
          {...form}
          set={(change) => setForm({ ...form, ...change })}
        />
        <button type="submit" disabled={busy}>Create role</button>
      </form>
    </section>
  );
}

function RoleItem(
  { role, onChange }: { role: Role; onChange: (what: string) => void },
) {
  const [editing, setEditing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  return (
    <li>
      <p>
        <strong>
          <Text>{role.name}</Text>
        </strong>{" "}
        <span class="muted">
          created <Time iso={role.createdAt} />
        </span>
      </p>
      {role.description && (
        <p>
          <Text>{role.description}</Text>
        </p>
      )}
      <p>
        {role.permissions.length
          ? role.permissions.map(labelOf).join(", ")
          : <span class="muted">No permissions</span>}
      </p>
      {editing && (
        <EditRole
          id={role.id}
          onDone={(saved) => {
            setEditing(false);
            if (saved) onChange(`Role ${saved} saved.`);
          }}
        />
      )}
      {deleting && (
        <DeleteRole
          role={role}
          onDone={(deleted) => {
            setDeleting(false);
            if (deleted) onChange(`Role ${role.name} deleted.`);
          }}
        />
      )}
      {!editing && !deleting && (
        <div class="actions">
          <button
            type="button"
            class="secondary"
            onClick={() => setEditing(true)}
          >
            Edit <Text>{role.name}</Text>
          </button>
          <button
            type="button"
            class="danger"
            onClick={() => setDeleting(true)}
          >
            Delete <Text>{role.name}</Text>
          </button>
        </div>
      )}
    </li>
  );
}

/** Counts the role's assignments, then asks once more, naming both. */
function DeleteRole(
  { role, onDone }: { role: Role; onDone: (deleted: boolean) => void },
) {
  const { reply, reload } = useLoad(
    (signal) =>
      send(
        () =>
          api.GET("/api/assignments", {
            params: { query: { roleId: role.id } },
            signal,
          }),
        signal,
      ),
    String(role.id),
  );
  const [failure, setFailure] = useState<Failure>();
  const yes = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (reply?.ok) yes.current?.focus();
  }, [reply]);
  const remove = async () => {
    setFailure(undefined);
    const answer = await send(() =>
      api.DELETE("/api/roles/{id}", { params: { path: { id: role.id } } })
    );
    if (!answer.ok) return setFailure(answer);
    onDone(true);
  };
  const cancel = (
    <button
      type="button"
      class="secondary"
      onClick={() => onDone(false)}
    >
      Cancel
    </button>
  );
  if (!reply) return <p role="status">Loading…</p>;
  if (!reply.ok) {
    return <Notice failure={reply} onRetry={reload}>{cancel}</Notice>;
  }
  const n = reply.data.length;
  const question = `Delete ${role.name}? ${
    n === 0
      ? "Nobody holds it."
      : n === 1
      ? "Its 1 assignment ends."
      : `Its ${n} assignments end.`
  }`;
  return (
    <>
      {failure && <Notice failure={failure} />}
      <span class="confirm" role="group" aria-label={question}>
        <span>{question}</span>{" "}
        <button ref={yes} type="button" class="danger" onClick={remove}>
          Yes, delete role
        </button>{" "}
        {cancel}
      </span>
    </>
  );
}
