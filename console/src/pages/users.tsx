/**
 * Finding users among any number: search, role and status filters, one
 * page of PAGE_SIZE at a time through the API's `next` links. Nothing
 * loads more than one page, so a million users cost what ten do.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { useCan } from "../access.ts";
import { api, nextCursor, send, type User } from "../api.ts";
import { currentLocation, href, navigate } from "../router.ts";
import { Field, Notice, Text, Time, Title, useLoad } from "../ui.tsx";

export const PAGE_SIZE = 50;
/** How long typing must pause before the search runs. */
const SEARCH_DELAY_MS = 120;

type Filters = {
  q?: string;
  role?: "admin" | "viewer";
  status?: "active" | "disabled";
  after?: string;
};

function filtersOf(query: URLSearchParams): Filters {
  const role = query.get("role");
  const status = query.get("status");
  return {
    q: query.get("q") || undefined,
    role: role === "admin" || role === "viewer" ? role : undefined,
    status: status === "active" || status === "disabled" ? status : undefined,
    after: query.get("after") || undefined,
  };
}

export function Users({ query }: { query: URLSearchParams }) {
  const filters = filtersOf(query);
  const can = useCan();
  const [typed, setTyped] = useState(filters.q ?? "");
  // Cursors of the pages before this one, for "Previous".
  const [behind, setBehind] = useState<string[]>([]);
  const go = (next: Filters, replace = false) =>
    navigate(href("/users", next), replace);

  // The search runs once typing pauses, and replaces the history entry;
  // over the filters as they are then (a role picked meanwhile stays).
  useEffect(() => {
    if (typed === (filters.q ?? "")) return;
    const timer = setTimeout(() => {
      setBehind([]);
      const now = filtersOf(currentLocation().query);
      go({ ...now, q: typed || undefined, after: undefined }, true);
    }, SEARCH_DELAY_MS);
    return () => clearTimeout(timer);
  }, [typed]);

  const key = JSON.stringify(filters);
  const { reply, loading, reload } = useLoad((signal) => {
    performance.mark("users:request");
    const { after, ...rest } = filters;
    return send(() =>
      api.GET("/api/users", {
        params: {
          query: { ...rest, limit: PAGE_SIZE, ...(after ? { after } : {}) },
        },
        signal,
      }), signal);
  }, key);

  const shown = useRef<string | undefined>(undefined);
  useEffect(() => {
    if (reply?.ok && shown.current !== key) {
      shown.current = key;
      performance.mark("users:rows");
      performance.measure("users:rows", "users:request", "users:rows");
    }
  }, [reply]);

  const next = reply?.ok ? nextCursor(reply.headers, "after") : undefined;
  const setFilter = (change: Filters) => {
    setBehind([]);
    go({ ...filters, ...change, after: undefined });
  };

  return (
    <>
      <div class="heading">
        <Title>Users</Title>
        {can("users:create") && (
          <a class="button" href={href("/users/new")}>New user</a>
        )}
      </div>
      <form
        class="filters"
        role="search"
        onSubmit={(e) => {
          e.preventDefault();
          setBehind([]);
          go({ ...filters, q: typed || undefined, after: undefined }, true);
        }}
      >
        <Field label="Search" id="q" hint="Username, name or e-mail">
          <input
            id="q"
            type="search"
            maxLength={100}
            value={typed}
            aria-describedby="q-hint"
            onInput={(e) => setTyped(e.currentTarget.value)}
          />
        </Field>
        <Field label="Role" id="role">
          <select
            id="role"
            value={filters.role ?? ""}
            onChange={(e) =>
              setFilter({
                role: (e.currentTarget.value || undefined) as Filters["role"],
              })}
          >
            <option value="">Any</option>
            <option value="admin">admin</option>
            <option value="viewer">viewer</option>
          </select>
        </Field>
        <Field label="Status" id="status">
          <select
            id="status"
            value={filters.status ?? ""}
            onChange={(e) =>
              setFilter({
                status: (e.currentTarget.value || undefined) as Filters[
                  "status"
                ],
              })}
          >
            <option value="">Any</option>
            <option value="active">Active</option>
            <option value="disabled">Disabled</option>
          </select>
        </Field>
      </form>

      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      <div aria-live="polite" aria-busy={loading} class="results">
        {reply?.ok && (
          <UserTable
            users={reply.data}
            empty={filters.q || filters.role || filters.status
              ? "No user matches."
              : "No users."}
          />
        )}
      </div>
      <nav class="pager" aria-label="Pages">
        {(filters.after || behind.length > 0) && (
          <button
            type="button"
            class="secondary"
            onClick={() => {
              const back = behind.slice(0, -1);
              const previous = behind.at(-1);
              setBehind(back);
              go({ ...filters, after: previous || undefined });
            }}
          >
            {behind.length > 0 ? "Previous" : "First page"}
          </button>
        )}
        {next && (
          <button
            type="button"
            onClick={() => {
              setBehind([...behind, filters.after ?? ""]);
              go({ ...filters, after: next });
            }}
          >
            Next
          </button>
        )}
      </nav>
    </>
  );
}

function UserTable({ users, empty }: { users: User[]; empty: string }) {
  if (users.length === 0) return <p class="muted">{empty}</p>;
  return (
    <table class="list">
      <caption class="visually-hidden">Users</caption>
      <thead>
        <tr>
          <th scope="col">Username</th>
          <th scope="col">Name</th>
          <th scope="col">E-mail</th>
          <th scope="col">Role</th>
          <th scope="col">Created</th>
        </tr>
      </thead>
      <tbody>
        {users.map((u) => (
          <tr key={u.id}>
            <td data-label="Username">
              <a href={href(`/users/${u.id}`)}>
                <Text>{u.username}</Text>
              </a>
            </td>
            <td data-label="Name">
              <Text>{u.name}</Text>
            </td>
            <td data-label="E-mail" class="wrap">
              <Text>{u.email}</Text>
            </td>
            <td data-label="Role">{u.role}</td>
            <td data-label="Created">
              <Time iso={u.createdAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
