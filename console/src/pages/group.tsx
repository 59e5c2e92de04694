/**
 * One group: renamed, filled and deleted here when the console made it;
 * when a provisioning connection owns it, read-only (its identity provider
 * would overwrite a change at its next push), though roles may still be
 * given to it. The list of groups is groups.tsx.
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
  onSubmit,
  Text,
  Title,
  useLoad,
  useOne,
} from "../ui.tsx";
import { Assignments } from "./assignments.tsx";

type Group = components["schemas"]["Group"];

export function GroupPage({ id }: { id: string }) {
  const groupId = Number(id);
  const one = useOne(
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
    { thing: "Group", back: <a href={href("/groups")}>Back to groups</a> },
  );
  if (!one.ok) return one.page;
  return <GroupView group={one.data} reload={one.reload} />;
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
