/**
 * SCIM filters: each expression of the table selects, through
 * `GET /scim/v2/Users?filter=...` (or Groups), exactly the rows the same
 * predicate written by hand in plain SQL selects over the seeded users.
 */
import { assertEquals } from "./support/assert.ts";
import { sharedService, type TestService } from "./support/service.ts";
import {
  clearScim,
  createConnection,
  ENTERPRISE,
  scimClient,
} from "./scim_support.ts";

const service = sharedService({}, { bcryptCost: 4, inProcess: false });

const FIRST = ["Alice", "Bob", "Carol", "Dave", "Eve", "Frank", "Grace"];
const DOMAINS = ["example.com", "example.org", "corp.test"];

/** 21 users of varied names, e-mails, states and external ids. */
async function seed(svc: TestService) {
  await clearScim(svc);
  const conn = await createConnection(svc, "Okta");
  const idp = scimClient(svc, conn.token);
  const ids: string[] = [];
  for (let i = 0; i < 21; i++) {
    const first = FIRST[i % FIRST.length];
    const domain = DOMAINS[i % DOMAINS.length];
    const userName = `${first.toLowerCase()}.${i}@${domain}`;
    const emails = [{ value: userName, type: "work", primary: true }];
    if (i % 4 === 0) {
      emails.push({
        value: `${first}${i}@home.test`,
        type: "home",
        primary: false,
      });
    }
    const made = await idp.post("/Users", {
      userName: i % 5 === 0 ? userName.toUpperCase() : userName,
      name: {
        givenName: first,
        familyName: `Family${i}`,
        ...i % 3 === 0 && { formatted: `${first} Formatted ${i}` },
      },
      ...i % 2 === 0 && { displayName: `${first} D${i}` },
      emails,
      active: i % 6 !== 0,
      ...i % 3 !== 2 && { externalId: `ext-${i}` },
      ...i % 7 === 0 && { [ENTERPRISE]: { department: "Sales" } },
    });
    assertEquals(made.status, 201, JSON.stringify(made.body));
    ids.push(made.body.id);
  }
  const groups: string[] = [];
  for (let g = 0; g < 5; g++) {
    const made = await idp.post("/Groups", {
      displayName: g % 2 ? `Team ${g}` : `Admins ${g}`,
      ...g !== 3 && { externalId: `grp-${g}` },
      members: ids.filter((_, i) => i % (g + 2) === 0).map((value) => ({
        value,
      })),
    });
    assertEquals(made.status, 201);
    groups.push(made.body.id);
  }
  return { conn, idp, ids, groups };
}

/** The ids the filter selects through SCIM, sorted. */
async function scimIds(
  idp: ReturnType<typeof scimClient>,
  resource: "Users" | "Groups",
  filter: string,
) {
  const res = await idp.get(
    `/${resource}?count=1000&attributes=id&filter=${
      encodeURIComponent(filter)
    }`,
  );
  assertEquals(res.status, 200, `${filter}: ${JSON.stringify(res.body)}`);
  assertEquals(res.body.totalResults, res.body.Resources.length, filter);
  return (res.body.Resources as { id: string }[]).map((r) => Number(r.id))
    .sort((a, b) => a - b);
}

/** The ids a hand-written predicate selects, sorted. */
async function sqlIds(
  svc: TestService,
  connectionId: number,
  resource: "Users" | "Groups",
  predicate: string,
) {
  const rows = resource === "Users"
    ? await svc.sql.unsafe(
      `select u.id from users u left join scim_user_links l
         on l.user_id = u.id and l.connection_id = $1
       where ${predicate} order by u.id`,
      [connectionId],
    )
    : await svc.sql.unsafe(
      `select g.id from scim_groups g
       where g.connection_id = $1 and (${predicate}) order by g.id`,
      [connectionId],
    );
  return rows.map((r) => Number(r.id));
}

/** An e-mail predicate on `e` (an element): over the e-mails sent, else the user's one. */
const emails = (on: string) =>
  `(case when l.attributes ? 'emails'
     then exists (select 1 from jsonb_array_elements(l.attributes->'emails') e
       where ${on})
     else exists (select 1 from (select jsonb_build_object('value', u.email,
       'primary', true) as e) x where ${on.replaceAll("e->>", "x.e->>")}) end)`;

