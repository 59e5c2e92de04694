/**
 * Cursor pagination (RFC 9865) of `/scim/v2` lists: advertised in
 * ServiceProviderConfig; a walk by `nextCursor` while other requests
 * delete and create resources between and beside its pages returns every
 * resource that existed throughout exactly once; `previousCursor` walks
 * back; a malformed, foreign or expired cursor is refused with RFC 9865's
 * scimType, never a 500.
 *
 * Seeded: the seed is printed, and SCIM_CURSOR_SEED=<seed> runs the same
 * walks again.
 */
import fc from "fast-check";
import { Buffer } from "node:buffer";
import { assert, assertEquals } from "./support/assert.ts";
import { sharedService } from "./support/service.ts";
import {
  assertScimError,
  clearScim,
  createConnection,
  LIST_SCHEMA,
  type ScimAnswer,
  scimClient,
} from "./scim_support.ts";

const SEED = Number(
  Deno.env.get("SCIM_CURSOR_SEED") ?? Date.now() % 2 ** 31,
);
console.log(
  `scim cursor seed ${SEED} (SCIM_CURSOR_SEED=${SEED} repeats this run)`,
);

const service = sharedService({}, { bcryptCost: 4 });

const SEARCH = "urn:ietf:params:scim:api:messages:2.0:SearchRequest";

/** A small seeded generator (mulberry32): the walks' choices. */
function random(seed: number) {
  let a = seed >>> 0;
  const next = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
  return {
    below: (n: number) => Math.floor(next() * n),
    name: () => Math.floor(next() * 2 ** 32).toString(36),
  };
}

async function fresh() {
  const svc = await service();
  await clearScim(svc);
  const conn = await createConnection(svc, "Okta");
  return { svc, conn, idp: scimClient(svc, conn.token) };
}

type Idp = ReturnType<typeof scimClient>;

async function createUser(idp: Idp, name: string) {
  const made = await idp.post("/Users", { userName: `${name}@example.com` });
  assertEquals(made.status, 201, JSON.stringify(made.body));
  return made.body.id as string;
}

async function createGroup(idp: Idp, name: string) {
  const made = await idp.post("/Groups", { displayName: name });
  assertEquals(made.status, 201, JSON.stringify(made.body));
  return made.body.id as string;
}

/** Every resource id a plain list holds now (by startIndex, at most 1000). */
async function allIds(idp: Idp, path: "/Users" | "/Groups") {
  const list = await idp.get(`${path}?count=1000&attributes=id`);
  assertEquals(list.status, 200);
  return (list.body.Resources ?? []).map((r: { id: string }) => r.id);
}

/** The ids of a page's resources. */
const idsOf = (page: ScimAnswer): string[] =>
  (page.body.Resources ?? []).map((r: { id: string }) => r.id);

/** At the root, a group's id is marked `g` (a user and a group may share one). */
const typedIdsOf = (page: ScimAnswer): string[] =>
  (page.body.Resources ?? []).map((
    r: { id: string; meta: { resourceType: string } },
  ) => r.meta.resourceType === "Group" ? `g${r.id}` : r.id);

/**
 * Walks a list by `nextCursor` from its first page, running `churn` beside
 * each page's request and between pages; the ids of every page, in order.
 */
async function walk(
  page: (cursor: string) => Promise<ScimAnswer>,
  churn: () => Promise<unknown>,
  ids = idsOf,
) {
  const seen: string[] = [];
  let cursor: string | undefined = "";
  let pages = 0;
  while (cursor !== undefined) {
    const [answer]: [ScimAnswer, unknown] = await Promise.all([
      page(cursor),
      churn(),
    ]);
    assertEquals(answer.status, 200, JSON.stringify(answer.body));
    assertEquals(answer.body.schemas, [LIST_SCHEMA]);
    assertEquals(answer.body.startIndex, undefined);
    assertEquals(answer.body.itemsPerPage, ids(answer).length);
    seen.push(...ids(answer));
    cursor = answer.body.nextCursor;
    assert(++pages < 200, "the walk ends");
    await churn();
  }
  return { seen, pages };
}

/**
 * Resources made and deleted while a walk goes on: each round deletes
 * `deletes` of the live ones (never the kept ones) and creates `creates`.
 */
