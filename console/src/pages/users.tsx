/**
 * Finding users among any number: search, role and status filters, one
 * page of PAGE_SIZE at a time through the API's `next` links, each user
 * with their state (`include=state`). Nothing loads more than one page, so
 * a million users cost what ten do; the total is the API's count (exact up
 * to 10,000, an estimate past that, said as one).
 *
 * Rows can be selected for bulk actions (disable, enable, delete, export):
 * each asks first, naming how many, then goes through the per-user
 * endpoints one at a time and sums up what was done and what failed.
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { useCan } from "../access.ts";
import type { Account } from "../../../clients/mod.ts";
import {
  api,
  type Failure,
  nextCursor,
  type Reply,
  send,
  type UserListItem,
} from "../api.ts";
import { currentLocation, href, navigate } from "../router.ts";
import {
  ConfirmDialog,
  Done,
  Field,
  Notice,
  takeFlash,
  Text,
  Time,
  Title,
  useLoad,
} from "../ui.tsx";

export const PAGE_SIZE = 50;
/** How long typing must pause before the search runs. */
const SEARCH_DELAY_MS = 120;

type Filters = {
  q?: string;
  role?: "admin" | "viewer";
  status?: "active" | "disabled";
  after?: string;
};

/**
 * How the loaded page is ordered. The API lists oldest first; these
 * order the page shown, not the whole list (said beside the control).
 */
const SORTS = {
  "created": "Created, oldest first",
  "-created": "Created, newest first",
  "username": "Username, A to Z",
  "-username": "Username, Z to A",
} as const;
type Sort = keyof typeof SORTS;

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

function sortOf(query: URLSearchParams): Sort {
  const sort = query.get("sort");
  return sort !== null && Object.hasOwn(SORTS, sort) ? sort as Sort : "created";
}

const collator = new Intl.Collator(undefined, { sensitivity: "base" });

function sorted(users: UserListItem[], sort: Sort): UserListItem[] {
  const by = sort.replace("-", "");
  const sign = sort.startsWith("-") ? -1 : 1;
  return [...users].sort((a, b) =>
    sign *
    (by === "username"
      ? collator.compare(a.username, b.username) || a.id - b.id
      : a.createdAt.localeCompare(b.createdAt) || a.id - b.id)
  );
}

/** The export's address for these filters (or these users), as a link downloads it. */
function exportHref(filters: Filters, ids?: number[]): string {
  const params = new URLSearchParams();
  if (ids) params.set("ids", ids.join(","));
  else {
    for (const name of ["role", "status", "q"] as const) {
      const value = filters[name];
      if (value) params.set(name, value);
    }
  }
  const query = params.toString();
  return `/api/users/export${query ? `?${query}` : ""}`;
}

/** Starts a download of `url` as `name`, as a click on a link would. */
function download(url: string, name: string) {
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
}

export function Users({ query, me }: { query: URLSearchParams; me: Account }) {
  const filters = filtersOf(query);
  const can = useCan();
  const sort = sortOf(query);
  const [typed, setTyped] = useState(filters.q ?? "");
  // Cursors of the pages before this one, for "Previous".
  const [behind, setBehind] = useState<string[]>([]);
  const [selected, setSelected] = useState<Map<number, UserListItem>>(
    new Map(),
  );
  // A message left by the page before (a deletion's), shown once.
  const [news, setNews] = useState(takeFlash);
  const go = (next: Filters & { sort?: Sort }, replace = false) =>
    navigate(
      href("/users", { ...next, sort: sort === "created" ? undefined : sort }),
      replace,
    );

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
          query: {
            ...rest,
            limit: PAGE_SIZE,
            include: "state",
            ...(after ? { after } : {}),
          },
        },
        signal,
      }), signal);
  }, key);

  // The total, for the filters alone (not the page).
  const countKey = JSON.stringify({ ...filters, after: undefined });
  const total = useLoad((signal) => {
    const { after: _, ...rest } = filters;
    return send(
      () => api.GET("/api/users/count", { params: { query: rest }, signal }),
      signal,
    );
  }, countKey);

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
    setSelected(new Map());
    setNews(undefined);
    go({ ...filters, ...change, after: undefined });
  };
  const users = reply?.ok ? sorted(reply.data, sort) : [];

  return (
    <>
      <div class="heading">
        <Title>Users</Title>
        <div class="actions">
          {can("users:export") && (
            <a
              class="button secondary"
              href={exportHref(filters)}
              download="users.ndjson"
            >
              Export
            </a>
          )}
          {can("users:create") && (
            <a class="button" href={href("/users/new")}>New user</a>
          )}
        </div>
      </div>
      {news && <Done>{news}</Done>}
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
        <Field label="Sort" id="sort" hint="Orders the users on this page">
          <select
            id="sort"
            value={sort}
            aria-describedby="sort-hint"
            onChange={(e) =>
              navigate(
                href("/users", {
                  ...filters,
                  sort: e.currentTarget.value === "created"
                    ? undefined
                    : e.currentTarget.value,
                }),
                true,
              )}
          >
            {Object.entries(SORTS).map(([value, label]) => (
              <option key={value} value={value}>{label}</option>
            ))}
          </select>
        </Field>
      </form>

      <p class="total" aria-live="polite">
        {total.reply?.ok && (total.reply.data.exact
          ? `${total.reply.data.count.toLocaleString()} ${
            total.reply.data.count === 1 ? "user" : "users"
          }`
          : `About ${total.reply.data.count.toLocaleString()} users (estimate)`)}
      </p>

      <Bulk
        selected={[...selected.values()]}
        me={me}
        onClear={() => setSelected(new Map())}
        onDone={() => {
          setNews(undefined);
          reload();
          total.reload();
        }}
      />

      {reply && !reply.ok && <Notice failure={reply} onRetry={reload} />}
      <div aria-live="polite" aria-busy={loading} class="results">
        {reply?.ok && (
          <UserTable
            users={users}
            selected={selected}
            onSelect={(changed, on) => {
              const now = new Map(selected);
              for (const u of changed) {
                if (on) now.set(u.id, u);
                else now.delete(u.id);
              }
              setSelected(now);
            }}
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
function Bulk(
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

function UserTable(
  { users, selected, onSelect, empty }: {
    users: UserListItem[];
    selected: Map<number, UserListItem>;
    onSelect: (users: UserListItem[], on: boolean) => void;
    empty: string;
  },
) {
  if (users.length === 0) return <p class="muted">{empty}</p>;
  const all = users.every((u) => selected.has(u.id));
  return (
    <table class="list users">
      <caption class="visually-hidden">Users</caption>
      <thead>
        <tr>
          <th scope="col">
            <input
              type="checkbox"
              class="select"
              aria-label="Select every user on this page"
              checked={all}
              onChange={(e) => onSelect(users, e.currentTarget.checked)}
            />{" "}
            Username
          </th>
          <th scope="col">Name</th>
          <th scope="col">E-mail</th>
          <th scope="col">Role</th>
          <th scope="col">Status</th>
          <th scope="col">Last sign-in</th>
          <th scope="col">Second factor</th>
          <th scope="col">Source</th>
          <th scope="col">Created</th>
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
