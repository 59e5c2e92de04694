/**
 * The users list's state in its address: the filters, the page's cursor and
 * the order, as the API takes them; and the export of the same.
 */

export type Filters = {
  q?: string;
  role?: "admin" | "viewer";
  status?: "active" | "disabled";
  after?: string;
};

/**
 * The list's orders: the API's `sort`, so the whole list is in that order,
 * every page of it (a cursor belongs to its order). Absent: oldest first.
 */
export const SORTS = {
  "createdAt": "Created, oldest first",
  "-createdAt": "Created, newest first",
  "username": "Username, A to Z",
  "-username": "Username, Z to A",
  "-lastLoginAt": "Last sign-in, latest first",
  "lastLoginAt": "Last sign-in, longest ago first",
} as const;
export type Sort = keyof typeof SORTS;
export const DEFAULT_SORT: Sort = "createdAt";

export function filtersOf(query: URLSearchParams): Filters {
  const role = query.get("role");
  const status = query.get("status");
  return {
    q: query.get("q") || undefined,
    role: role === "admin" || role === "viewer" ? role : undefined,
    status: status === "active" || status === "disabled" ? status : undefined,
    after: query.get("after") || undefined,
  };
}

export function sortOf(query: URLSearchParams): Sort {
  const sort = query.get("sort");
  return sort !== null && Object.hasOwn(SORTS, sort)
    ? sort as Sort
    : DEFAULT_SORT;
}

/** The export's address for these filters in this order (or these users), as a link downloads it. */
export function exportHref(
  filters: Filters,
  ids?: number[],
  sort: Sort = DEFAULT_SORT,
): string {
  const params = new URLSearchParams();
  if (ids) params.set("ids", ids.join(","));
  else {
    for (const name of ["role", "status", "q"] as const) {
      const value = filters[name];
      if (value) params.set(name, value);
    }
  }
  if (sort !== DEFAULT_SORT) params.set("sort", sort);
  const query = params.toString();
  return `/api/users/export${query ? `?${query}` : ""}`;
}

/** Starts a download of `url` as `name`, as a click on a link would. */
export function download(url: string, name: string) {
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
}
