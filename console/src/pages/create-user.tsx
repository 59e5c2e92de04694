/**
 * Creating a user. One click sends one Idempotency-Key for every retry
 * (`createUserWithRetry`), so a retry after a dropped answer never makes a
 * second user.
 */
import { useState } from "preact/hooks";
import type { CreateUser as Body } from "../../../clients/mod.ts";
import { createUserWithRetry } from "../../../clients/mod.ts";
import { api, type Failure, UNREACHABLE } from "../api.ts";
import { href, navigate } from "../router.ts";
import { Field, Notice, onSubmit, Title } from "../ui.tsx";

const EMPTY: Body = {
  username: "",
  name: "",
  email: "",
  password: "",
  role: "viewer",
};

export function CreateUser() {
  const [body, setBody] = useState<Body>(EMPTY);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<Failure>();
  // One key per person's attempt: a second click after a lost answer replays it.
  const [key] = useState(() => crypto.randomUUID());
  const set = (field: keyof Body) => (e: Event) =>
    setBody({ ...body, [field]: (e.currentTarget as HTMLInputElement).value });

  const create = async () => {
    setBusy(true);
    setFailure(undefined);
    try {
      const answer = await createUserWithRetry(api, body, {
        attempts: 3,
        idempotencyKey: key,
      });
      if (answer.ok) navigate(href(`/users/${answer.data.id}`));
      else {setFailure({
          ok: false,
          status: answer.status,
          error: answer.error,
        });}
    } catch {
      setFailure({ ok: false, status: 0, error: UNREACHABLE });
    }
    setBusy(false);
  };

  return (
    <>
      <p class="crumbs">
        <a href={href("/users")}>Users</a>
      </p>
      <Title>New user</Title>
      {failure && <Notice failure={failure} />}
      <form onSubmit={onSubmit(create)}>
        <Field label="Username" id="new-username">
          <input
            id="new-username"
            dir="auto"
            autocomplete="off"
            value={body.username}
            onInput={set("username")}
          />
        </Field>
        <Field label="Name" id="new-name">
          <input
            id="new-name"
            dir="auto"
            autocomplete="off"
            value={body.name}
            onInput={set("name")}
          />
        </Field>
        <Field label="E-mail" id="new-email">
          <input
            id="new-email"
            inputMode="email"
            autocomplete="off"
            value={body.email}
            onInput={set("email")}
          />
        </Field>
        <Field label="Password" id="new-password" hint="At least 8 characters">
          <input
            id="new-password"
            type="password"
            autocomplete="new-password"
            aria-describedby="new-password-hint"
            value={body.password}
            onInput={set("password")}
          />
        </Field>
        <Field label="Role" id="new-role">
          <select id="new-role" value={body.role} onChange={set("role")}>
            <option value="viewer">viewer</option>
            <option value="admin">admin</option>
          </select>
        </Field>
        <button type="submit" disabled={busy}>
          {busy ? "Creating…" : "Create user"}
        </button>
      </form>
    </>
  );
}