function churner(
  rng: ReturnType<typeof random>,
  live: string[],
  make: () => Promise<string>,
  remove: (id: string) => Promise<unknown>,
  { deletes = 3, creates = 3, keep = new Set<string>() } = {},
) {
  const deleted = new Set<string>();
  const created = new Set<string>();
  const round = async () => {
    const doomed: string[] = [];
    for (let i = 0; i < deletes; i++) {
      const candidates = live.filter((id) => !keep.has(id));
      if (candidates.length === 0) break;
      const id = candidates[rng.below(candidates.length)];
      live.splice(live.indexOf(id), 1);
      doomed.push(id);
      deleted.add(id);
    }
    const made = await Promise.all([
      ...doomed.map(remove),
      ...Array.from({ length: creates }, make),
    ]);
    for (const id of made.slice(doomed.length) as string[]) {
      live.push(id);
      created.add(id);
    }
  };
  return { round, deleted, created };
}

/** Every resource there from the walk's start to its end is seen, once; nothing else is. */
function assertExactlyOnce(
  seen: string[],
  before: string[],
  churned: { deleted: Set<string>; created: Set<string> },
) {
  assertEquals(new Set(seen).size, seen.length, "no resource twice");
  const survivors = before.filter((id) => !churned.deleted.has(id));
  const missed = survivors.filter((id) => !seen.includes(id));
  assertEquals(missed, [], "every resource that existed throughout");
  const known = new Set([...before, ...churned.created]);
  assertEquals(seen.filter((id) => !known.has(id)), [], "nothing unknown");
  assert(churned.deleted.size > 10 && churned.created.size > 10, "churned");
}

Deno.test("ServiceProviderConfig advertises cursor pagination (RFC 9865) beside index pagination", async () => {
  const svc = await service();
  const res = await svc.fetch("/scim/v2/ServiceProviderConfig");
  const body = await res.json();
  assertEquals(body.pagination, {
    cursor: true,
    index: true,
    defaultPaginationMethod: "index",
    defaultPageSize: 100,
    maxPageSize: 1000,
    cursorTimeout: 3600,
  });
});

Deno.test("a walk of every user by cursor, while users are deleted and created between and beside its pages, returns every user that existed throughout exactly once", async () => {
  const { idp } = await fresh();
  const rng = random(SEED);
  for (let i = 0; i < 120; i++) await createUser(idp, `w${rng.name()}`);
  const orders: {
    name: string;
    page: (cursor: string) => Promise<ScimAnswer>;
  }[] = [
    {
      name: "by id (GET)",
      page: (cursor) =>
        idp.get(`/Users?count=7&attributes=id&cursor=${cursor}`),
    },
    {
      // Random names: deletes and creations fall before and after the place.
      name: "by userName (POST .search)",
      page: (cursor) =>
        idp.post("/Users/.search", {
          schemas: [SEARCH],
          sortBy: "userName",
          count: 9,
          attributes: ["id"],
          cursor,
        }),
    },
    {
      name: "by meta.created, descending",
      page: (cursor) =>
        idp.get(
          `/Users?sortBy=meta.created&sortOrder=descending&count=8&cursor=${cursor}`,
        ),
    },
  ];
  for (const order of orders) {
    const before = await allIds(idp, "/Users");
    const admin = before[0];
    const live = [...before];
    const churned = churner(
      rng,
      live,
      () => createUser(idp, `c${rng.name()}`),
      (id) => idp.delete(`/Users/${id}`),
      { keep: new Set([admin]) },
    );
    const { seen, pages } = await walk(order.page, churned.round);
    assert(pages > 10, `${order.name}: ${pages} pages`);
    assertExactlyOnce(seen, before, churned);
  }
});

Deno.test("a walk of a connection's groups by cursor, sorted by displayName, under deletes and creations, returns every group that existed throughout exactly once", async () => {
  const { idp } = await fresh();
  const rng = random(SEED + 1);
  for (let i = 0; i < 60; i++) await createGroup(idp, `G ${rng.name()}`);
  const before = await allIds(idp, "/Groups");
  const churned = churner(
    rng,
    [...before],
    () => createGroup(idp, `N ${rng.name()}`),
    (id) => idp.delete(`/Groups/${id}`),
    { deletes: 2, creates: 2 },
  );
  const { seen } = await walk(
    (cursor) => idp.get(`/Groups?sortBy=displayName&count=5&cursor=${cursor}`),
    churned.round,
  );
  assertExactlyOnce(seen, before, churned);
});

