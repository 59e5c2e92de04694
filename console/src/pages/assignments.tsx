import { useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { api, type Failure, type Reply, send } from "../api.ts";
import { Done, Field, Notice, onSubmit, Text, useLoad } from "../ui.tsx";

type Assignment = components["schemas"]["Assignment"];
type Role = components["schemas"]["Role"];

/**
 * A holder's own assignments (a user's or a group's), with a way to give
 * another role and to end one. Shared by the group page and the user page.
 */
export function Assignments(
  { holder, onChange }: {
    holder: { userId: number } | { groupId: number };
    onChange?: () => void;
  },
) {
  const key = JSON.stringify(holder);
  const held = useLoad(
    (signal) =>
      send(
        () =>
          api.GET("/api/assignments", { params: { query: holder }, signal }),
        signal,
      ),
    key,
  );
  const roles = useLoad(
    (signal) => send(() => api.GET("/api/roles", { signal }), signal),
    "",
  );
  const [roleId, setRoleId] = useState("");
  const [failure, setFailure] = useState<Failure>();
  const [done, setDone] = useState<string>();
  const [busy, setBusy] = useState(false);
  const byId = new Map<number, Role>(
    roles.reply?.ok ? roles.reply.data.map((r) => [r.id, r]) : [],
  );
  const nameOf = (a: Assignment) => byId.get(a.roleId)?.name ?? `#${a.roleId}`;
  const run = async (what: string, call: () => Promise<Reply<unknown>>) => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    const answer = await call();
    setBusy(false);
    if (!answer.ok) setFailure(answer);
    else {
      setDone(what);
      setRoleId("");
      onChange?.();
    }
    held.reload();
  };
  const give = () => {
    const role = byId.get(Number(roleId));
    if (!role) return;
    run(
      `${role.name} given.`,
      () =>
        send(() =>
          api.POST("/api/assignments", { body: { roleId: role.id, ...holder } })
        ),
    );
  };
  const end = (a: Assignment) =>
    run(
      `${nameOf(a)} ended.`,
      () =>
        send(() =>
          api.DELETE("/api/assignments/{id}", {
            params: { path: { id: a.id } },
          })
        ),
    );
  const assignments = held.reply?.ok ? held.reply.data : [];
  const holds = new Set(assignments.map((a) => a.roleId));
  const id = "userId" in holder ? "user-give-role" : "group-give-role";
  return (
    <>
      {held.reply && !held.reply.ok && (
        <Notice failure={held.reply} onRetry={held.reload} />
      )}
      {roles.reply && !roles.reply.ok && (
        <Notice failure={roles.reply} onRetry={roles.reload} />
      )}
      {failure && <Notice failure={failure} />}
      {done && <Done>{done}</Done>}
      {held.reply?.ok && assignments.length === 0 && (
        <p class="muted">No roles given.</p>
      )}
      {assignments.length > 0 && (
        <ul class="cards">
          {assignments.map((a) => (
            <li key={a.id} class="row">
              <Text>{nameOf(a)}</Text>
              <button
                type="button"
                class="secondary"
                disabled={busy}
                onClick={() => end(a)}
              >
                End <Text>{nameOf(a)}</Text>
              </button>
            </li>
          ))}
        </ul>
      )}
      {roles.reply?.ok && (
        <form class="inline" onSubmit={onSubmit(give)}>
          <Field label="Role to give" id={id}>
            <select
              id={id}
              value={roleId}
              onChange={(e) => setRoleId(e.currentTarget.value)}
            >
              <option value="">Choose a role</option>
              {roles.reply.data.filter((r) => !holds.has(r.id)).map((r) => (
                <option key={r.id} value={String(r.id)}>{r.name}</option>
              ))}
            </select>
          </Field>
          <button type="submit" disabled={busy || roleId === ""}>
            Give role
          </button>
        </form>
      )}
    </>
  );
}
