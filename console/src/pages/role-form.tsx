/**
 * A role's fields as a form: its name, description and permissions, for a
 * new role and for a change, which is sent with the ETag the role was read
 * with (If-Match).
 */
import { useEffect, useState } from "preact/hooks";
import type { components } from "../../../clients/mod.ts";
import { labelOf, PERMISSION_GROUPS } from "../access.ts";
import { api, type Failure, send } from "../api.ts";
import { Field, Notice, onSubmit, useLoad } from "../ui.tsx";

type Role = components["schemas"]["Role"];

/** The permissions as checkboxes, grouped, each named in words. */
export function PermissionPicker(
  { id, chosen, onChange }: {
    id: string;
    chosen: string[];
    onChange: (chosen: string[]) => void;
  },
) {
  const toggle = (p: string, on: boolean) => {
    const set = new Set(chosen);
    if (on) set.add(p);
    else set.delete(p);
    // In the catalogue's order, as the API keeps them.
    onChange(
      PERMISSION_GROUPS.flatMap(([, ps]) => ps).filter((x) => set.has(x)),
    );
  };
  return (
    <div class="permission-pick">
      {PERMISSION_GROUPS.map(([group, ps]) => (
        <fieldset key={group}>
          <legend>{group}</legend>
          {ps.map((p) => (
            <label key={p} for={`${id}-${p}`}>
              <input
                id={`${id}-${p}`}
                type="checkbox"
                checked={chosen.includes(p)}
                onChange={(e) => toggle(p, e.currentTarget.checked)}
              />{" "}
              {labelOf(p)} <code class="muted">{p}</code>
            </label>
          ))}
        </fieldset>
      ))}
    </div>
  );
}

export function RoleFields(
  { id, name, description, permissions, set }: {
    id: string;
    name: string;
    description: string;
    permissions: string[];
    set: (
      change: { name?: string; description?: string; permissions?: string[] },
    ) => void;
  },
) {
  return (
    <>
      <Field label="Role name" id={`${id}-name`} hint="1 to 64 characters">
        <input
          id={`${id}-name`}
          dir="auto"
          maxLength={64}
          aria-describedby={`${id}-name-hint`}
          value={name}
          onInput={(e) => set({ name: e.currentTarget.value })}
        />
      </Field>
      <Field
        label="Description"
        id={`${id}-description`}
        hint="Optional, at most 200 characters"
      >
        <input
          id={`${id}-description`}
          dir="auto"
          maxLength={200}
          aria-describedby={`${id}-description-hint`}
          value={description}
          onInput={(e) => set({ description: e.currentTarget.value })}
        />
      </Field>
      <PermissionPicker
        id={`${id}-permission`}
        chosen={permissions}
        onChange={(permissions) => set({ permissions })}
      />
    </>
  );
}

/**
 * The role as the API has it now, with its ETag: the change is sent with
 * it, so a change made by someone else since is not overwritten.
 */
export function EditRole(
  { id, onDone }: { id: number; onDone: (saved?: string) => void },
) {
  const { reply, reload } = useLoad(
    (signal) =>
      send(
        () => api.GET("/api/roles/{id}", { params: { path: { id } }, signal }),
        signal,
      ),
    String(id),
  );
  if (!reply) return <p role="status">Loading…</p>;
  if (!reply.ok) {
    return (
      <Notice failure={reply} onRetry={reload}>
        <button type="button" class="secondary" onClick={() => onDone()}>
          Cancel
        </button>
      </Notice>
    );
  }
  return (
    <RoleForm
      key={reply.headers.get("etag")}
      role={reply.data}
      etag={reply.headers.get("etag") ?? ""}
      reload={reload}
      onDone={onDone}
    />
  );
}

function RoleForm(
  { role, etag, reload, onDone }: {
    role: Role;
    etag: string;
    reload: () => void;
    onDone: (saved?: string) => void;
  },
) {
  const [form, setForm] = useState({
    name: role.name,
    description: role.description,
    permissions: role.permissions,
  });
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  // The form replaces the Edit button, which had the focus.
  useEffect(() => {
    document.getElementById(`role-${role.id}-name`)?.focus();
  }, []);
  const save = async () => {
    setBusy(true);
    setFailure(undefined);
    const answer = await send(() =>
      api.PATCH("/api/roles/{id}", {
        params: { path: { id: role.id }, header: { "if-match": etag } },
        body: form,
      })
    );
    setBusy(false);
    if (!answer.ok) return setFailure(answer);
    onDone(answer.data.name);
  };
  return (
    <form onSubmit={onSubmit(save)}>
      {failure && (
        <Notice
          failure={failure}
          onRetry={failure.status === 412 ? reload : undefined}
          retryLabel="Reload"
        >
          {failure.status === 412 && (
            <p>Someone changed this role meanwhile: reload to see it.</p>
          )}
        </Notice>
      )}
      <RoleFields
        id={`role-${role.id}`}
        {...form}
        set={(change) => setForm({ ...form, ...change })}
      />
      <div class="actions">
        <button type="submit" disabled={busy}>Save role</button>
        <button type="button" class="secondary" onClick={() => onDone()}>
          Cancel
        </button>
      </div>
    </form>
  );
}
