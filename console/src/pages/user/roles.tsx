/**
 * The roles a user holds: their own assignments (given and ended here) and
 * the groups they are in, each of which may give them more.
 */
import { api, send } from "../../api.ts";
import { href } from "../../router.ts";
import { Notice, Text, useLoad } from "../../ui.tsx";
import { Assignments } from "../assignments.tsx";

export function UserRoles(
  { userId, onChange }: { userId: number; onChange: () => void },
) {
  const groups = useLoad(
    (signal) => send(() => api.GET("/api/groups", { signal }), signal),
    String(userId),
  );
  const theirs = groups.reply?.ok
    ? groups.reply.data.filter((g) => g.members.some((m) => m.id === userId))
    : [];
  return (
    <section aria-labelledby="user-roles-h">
      <h2 id="user-roles-h">Roles</h2>
      <Assignments holder={{ userId }} onChange={onChange} />
      <h3>Groups</h3>
      {groups.reply && !groups.reply.ok && (
        <Notice failure={groups.reply} onRetry={groups.reload} />
      )}
      {groups.reply?.ok && theirs.length === 0 && (
        <p class="muted">Not in any group.</p>
      )}
      {theirs.length > 0 && (
        <ul>
          {theirs.map((g) => (
            <li key={g.id}>
              <a href={href(`/groups/${g.id}`)}>
                <Text>{g.displayName}</Text>
              </a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
