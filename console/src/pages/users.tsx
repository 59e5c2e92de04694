/**
 * Finding users among any number: search, role and status filters, the
 * whole list's order (the API's `sort`, by a column header or the Sort
 * control), one page of PAGE_SIZE at a time through the API's `next`
 * links, each user with their state (`include=state`). Nothing loads more
 * than one page, so a million users cost what ten do; the total is the
 * API's count (exact up to 10,000, an estimate past that, said as one).
 *
 * Rows can be selected for bulk actions (users/bulk.tsx).
 */
import { useEffect, useRef, useState } from "preact/hooks";
import { useCan } from "../access.ts";
import type { Account } from "../../../clients/mod.ts";
import { api, nextCursor, send, type UserListItem } from "../api.ts";
import { currentLocation, href, navigate } from "../router.ts";
import { Done, Field, Notice, takeFlash, Title, useLoad } from "../ui.tsx";
import { Bulk } from "./users/bulk.tsx";
import {
  DEFAULT_SORT,
  exportHref,
  type Filters,
  filtersOf,
  type Sort,
  sortOf,
  SORTS,
} from "./users/query.ts";
import { UserTable } from "./users/table.tsx";

export const PAGE_SIZE = 50;
/** How long typing must pause before the search runs. */
const SEARCH_DELAY_MS = 120;

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
  const go = (next: Filters, replace = false, by: Sort = sort) =>
    navigate(
      href("/users", { ...next, sort: by === DEFAULT_SORT ? undefined : by }),
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

  // The order is the query's: another order is another list, read again.
  const key = JSON.stringify({ ...filters, sort });
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
            ...(sort === DEFAULT_SORT ? {} : { sort }),
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
  const users = reply?.ok ? reply.data : [];
  // A new order starts at its first page: a cursor is a place in one order.
  const sortBy = (by: Sort) => {
    setBehind([]);
    go({ ...filters, after: undefined }, true, by);
  };

  return (
    <>
      <div class="heading">
        <Title>Users</Title>
        <div class="actions">
          {can("users:export") && (
            <a
              class="button secondary"
              href={exportHref(filters, undefined, sort)}
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
        <Field label="Sort" id="sort" hint="Orders the whole list">
          <select
            id="sort"
            value={sort}
            aria-describedby="sort-hint"
            onChange={(e) => sortBy(e.currentTarget.value as Sort)}
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
            sort={sort}
            onSort={sortBy}
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
