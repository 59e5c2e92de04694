/**
 * The user's own fields a page form changes: profile (name, e-mail,
 * department), role, password, access
 * (disable, enable). Each form only gathers its values; the page sends
 * them with the ETag it shows (user.tsx), so every change is answered alike.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import type { UserDetail } from "../../api.ts";
import { Field, onSubmit } from "../../ui.tsx";

/** The profile's changes: only the fields that differ from what the page shows. */
export interface ProfileChange {
  name?: string;
  email?: string;
  department?: string | null;
}

export function ProfileForm(
  { user, busy, onSave }: {
    user: UserDetail;
    busy: boolean;
    onSave: (change: ProfileChange) => void;
  },
) {
  const [name, setName] = useState(user.name);
  const [email, setEmail] = useState(user.email);
  const [department, setDepartment] = useState(user.department ?? "");
  const change: ProfileChange = {
    ...name.trim() !== user.name && { name },
    ...email.trim() !== user.email && { email },
    ...department.trim() !== (user.department ?? "") &&
      { department: department.trim() === "" ? null : department },
  };
  return (
    <section aria-labelledby="edit-profile-h">
      <h2 id="edit-profile-h">Change profile</h2>
      <form class="inline" onSubmit={onSubmit(() => onSave(change))}>
        <Field label="Name" id="profile-name">
          <input
            id="profile-name"
            autocomplete="off"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </Field>
        <Field label="E-mail" id="profile-email">
          <input
            id="profile-email"
            type="email"
            autocomplete="off"
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Department"
          id="profile-department"
          hint="Optional. Leave empty to clear it."
        >
          <input
            id="profile-department"
            autocomplete="off"
            aria-describedby="profile-department-hint"
            value={department}
            onInput={(e) => setDepartment(e.currentTarget.value)}
          />
        </Field>
        <button
          type="submit"
          disabled={busy || Object.keys(change).length === 0}
        >
          Save profile
        </button>
      </form>
    </section>
  );
}

export function RoleForm(
  { user, managedBy, busy, onSave }: {
    user: UserDetail;
    /** The provisioning connection that sets this user's role, if one does. */
    managedBy?: string;
    busy: boolean;
    onSave: (role: "admin" | "viewer") => void;
  },
) {
  const [role, setRole] = useState(user.role);
  return (
    <section aria-labelledby="role-h">
      <h2 id="role-h">Role</h2>
      {managedBy !== undefined && (
        <p class="notice warning" id="role-managed">
          <strong>
            <bdi>{managedBy}</bdi> sets this role.
          </strong>{" "}
          Its identity provider gives the role from its groups: a change made
          here lasts only until the user's next group change there.
        </p>
      )}
      <form class="inline" onSubmit={onSubmit(() => onSave(role))}>
        <Field label="New role" id="new-role">
          <select
            id="new-role"
            aria-describedby={managedBy !== undefined
              ? "role-managed"
              : undefined}
            value={role}
            onChange={(e) => setRole(e.currentTarget.value as typeof role)}
          >
            <option value="admin">admin</option>
            <option value="viewer">viewer</option>
          </select>
        </Field>
        <button type="submit" disabled={busy || role === user.role}>
          Change role
        </button>
      </form>
    </section>
  );
}

export function PasswordForm(
  { busy, onSave }: {
    busy: boolean;
    onSave: (password: string, clear: () => void) => void;
  },
) {
  const [password, setPassword] = useState("");
  // The API reads an empty password as "no change" and answers 200: said
  // here instead, so an empty form never reads "Password reset."
  const [empty, setEmpty] = useState(false);
  return (
    <section aria-labelledby="password-h">
      <h2 id="password-h">Password</h2>
      {empty && (
        <p class="notice error" role="alert">
          <strong>Enter a new password: at least 8 characters.</strong>
        </p>
      )}
      <form
        class="inline"
        onSubmit={onSubmit(() => {
          if (password === "") return setEmpty(true);
          onSave(password, () => setPassword(""));
        })}
      >
        <Field
          label="New password"
          id="new-password"
          hint="At least 8 characters. Their other sessions end."
        >
          <input
            id="new-password"
            type="password"
            autocomplete="new-password"
            aria-describedby="new-password-hint"
            value={password}
            onInput={(e) => {
              setEmpty(false);
              setPassword(e.currentTarget.value);
            }}
          />
        </Field>
        <button type="submit" disabled={busy}>Reset password</button>
      </form>
    </section>
  );
}

export function AccessForm(
  { user, busy, onDisable, onEnable }: {
    user: UserDetail;
    busy: boolean;
    onDisable: (reason: string, until: string) => void;
    onEnable: () => void;
  },
) {
  const [reason, setReason] = useState("");
  const [until, setUntil] = useState("");
  const [asking, setAsking] = useState(false);
  const yes = useRef<HTMLButtonElement>(null);
  useEffect(() => {
    if (asking) yes.current?.focus();
  }, [asking]);
  const label = user.disabled ? "Update disable" : "Disable user";
  return (
    <section aria-labelledby="access-h">
      <h2 id="access-h">Access</h2>
      {user.disabled && (
        <p>
          <button type="button" disabled={busy} onClick={onEnable}>
            Enable user
          </button>
        </p>
      )}
      <form onSubmit={onSubmit(() => setAsking(true))}>
        <Field
          label="Reason"
          id="reason"
          hint="Optional, at most 200 characters"
        >
          <input
            id="reason"
            maxLength={200}
            dir="auto"
            aria-describedby="reason-hint"
            value={reason}
            onInput={(e) => setReason(e.currentTarget.value)}
          />
        </Field>
        <Field
          label="Until"
          id="until"
          hint="Optional: enabled again by itself then"
        >
          <input
            id="until"
            type="datetime-local"
            aria-describedby="until-hint"
            value={until}
            onInput={(e) => setUntil(e.currentTarget.value)}
          />
        </Field>
        {asking
          ? (
            <span
              class="confirm"
              role="group"
              aria-label={`Disable ${user.username}?`}
            >
              <span>
                Disable <bdi>{user.username}</bdi>? Their sessions end.
              </span>{" "}
              <button
                ref={yes}
                type="button"
                class="danger"
                onClick={() => {
                  setAsking(false);
                  onDisable(
                    reason,
                    until ? new Date(until).toISOString() : "",
                  );
                }}
              >
                Yes, {label.toLowerCase()}
              </button>{" "}
              <button
                type="button"
                class="secondary"
                onClick={() => setAsking(false)}
              >
                Cancel
              </button>
            </span>
          )
          : (
            <button type="submit" class="danger" disabled={busy}>
              {label}
            </button>
          )}
      </form>
    </section>
  );
}
