/**
 * Groups: people gathered so that a role given to the group is held by
 * each member. A group made here is renamed, filled and deleted here; one
 * a provisioning connection owns is read-only (its identity provider would
 * overwrite a change at its next push), though roles may still be given
 * to it.
 */
import { useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, type Reply, send, type User } from "../api.ts";
import { href, navigate } from "../router.ts";
import {
  ConfirmButton,
  Done,
  Field,
  Notice,
  NotLoaded,
  onSubmit,
  Text,
  Title,
  useLoad,
} from "../ui.tsx";
import { Assignments } from "./assignments.tsx";

type Group = components["schemas"]["Group"];

/** Who changes the group: its identity provider, or this console. */
const managedBy = (g: Group) =>
  g.connectionId === null
    ? "This console"
    : `Its identity provider (connection ${g.connectionId})`;

export function Groups() {
  const { reply, reload } = useLoad(
    (signal) => send(() => api.GET("/api/groups", { signal }), signal),
    "",
  );
  return (
    <>
      <Title>Groups</Title>
      <p>
        Each member of a group holds the roles given to it. Groups an identity
        provider pushes through provisioning are listed too; it manages them.
      </p>
      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      {reply?.ok && reply.data.length === 0 && (
        <p class="muted">No groups yet.</p>
      )}
      {reply?.ok && reply.data.length > 0 && (
        <table class="list">
          <caption class="visually-hidden">Groups</caption>
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Members</th>
              <th scope="col">Managed by</th>
            </tr>
          </thead>
          <tbody>
            {reply.data.map((g) => (
              <tr key={g.id}>
                <td data-label="Name">
                  <a href={href(`/groups/${g.id}`)}>
                    <Text>{g.displayName}</Text>
                  </a>
                </td>
                <td data-label="Members">{g.members.length}</td>
                <td data-label="Managed by">{managedBy(g)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <CreateGroup />
    </>
  );
}

function CreateGroup() {
  const [name, setName] = useState("");
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  const create = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() =>
      api.POST("/api/groups", { body: { displayName: name } })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    // Next comes filling it: its own page.
    navigate(href(`/groups/${answer.data.id}`));
  };
  return (
    <section aria-labelledby="new-group-h">
      <h2 id="new-group-h">New group</h2>
      {failure && <Notice failure={failure} />}
      <form class="inline" onSubmit={onSubmit(create)}>
        <Field label="Group name" id="new-group-name">
          <input
            id="new-group-name"
            dir="auto"
            maxLength={256}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" disabled={busy}>Create group</button>
      </form>
    </section>
  );
}

export function GroupPage({ id }: { id: string }) {
  const groupId = Number(id);
  const { reply, reload } = useLoad(
    (signal) =>
      send(
        () =>
          api.GET("/api/groups/{id}", {
            params: { path: { id: groupId } },
            signal,
          }),
        signal,
      ),
    id,
  );
  if (!reply) return <p role="status">Loading…</p>;
  if (!reply.ok) {
    return (
      <NotLoaded
        failure={reply}
        thing="Group"
        back={<a href={href("/groups")}>Back to groups</a>}
        onRetry={reload}
      />
    );
  }
  return <GroupView group={reply.data} reload={reload} />;
}

function GroupView({ group, reload }: { group: Group; reload: () => void }) {
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);
  // Counts roles given or ended here: the deletion's question recounts.
  const [given, setGiven] = useState(0);
  const managed = group.connectionId !== null;
  const path = { params: { path: { id: group.id } } };

  /** Runs a change; afterwards the page shows the group as the API has it. */
  const change = async (what: string, call: () => Promise<Reply<unknown>>) => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    const answer = await call();
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    setDone(what);
    reload();
  };
  const members = (method: "POST" | "DELETE", userIds: number[]) => {
    const request = { ...path, body: { userIds } };
    return send(() =>
      method === "POST"
        ? api.POST("/api/groups/{id}/members", request)
        : api.DELETE("/api/groups/{id}/members", request)
    );
  };

  return (
    <>
      <p class="crumbs">
        <a href={href("/groups")}>Groups</a>
      </p>
      <Title>
        <Text>{group.displayName}</Text>
      </Title>
      {managed && (
        <p class="notice">
          Its identity provider manages this group (provisioning connection{" "}
          {group.connectionId}): change its name and members there. Roles may
          still be given to it here.
        </p>
      )}
      {failure && <Notice failure={failure} />}
      {done && <Done>{done}</Done>}

      {!managed && (
        <Rename
          key={group.displayName}
          group={group}
          busy={busy}
          onSave={(displayName) =>
            change("Group renamed.", () =>
              send(() =>
                api.PATCH("/api/groups/{id}", {
                  ...path,
                  body: { displayName },
                })
              ))}
        />
      )}

      <section aria-labelledby="members-h">
        <h2 id="members-h">Members</h2>
        {group.members.length === 0 && <p class="muted">No members.</p>}
        {group.members.length > 0 && (
          <ul class="cards">
            {group.members.map((m) => (
              <li key={m.id} class="row">
                <a href={href(`/users/${m.id}`)}>
                  <Text>{m.username}</Text>
                </a>
                {!managed && (
                  <button
                    type="button"
                    class="secondary"
                    disabled={busy}
                    onClick={() =>
                      change(
                        `${m.username} removed.`,
                        () => members("DELETE", [m.id]),
                      )}
                  >
                    Remove <Text>{m.username}</Text>
                  </button>
                )}
              </li>
            ))}
          </ul>
        )}
        {!managed && (
          <AddMember
            group={group}
            busy={busy}
            onAdd={(u) =>
              change(`${u.username} added.`, () => members("POST", [u.id]))}
          />
        )}
      </section>

      <section aria-labelledby="group-roles-h">
        <h2 id="group-roles-h">Roles</h2>
        <p>Each member holds the roles given to the group.</p>
        <Assignments
          holder={{ groupId: group.id }}
          onChange={() => setGiven((n) => n + 1)}
        />
      </section>

      {!managed && (
        <DeleteGroup key={given} group={group} onFailure={setFailure} />
      )}
    </>
  );
}

function Rename(
  { group, busy, onSave }: {
    group: Group;
    busy: boolean;
    onSave: (name: string) => void;
  },
) {
  const [name, setName] = useState(group.displayName);
  return (
    <section aria-labelledby="rename-h">
      <h2 id="rename-h">Name</h2>
      <form class="inline" onSubmit={onSubmit(() => onSave(name))}>
        <Field label="Group name" id="group-name">
          <input
            id="group-name"
            dir="auto"
            maxLength={256}
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <button
          type="submit"
          disabled={busy || name.trim() === group.displayName}
        >
          Rename
        </button>
      </form>
    </section>
  );
}

/** Finds users by username, name or e-mail (the users list's `q`), ten at most. */
function AddMember(
  { group, busy, onAdd }: {
    group: Group;
    busy: boolean;
    onAdd: (user: User) => void;
  },
) {
  const [q, setQ] = useState("");
  const [found, setFound] = useState<Reply<User[]>>();
  const search = async () => {
    setFound(
      await send(() =>
        api.GET("/api/users", { params: { query: { q, limit: 10 } } })
      ),
    );
  };
  const inGroup = new Set(group.members.map((m) => m.id));
  return (
    <>
      <form class="inline" role="search" onSubmit={onSubmit(search)}>
        <Field
          label="Find a user to add"
          id="member-q"
          hint="Username, name or e-mail"
        >
          <input
            id="member-q"
            type="search"
            maxLength={100}
            aria-describedby="member-q-hint"
            value={q}
            onInput={(e) => setQ(e.currentTarget.value)}
          />
        </Field>
        <button type="submit" class="secondary">Find</button>
      </form>
      <div aria-live="polite">
        {found && !found.ok && <Notice failure={found} />}
        {found?.ok && found.data.length === 0 && (
          <p class="muted">No user matches.</p>
        )}
        {found?.ok && found.data.length > 0 && (
          <ul class="cards">
            {found.data.map((u) => (
              <li key={u.id} class="row">
                <span>
                  <Text>{u.username}</Text> <Text>{u.name}</Text>
                </span>
                {inGroup.has(u.id)
                  ? <span class="muted">a member</span>
                  : (
                    <button
                      type="button"
                      disabled={busy}
                      onClick={() => onAdd(u)}
                    >
                      Add <Text>{u.username}</Text>
                    </button>
                  )}
              </li>
            ))}
          </ul>
        )}
      </div>
    </>
  );
}

/** Says what ends with the group before deleting it. */
function DeleteGroup(
  { group, onFailure }: {
    group: Group;
    onFailure: (failure: Failure) => void;
  },
) {
  const carried = useLoad(
    (signal) =>
      send(
        () =>
          api.GET("/api/assignments", {
            params: { query: { groupId: group.id } },
            signal,
          }),
        signal,
      ),
    String(group.id),
  );
  const n = carried.reply?.ok ? carried.reply.data.length : undefined;
  const members = group.members.length;
  const question = `Delete ${group.displayName}? ${
    members === 1 ? "Its 1 member leaves it" : `Its ${members} members leave it`
  }${
    n === undefined
      ? ""
      : n === 1
      ? " and its 1 role assignment ends"
      : ` and its ${n} role assignments end`
  }.`;
  return (
    <section aria-labelledby="delete-group-h">
      <h2 id="delete-group-h">Delete</h2>
      <ConfirmButton
        label="Delete group"
        question={question}
        onConfirm={async () => {
          const answer = await send(() =>
            api.DELETE("/api/groups/{id}", {
              params: { path: { id: group.id } },
            })
          );
          if (answer.ok) navigate(href("/groups"));
          else onFailure(answer);
        }}
      />
    </section>
  );
}
