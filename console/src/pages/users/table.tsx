/** The users list's table: each user with their state, selectable, ordered by its column headers. */
import type { ComponentChildren } from "preact";
import type { UserListItem } from "../../api.ts";
import { href } from "../../router.ts";
import { Text, Time } from "../../ui.tsx";
import type { Sort } from "./query.ts";

/** A user's status in words: active, or disabled and until when. */
function Status({ user }: { user: UserListItem }) {
  if (!user.disabled) return <>Active</>;
  if (!user.disabled.until) return <>Disabled</>;
  return (
    <>
      Disabled until <Time iso={user.disabled.until} />
    </>
  );
}

/** Where the user came from, briefly. */
function Source({ user }: { user: UserListItem }) {
  const source = user.source;
  if (!source) return null;
  switch (source.type) {
    case "scim":
      return (
        <>
          SCIM: <Text>{source.name}</Text>
        </>
      );
    case "sso":
      return (
        <>
          SSO: <Text>{source.name}</Text>
        </>
      );
    case "import":
      return <>Import</>;
    default:
      return <>API</>;
  }
}

/**
 * A column header that orders the whole list by its column (through the
 * API): a click sorts A to Z (oldest first), again Z to A; `latestFirst`
 * starts the other way (the last sign-in: whoever signed in latest).
 * `aria-sort` says which column orders the list, and which way.
 */
function SortHeader(
  { label, by, sort, onSort, latestFirst = false, children }: {
    label: string;
    by: "createdAt" | "username" | "lastLoginAt";
    sort: Sort;
    onSort: (sort: Sort) => void;
    latestFirst?: boolean;
    children?: ComponentChildren;
  },
) {
  const active = sort === by || sort === `-${by}`;
  const down = sort === `-${by}`;
  const first = latestFirst ? `-${by}` as Sort : by;
  const second = latestFirst ? by : `-${by}` as Sort;
  return (
    <th
      scope="col"
      class="sortable"
      aria-sort={active ? (down ? "descending" : "ascending") : undefined}
    >
      {children}
      <button
        type="button"
        class="sort"
        onClick={() => onSort(sort === first ? second : first)}
      >
        {label}
        <span aria-hidden="true">{active ? (down ? " ↓" : " ↑") : ""}</span>
      </button>
    </th>
  );
}

export function UserTable(
  { users, selected, onSelect, empty, sort, onSort }: {
    users: UserListItem[];
    selected: Map<number, UserListItem>;
    onSelect: (users: UserListItem[], on: boolean) => void;
    empty: string;
    sort: Sort;
    onSort: (sort: Sort) => void;
  },
) {
  if (users.length === 0) return <p class="muted">{empty}</p>;
  const all = users.every((u) => selected.has(u.id));
  return (
    <table class="list users">
      <caption class="visually-hidden">Users</caption>
      <thead>
        <tr>
          <SortHeader
            label="Username"
            by="username"
            sort={sort}
            onSort={onSort}
          >
            <input
              type="checkbox"
              class="select"
              aria-label="Select every user on this page"
              checked={all}
              onChange={(e) => onSelect(users, e.currentTarget.checked)}
            />
            {" "}
          </SortHeader>
          <th scope="col">Name</th>
          <th scope="col">E-mail</th>
          <th scope="col">Role</th>
          <th scope="col">Status</th>
          <SortHeader
            label="Last sign-in"
            by="lastLoginAt"
            sort={sort}
            onSort={onSort}
            latestFirst
          />
          <th scope="col">Second factor</th>
          <th scope="col">Source</th>
          <SortHeader
            label="Created"
            by="createdAt"
            sort={sort}
            onSort={onSort}
          />
        </tr>
      </thead>
      <tbody>
        {users.map((u) => (
          <tr key={u.id}>
            {/* The box sits in the username's cell: the row's first cell stays its name. */}
            <td data-label="Username">
              <span>
                <input
                  type="checkbox"
                  class="select"
                  aria-label={`Select ${u.username}`}
                  checked={selected.has(u.id)}
                  onChange={(e) => onSelect([u], e.currentTarget.checked)}
                />
                <a href={href(`/users/${u.id}`)}>
                  <Text>{u.username}</Text>
                </a>
              </span>
            </td>
            <td data-label="Name">
              <Text>{u.name}</Text>
            </td>
            <td data-label="E-mail" class="wrap">
              <Text>{u.email}</Text>
            </td>
            <td data-label="Role">{u.role}</td>
            <td data-label="Status">
              <Status user={u} />
            </td>
            <td data-label="Last sign-in">
              <Time iso={u.lastLoginAt} />
            </td>
            <td data-label="Second factor">
              {u.mfaEnabled ? "Enrolled" : "None"}
            </td>
            <td data-label="Source">
              <Source user={u} />
            </td>
            <td data-label="Created">
              <Time iso={u.createdAt} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