Deno.test("a walk at the root (POST /scim/v2/.search) passes from the users to the groups, each resource that existed throughout once", async () => {
  const { idp } = await fresh();
  const rng = random(SEED + 2);
  for (let i = 0; i < 40; i++) await createUser(idp, `r${rng.name()}`);
  for (let i = 0; i < 40; i++) await createGroup(idp, `R ${rng.name()}`);
  const users = await allIds(idp, "/Users");
  const groups = (await allIds(idp, "/Groups")).map((id: string) => `g${id}`);
  const before = [...users, ...groups];
  const live = [...before];
  const churned = churner(
    rng,
    live,
    () =>
      rng.below(2) === 0
        ? createUser(idp, `s${rng.name()}`)
        : createGroup(idp, `S ${rng.name()}`).then((id) => `g${id}`),
    (id) =>
      idp.delete(
        id.startsWith("g") ? `/Groups/${id.slice(1)}` : `/Users/${id}`,
      ),
    { keep: new Set([users[0]]) },
  );
  const { seen } = await walk(
    (cursor) =>
      idp.post("/.search", {
        schemas: [SEARCH],
        count: 6,
        attributes: ["id"],
        cursor,
      }),
    churned.round,
    typedIdsOf,
  );
  assertExactlyOnce(seen, before, churned);
  // The users come first, then the groups.
  const firstGroup = seen.findIndex((id) => id.startsWith("g"));
  assert(seen.slice(firstGroup).every((id) => id.startsWith("g")));
});

Deno.test("previousCursor walks back through the same pages; the first page has none, the last no nextCursor", async () => {
  const { idp } = await fresh();
  for (let i = 0; i < 24; i++) {
    await createUser(idp, `p${String(i).padStart(2, "0")}`);
  }
  const forward: string[][] = [];
  let page = await idp.get("/Users?sortBy=userName&count=4&cursor=");
  assertEquals(page.body.previousCursor, undefined);
  assertEquals(page.body.totalResults, 25);
  forward.push(idsOf(page));
  while (page.body.nextCursor) {
    page = await idp.get(
      `/Users?sortBy=userName&count=4&cursor=${page.body.nextCursor}`,
    );
    assertEquals(page.status, 200);
    assert(
      page.body.previousCursor,
      "a page after the first has a previousCursor",
    );
    forward.push(idsOf(page));
  }
  assertEquals(forward.map((p) => p.length), [4, 4, 4, 4, 4, 4, 1]);
  const back: string[][] = [idsOf(page)];
  while (page.body.previousCursor) {
    page = await idp.post("/Users/.search", {
      schemas: [SEARCH],
      sortBy: "userName",
      count: 4,
      cursor: page.body.previousCursor,
    });
    assertEquals(page.status, 200);
    assert(page.body.nextCursor, "a page before the last has a nextCursor");
    back.unshift(idsOf(page));
  }
  assertEquals(back, forward);
  // A count of 0 answers the total alone.
  const total = await idp.get("/Users?count=0&cursor=");
  assertEquals(total.body, {
    schemas: [LIST_SCHEMA],
    totalResults: 25,
    itemsPerPage: 0,
  });
});

/** The fields of a cursor as the service writes them (base64url of a JSON array). */
const fieldsOf = (cursor: string) =>
  JSON.parse(Buffer.from(cursor, "base64url").toString()) as unknown[];
const cursorOf = (fields: unknown[]) =>
  Buffer.from(JSON.stringify(fields)).toString("base64url");