const ACTIVE = "u.disabled_at is null";

Deno.test("every filter of the table selects what its predicate in plain SQL selects", async () => {
  const svc = await service();
  const { conn, idp, ids, groups } = await seed(svc);
  const [{ pivot }] = await svc.sql<{ pivot: string }[]>`
    select to_char(created_at at time zone 'UTC',
      'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as pivot
    from users where id = ${Number(ids[10])}`;
  const someId = ids[4];
  const memberId = ids[6];

  const USERS: [string, string][] = [
    [
      'userName eq "alice.0@example.com"',
      "lower(u.username) = 'alice.0@example.com'",
    ],
    [
      'userName eq "ALICE.0@EXAMPLE.COM"',
      "lower(u.username) = 'alice.0@example.com'",
    ],
    [
      'userName ne "bob.1@example.org"',
      "lower(u.username) <> 'bob.1@example.org'",
    ],
    ['userName co "ice"', "lower(u.username) like '%ice%'"],
    ['userName sw "car"', "lower(u.username) like 'car%'"],
    ['userName sw "ALICE.0@"', "lower(u.username) like 'alice.0@%'"],
    ['userName ew ".org"', "lower(u.username) like '%.org'"],
    ['userName gt "eve"', "lower(u.username) > 'eve' collate \"C\""],
    [
      'userName ge "eve.4@example.org"',
      "lower(u.username) >= 'eve.4@example.org' collate \"C\"",
    ],
    ['userName lt "bob"', "lower(u.username) < 'bob' collate \"C\""],
    ['userName le "admin"', "lower(u.username) <= 'admin' collate \"C\""],
    ["userName pr", "true"],
    [
      'urn:ietf:params:scim:schemas:core:2.0:User:userName sw "d"',
      "lower(u.username) like 'd%'",
    ],
    ["active eq true", ACTIVE],
    ["active eq false", `not (${ACTIVE})`],
    ["active ne false", ACTIVE],
    ["active pr", "true"],
    ['externalId eq "ext-3"', "l.external_id = 'ext-3'"],
    ['externalId eq "EXT-3"', "l.external_id = 'EXT-3'"],
    ["externalId pr", "l.external_id is not null"],
    ['externalId sw "ext-1"', "l.external_id like 'ext-1%'"],
    ["not (externalId pr)", "l.external_id is null"],
    [`id eq "${someId}"`, `u.id = ${someId}`],
    [`id ne "${someId}"`, `u.id <> ${someId}`],
    [`id gt "${someId}"`, `u.id > ${someId}`],
    ['id eq "not-a-number"', "false"],
    [
      'displayName eq "alice d0"',
      "lower(coalesce(l.attributes->>'displayName', u.name)) = 'alice d0'",
    ],
    [
      'displayName co "formatted"',
      "lower(coalesce(l.attributes->>'displayName', u.name)) like '%formatted%'",
    ],
    [
      'name.formatted sw "grace"',
      "lower(coalesce(l.attributes->'name'->>'formatted', u.name)) like 'grace%'",
    ],
    [
      "name.formatted pr",
      "coalesce(l.attributes->'name'->>'formatted', u.name) <> ''",
    ],
    [
      'emails.value ew "@home.test"',
      emails("lower(e->>'value') like '%@home.test'"),
    ],
    [
      'emails co "example.org"',
      emails("lower(e->>'value') like '%example.org%'"),
    ],
    [
      'emails[type eq "work"].value sw "frank"',
      emails("e->>'type' = 'work' and lower(e->>'value') like 'frank%'"),
    ],
    ['emails[type eq "home"]', emails("e->>'type' = 'home'")],
    [
      'emails.value eq "EVE4@HOME.TEST"',
      emails("lower(e->>'value') = 'eve4@home.test'"),
    ],
    [
      'emails eq "Bob.1@Example.org"',
      emails("lower(e->>'value') = 'bob.1@example.org'"),
    ],
    [
      'emails[type eq "home" and value eq "eve4@Home.Test"]',
      emails("e->>'type' = 'home' and lower(e->>'value') = 'eve4@home.test'"),
    ],
    [
      'not (emails.value eq "EVE4@HOME.TEST")',
      `not ${emails("lower(e->>'value') = 'eve4@home.test'")}`,
    ],
    [
      'emails[type eq "home" and value co "1"]',
      emails("e->>'type' = 'home' and e->>'value' like '%1%'"),
    ],
    ["emails[primary eq true]", emails("e->>'primary' = 'true'")],
    ["emails.value pr", emails("coalesce(e->>'value', '') <> ''")],
    [
      `meta.created gt "${pivot}"`,
      `date_trunc('milliseconds', u.created_at) > '${pivot}'::timestamptz`,
    ],
    [
      `meta.created le "${pivot}"`,
      `date_trunc('milliseconds', u.created_at) <= '${pivot}'::timestamptz`,
    ],
    [
      `meta.lastModified ge "${pivot}"`,
      `date_trunc('milliseconds', coalesce(u.modified_at, u.created_at)) >= '${pivot}'::timestamptz`,
    ],
    ["meta.created pr", "true"],
    [
      'userName sw "a" and active eq true',
      `lower(u.username) like 'a%' and ${ACTIVE}`,
    ],
    [
      'userName sw "a" or userName sw "b"',
      "lower(u.username) like 'a%' or lower(u.username) like 'b%'",
    ],
    [
      'not (userName sw "a" or userName sw "b")',
      "not (lower(u.username) like 'a%' or lower(u.username) like 'b%')",
    ],
    [
      '(userName ew ".com" or userName ew ".org") and not (active eq false)',
      `(lower(u.username) like '%.com' or lower(u.username) like '%.org') and ${ACTIVE}`,
    ],
    [
      'userName ew ".test" and (externalId pr or displayName co "d")',
      "lower(u.username) like '%.test' and (l.external_id is not null or lower(coalesce(l.attributes->>'displayName', u.name)) like '%d%')",
    ],
    [
      'active eq false or emails[type eq "home"] and externalId eq "ext-8"',
      `not (${ACTIVE}) or (${
        emails("e->>'type' = 'home'")
      } and l.external_id = 'ext-8')`,
    ],
    [
      'USERNAME Eq "carol.2@corp.test"',
      "lower(u.username) = 'carol.2@corp.test'",
    ],
  ];
  const GROUPS: [string, string][] = [
    ['displayName eq "admins 0"', "lower(g.display_name) = 'admins 0'"],
    ['displayName sw "Team"', "lower(g.display_name) like 'team%'"],
    ['externalId eq "grp-2"', "g.external_id = 'grp-2'"],
    ["externalId pr", "g.external_id is not null"],
    [
      `members.value eq "${memberId}"`,
      `exists (select 1 from scim_members m where m.group_id = g.id and m.user_id = ${memberId})`,
    ],
    [
      `members[value eq "${memberId}"] and displayName co "admins"`,
      `exists (select 1 from scim_members m where m.group_id = g.id and m.user_id = ${memberId}) and lower(g.display_name) like '%admins%'`,
    ],
    [`id eq "${groups[1]}"`, `g.id = ${groups[1]}`],
  ];
  assertEquals(USERS.length + GROUPS.length >= 40, true);
  let nonEmpty = 0;
  for (const [filter, predicate] of USERS) {
    const expected = await sqlIds(svc, conn.id, "Users", predicate);
    if (expected.length > 0 && expected.length < ids.length) nonEmpty++;
    assertEquals(await scimIds(idp, "Users", filter), expected, filter);
  }
  for (const [filter, predicate] of GROUPS) {
    const expected = await sqlIds(svc, conn.id, "Groups", predicate);
    assertEquals(await scimIds(idp, "Groups", filter), expected, filter);
  }
  // The table tells rows apart: most filters select some rows and not all.
  assertEquals(nonEmpty > 30, true, `${nonEmpty} selective filters`);
});
