/**
 * Bulk actions on the selected users (disable, enable, delete, export):
 * each asks first, naming how many, then goes through the per-user
 * endpoints one at a time and sums up what was done and what failed.
 */
import { useState } from "preact/hooks";
import { useCan } from "../../access.ts";
import type { Account } from "../../../../clients/mod.ts";
import {
  api,
  type Failure,
  type Reply,
  send,
  type UserListItem,
} from "../../api.ts";
import { ConfirmDialog, Text } from "../../ui.tsx";
import { download, exportHref } from "./query.ts";

type BulkAction = "disable" | "enable" | "delete";

const VERBS: Record<BulkAction, [string, string]> = {
  disable: ["Disable", "Disabled"],
  enable: ["Enable", "Enabled"],
  delete: ["Delete", "Deleted"],
};

/** One user's call of a bulk action, through the per-user endpoint. */
function act(action: BulkAction, id: number): Promise<Reply<unknown>> {
  const params = { params: { path: { id } } };
  switch (action) {
    case "disable":
      return send(() => api.POST("/api/users/{id}/disable", params));
    case "enable":
      return send(() => api.POST("/api/users/{id}/enable", params));
    case "delete":
      return send(() => api.DELETE("/api/users/{id}", params));
  }
}

const plural = (n: number) => `${n} ${n === 1 ? "user" : "users"}`;

/** The selection's actions: asked first, then done one user at a time, summed up. */
export function Bulk(
  { selected, me, onClear, onDone }: {
    selected: UserListItem[];
    me: Account;
    onClear: () => void;
    onDone: () => void;
  },
) {
  const can = useCan();
  const [asking, setAsking] = useState<BulkAction>();
  const [busy, setBusy] = useState(false);
  const [summary, setSummary] = useState<
    { done: string; failed: { user: UserListItem; failure: Failure }[] }
  >();
  // Nobody disables or deletes themselves from here (the API refuses it
  // too): their own row is left out of those two.
  const self = selected.some((u) => u.id === me.id);
  const targets = (action: BulkAction) =>
    action === "enable" ? selected : selected.filter((u) => u.id !== me.id);

  const run = async (action: BulkAction) => {
    const users = targets(action);
    setAsking(undefined);
    setBusy(true);
    setSummary(undefined);
    const failed: { user: UserListItem; failure: Failure }[] = [];
    for (const user of users) {
      const answer = await act(action, user.id);
      if (!answer.ok) failed.push({ user, failure: answer });
    }
    setBusy(false);
    const doneCount = users.length - failed.length;
    setSummary({
      done: `${VERBS[action][1]} ${plural(doneCount)}.${
        failed.length ? ` ${failed.length} failed.` : ""
      }`,
      failed,
    });
    onClear();
    onDone();
  };

  if (selected.length === 0 && !summary) return null;
  return (
    <section class="bulk" aria-label="Selected users">
      {summary && (
        <div
          role="status"
          class={`notice ${summary.failed.length ? "error" : "ok"}`}
        >
          <p>
            <strong>{summary.done}</strong>
          </p>
          {summary.failed.length > 0 && (
            <ul>
              {summary.failed.map(({ user, failure }) => (
                <li key={user.id}>
                  <Text>{user.username}</Text>: {failure.error}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {selected.length > 0 && (
        <div class="actions">
          <span>{selected.length} selected</span>
          {(["disable", "enable", "delete"] as const).filter((action) =>
            can(action === "delete" ? "users:delete" : "users:disable")
          ).map((action) => (
            <button
              type="button"
              key={action}
              class={action === "enable" ? "secondary" : "danger"}
              disabled={busy || targets(action).length === 0}
              onClick={() => setAsking(action)}
            >
              {VERBS[action][0]}
            </button>
          ))}
          {can("users:export") && (
            <button
              type="button"
              class="secondary"
              disabled={busy}
              onClick={() =>
                download(
                  exportHref({}, selected.map((u) => u.id)),
                  "users-selected.ndjson",
                )}
            >
              Export selection
            </button>
          )}
          <button
            type="button"
            class="secondary"
            disabled={busy}
            onClick={onClear}
          >
            Clear selection
          </button>
        </div>
      )}
      {busy && <p role="status">Working…</p>}
      {asking && (
        <ConfirmDialog
          question={`${VERBS[asking][0]} ${plural(targets(asking).length)}?`}
          detail={
            <>
              <ul class="plain">
                {targets(asking).slice(0, 10).map((u) => (
                  <li key={u.id}>
                    <Text>{u.username}</Text>
                  </li>
                ))}
                {targets(asking).length > 10 && (
                  <li>and {targets(asking).length - 10} more</li>
                )}
              </ul>
              {self && asking !== "enable" && (
                <p>Your own account is left out.</p>
              )}
            </>
          }
          confirm={`${VERBS[asking][0]} ${plural(targets(asking).length)}`}
          onConfirm={() => run(asking)}
          onCancel={() => setAsking(undefined)}
        />
      )}
    </section>
  );
}