Deno.test("a malformed or forged cursor answers 400 invalidCursor, never a 500", async () => {
  const { idp } = await fresh();
  for (let i = 0; i < 5; i++) await createUser(idp, `m${i}`);
  const first = await idp.get("/Users?sortBy=meta.created&count=2&cursor=");
  const valid = first.body.nextCursor as string;
  const [binding, issued, back, segment, key, id] = fieldsOf(valid) as [
    string,
    number,
    number,
    number,
    string,
    number,
  ];
  const at = (c: string) =>
    idp.get(
      `/Users?sortBy=meta.created&count=2&cursor=${encodeURIComponent(c)}`,
    );
  for (
    const bad of [
      "x",
      "not a cursor",
      "!!!!",
      valid.slice(0, -3),
      valid + "A",
      "A".repeat(9000),
      // The service's fields, forged: an impossible time, SQL, an id past
      // 32 bits, another segment, a key where the sort has none.
      cursorOf([binding, issued, back, segment, "99999999999999999999", id]),
      cursorOf([binding, issued, back, segment, "1; drop table users", id]),
      cursorOf([binding, issued, back, segment, key, 2 ** 31]),
      cursorOf([binding, issued, back, segment, key, -1]),
      cursorOf([binding, issued, back, 1, key, id]),
      cursorOf([binding, issued, 2, segment, key, id]),
      cursorOf([binding, "now", back, segment, key, id]),
      cursorOf([binding, issued, back, segment, "x".repeat(2000), id]),
      cursorOf(["another list", issued, back, segment, key, id]),
      cursorOf([binding, issued + 86400, back, segment, key, id]),
      cursorOf({ binding } as never),
    ]
  ) {
    assertScimError(await at(bad), 400, "invalidCursor");
  }
  // A text the database cannot hold, as a userName's place.
  const byName = fieldsOf(
    (await idp.get("/Users?sortBy=userName&count=2&cursor=")).body.nextCursor,
  );
  byName[4] = "\u0000";
  assertScimError(
    await idp.get(
      `/Users?sortBy=userName&count=2&cursor=${cursorOf(byName)}`,
    ),
    400,
    "invalidCursor",
  );
  // Not a string: as a SearchRequest may send it.
  assertScimError(
    await idp.post("/Users/.search", { schemas: [SEARCH], cursor: 5 }),
    400,
    "invalidCursor",
  );
  // Seeded mutations of a valid cursor: refused, or (a digit of its place
  // changed) a page from another place; never anything else.
  await fc.assert(
    fc.asyncProperty(
      fc.array(
        fc.tuple(fc.nat(), fc.constantFrom(..."AZaz09-_+/=%.~"), fc.boolean()),
        { minLength: 1, maxLength: 4 },
      ),
      async (edits) => {
        let text = valid;
        for (const [i, ch, insert] of edits) {
          const k = i % (text.length + 1);
          text = text.slice(0, k) + ch + text.slice(insert ? k : k + 1);
        }
        const answer = await at(text);
        assert(
          answer.status === 200 ||
            (answer.status === 400 &&
              ["invalidCursor", "expiredCursor"].includes(
                answer.body.scimType,
              )),
          `${text}: ${answer.status} ${JSON.stringify(answer.body)}`,
        );
      },
    ),
    { numRuns: 60, seed: SEED },
  );
});

Deno.test("a cursor serves only the list it was given for: another filter, sort, order, resource type or connection answers 400 invalidCursor", async () => {
  const { svc, idp } = await fresh();
  for (let i = 0; i < 4; i++) await createUser(idp, `f${i}`);
  for (let i = 0; i < 4; i++) await createGroup(idp, `F${i}`);
  const filter = encodeURIComponent('userName sw "f"');
  const mine = await idp.get(`/Users?filter=${filter}&count=1&cursor=`);
  const cursor = mine.body.nextCursor as string;
  assert(cursor);
  assertEquals(
    (await idp.get(`/Users?filter=${filter}&count=1&cursor=${cursor}`)).status,
    200,
  );
  const entra = scimClient(svc, (await createConnection(svc, "Entra")).token);
  for (
    const [client, path] of [
      [idp, `/Users?count=1&cursor=${cursor}`],
      [
        idp,
        `/Users?filter=${
          encodeURIComponent('userName sw "f1"')
        }&count=1&cursor=${cursor}`,
      ],
      [idp, `/Users?filter=${filter}&sortBy=userName&count=1&cursor=${cursor}`],
      [
        idp,
        `/Users?filter=${filter}&sortOrder=descending&count=1&cursor=${cursor}`,
      ],
      [idp, `/Groups?count=1&cursor=${cursor}`],
      [entra, `/Users?filter=${filter}&count=1&cursor=${cursor}`],
    ] as const
  ) {
    assertScimError(await client.get(path), 400, "invalidCursor");
  }
  assertScimError(
    await idp.post("/.search", {
      schemas: [SEARCH],
      filter: 'userName sw "f"',
      cursor,
    }),
    400,
    "invalidCursor",
  );
});

Deno.test("a cursor older than cursorTimeout (3600 seconds) answers 400 expiredCursor; a younger one serves", async () => {
  const { idp } = await fresh();
  for (let i = 0; i < 3; i++) await createUser(idp, `e${i}`);
  const cursor = (await idp.get("/Users?count=1&cursor=")).body.nextCursor;
  const realNow = Date.now;
  const later = async (seconds: number) => {
    Date.now = () => realNow() + seconds * 1000;
    try {
      return await idp.get(`/Users?count=1&cursor=${cursor}`);
    } finally {
      Date.now = realNow;
    }
  };
  assertEquals((await later(3590)).status, 200);
  const expired = await later(3602);
  assertScimError(expired, 400, "expiredCursor");
  assertEquals(expired.body.detail, "The cursor has expired");
  // A malformed cursor is invalid, whenever it is sent.
  assertEquals(
    (await idp.get("/Users?count=1&cursor=bad")).body.detail,
    "The cursor is not valid",
  );
});
