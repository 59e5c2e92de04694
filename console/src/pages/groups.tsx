/**
 * Groups: people gathered so that a role given to the group is held by
 * each member, listed with who manages each, and a new one made here. One
 * group's own page is group.tsx.
 */
import { useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, send } from "../api.ts";
import { href, navigate } from "../router.ts";
import { Field, Notice, onSubmit, Text, Title, useLoad } from "../ui.tsx";

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
