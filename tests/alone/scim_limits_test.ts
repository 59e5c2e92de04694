/**
 * The limits that keep one SCIM request from holding the service: filters
 * of bounded length, comparisons, nesting and dates; PATCH of bounded
 * operations; multi-valued attributes and externalId of bounded size; list
 * caches of bounded bytes. Each answers a SCIM 400 at once, with `/health`
 * answering within 250 ms beside it, and nothing of the request written.
 */
import { assert, assertEquals } from "../support/assert.ts";
import { healthBeside } from "../support/health.ts";
import { collectGarbage, sharedService } from "../support/service.ts";
import {
  assertScimError,
  patchOp,
  type ScimAnswer,
  scimState as state,
  withFrank,
} from "../scim_support.ts";

const service = sharedService({}, { bcryptCost: 4, inProcess: false });

const setUp = async () => withFrank(await service());

/** The answer's scimType and detail, for a list of them at once. */
const said = (a: ScimAnswer) => {
  assertScimError(a, a.status, a.body?.scimType);
  return [a.status, a.body.scimType, a.body.detail];
};

const search = (filter: string) => ({
  schemas: ["urn:ietf:params:scim:api:messages:2.0:SearchRequest"],
  filter,
});

Deno.test("a filter with a string left open over many newlines answers 400 invalidFilter at once, /health answering beside it", async () => {
  const { svc, idp } = await setUp();
  const filter = 'userName eq "' + "\n".repeat(26);
  const answer = await healthBeside(
    svc.baseUrl,
    "open string",
    () => idp.get(`/Users?filter=${encodeURIComponent(filter)}`),
  );
  assertEquals(said(answer), [400, "invalidFilter", "Invalid filter"]);
});

Deno.test("filters past the limits answer 400 invalidFilter Filter too complex: 4,096 characters, 100 comparisons, 20 levels of nesting; control characters Invalid filter", async () => {
  const { svc, idp } = await setUp();
  const comparisons = (n: number, join: string) =>
    Array.from({ length: n }, (_, i) => `userName eq "u${i}"`).join(join);
  const cases: [string, string][] = [
    ['userName eq "' + "x".repeat(4096) + '"', "Filter too complex"],
    [
      "not (".repeat(3000) + 'userName eq "x"' + ")".repeat(3000),
      "Filter too complex",
    ],
    [comparisons(10_000, " or "), "Filter too complex"],
    [comparisons(101, " or "), "Filter too complex"],
    [comparisons(101, " and "), "Filter too complex"],
    ["(".repeat(21) + 'userName eq "x"' + ")".repeat(21), "Filter too complex"],
    [
      "not (".repeat(21) + 'userName eq "x"' + ")".repeat(21),
      "Filter too complex",
    ],
    ['userName eq "a\tb"', "Invalid filter"],
    ['userName eq "a"\r\nor userName eq "b"', "Invalid filter"],
  ];
  for (const [filter, detail] of cases) {
    const what = filter.slice(0, 30);
    const answer = await healthBeside(
      svc.baseUrl,
      what,
      () => idp.post("/Users/.search", search(filter)),
    );
    assertEquals(said(answer), [400, "invalidFilter", detail], what);
  }
  // Within them, as many as they allow.
  for (
    const filter of [
      comparisons(100, " or "),
      "(".repeat(20) + 'userName eq "x"' + ")".repeat(20),
      'userName eq "' + "x".repeat(4000) + '"',
    ]
  ) {
    const answer = await idp.post("/Users/.search", search(filter));
    assertEquals(answer.status, 200, filter.slice(0, 30));
  }
  const nul = await idp.get(
    `/Users?filter=${encodeURIComponent('userName eq "a\u0000b"')}`,
  );
  assertEquals(said(nul), [400, "invalidFilter", "Invalid filter"]);
  const groups = await idp.get(
    `/Groups?filter=${encodeURIComponent(comparisons(101, " or "))}`,
  );
  assertEquals(said(groups), [400, "invalidFilter", "Filter too complex"]);
});

Deno.test("dates in filters outside years 1 to 9999 answer 400 invalidFilter", async () => {
  const { idp } = await setUp();
  for (
    const date of [
      "+010000-01-01T00:00:00Z",
      "+275760-09-13T00:00:00Z",
      "0000-06-01T00:00:00Z",
      "-000001-01-01T00:00:00Z",
    ]
  ) {
    for (const kind of ["Users", "Groups"]) {
      const filter = `meta.lastModified gt "${date}"`;
      assertScimError(
        await idp.get(`/${kind}?filter=${encodeURIComponent(filter)}`),
        400,
        "invalidFilter",
      );
    }
  }
  const edge = await idp.get(
    `/Users?filter=${
      encodeURIComponent('meta.created gt "0001-01-01T00:00:00Z"')
    }`,
  );
  assertEquals(edge.body.totalResults, 2);
});

Deno.test("a PATCH path's filter meets the same limits: 400 invalidFilter, nothing applied", async () => {
  const { svc, idp, userId } = await setUp();
  const before = await state(svc);
  const many = Array.from({ length: 101 }, (_, i) => `type eq "t${i}"`)
    .join(" or ");
  for (
    const [path, detail] of [
      [`emails[${many}].value`, "Filter too complex"],
      ['emails[type eq "a\u0001"].value', "Invalid filter"],
      [
        `emails[${"(".repeat(21)}type eq "w"${")".repeat(21)}].value`,
        "Filter too complex",
      ],
    ]
  ) {
    const answer = await healthBeside(
      svc.baseUrl,
      path.slice(0, 30),
      () =>
        idp.patch(
          `/Users/${userId}`,
          patchOp({ op: "replace", path, value: "x@example.com" }),
        ),
    );
    assertEquals(said(answer), [400, "invalidFilter", detail]);
  }
  assertEquals(await state(svc), before);
});

Deno.test("a PATCH of more than 1,000 operations answers 400 invalidSyntax, nothing applied", async () => {
  const { svc, idp, userId } = await setUp();
  const before = await state(svc);
  const op = { op: "replace", path: "displayName", value: "Frank" };
  const answer = await healthBeside(
    svc.baseUrl,
    "1,001 operations",
    () =>
      idp.patch(
        `/Users/${userId}`,
        patchOp(...Array.from({ length: 1001 }, () => op)),
      ),
  );
  assertEquals(said(answer), [
    400,
    "invalidSyntax",
    "Operations holds at most 1000 operations",
  ]);
  assertEquals(await state(svc), before);
  const thousand = await idp.patch(
    `/Users/${userId}`,
    patchOp(...Array.from({ length: 1000 }, () => op)),
  );
  assertEquals(thousand.status, 200);
});

Deno.test("4,000 e-mails then 800 filtered replaces answer 400 invalidValue at once, /health answering beside it, nothing applied", async () => {
  const { svc, idp, userId } = await setUp();
  const before = await state(svc);
  const emails = Array.from({ length: 4000 }, (_, i) => ({
    value: `f${i}@example.com`,
    type: `t${i}`,
  }));
  const replaces = Array.from({ length: 800 }, (_, i) => ({
    op: "replace",
    path: `emails[type eq "t${i}"].display`,
    value: "x",
  }));
  const answer = await healthBeside(
    svc.baseUrl,
    "4,000 e-mails",
    () =>
      idp.patch(
        `/Users/${userId}`,
        patchOp({ op: "add", path: "emails", value: emails }, ...replaces),
      ),
  );
  assertEquals(said(answer), [
    400,
    "invalidValue",
    "emails holds at most 100 values",
  ]);
  assertEquals(await state(svc), before);
  // 100 of them, each replaced through its filter, are taken.
  const hundred = await idp.patch(
    `/Users/${userId}`,
    patchOp(
      { op: "add", path: "emails", value: emails.slice(0, 99) },
      ...replaces.slice(0, 99),
    ),
  );
  assertEquals(hundred.status, 200, JSON.stringify(hundred.body));
  assertEquals(hundred.body.emails.length, 100);
});

Deno.test("a multi-valued attribute of more than 100 values answers 400 invalidValue in POST and PUT; a group's members are not bounded so", async () => {
  const { svc, idp, userId } = await setUp();
  const before = await state(svc);
  const phoneNumbers = Array.from({ length: 101 }, (_, i) => ({
    value: `+1555000${i}`,
  }));
  const created = await idp.post("/Users", {
    userName: "grace@example.com",
    phoneNumbers,
  });
  assertEquals(said(created), [
    400,
    "invalidValue",
    "phoneNumbers holds at most 100 values",
  ]);
  const replaced = await idp.put(`/Users/${userId}`, {
    userName: "frank@example.com",
    phoneNumbers,
  });
  assertEquals(said(replaced), [
    400,
    "invalidValue",
    "phoneNumbers holds at most 100 values",
  ]);
  assertEquals(await state(svc), before);
  const members = [];
  for (let i = 0; i < 110; i++) {
    const u = await idp.post("/Users", { userName: `m${i}@example.com` });
    members.push({ value: u.body.id });
  }
  const group = await idp.post("/Groups", { displayName: "Many", members });
  assertEquals(group.status, 201);
  assertEquals(group.body.members.length, 110);
});

Deno.test("an externalId of more than 255 characters answers 400 invalidValue in POST, PUT and PATCH, of users and groups, nothing written", async () => {
  const { svc, idp, userId } = await setUp();
  const before = await state(svc);
  const long = "e".repeat(8000);
  const detail = "externalId must be at most 255 characters";
  const answers = [
    await idp.post("/Users", {
      userName: "grace@example.com",
      externalId: long,
    }),
    await idp.put(`/Users/${userId}`, {
      userName: "frank@example.com",
      externalId: long,
    }),
    await idp.patch(
      `/Users/${userId}`,
      patchOp({ op: "replace", path: "externalId", value: long }),
    ),
    await idp.patch(
      `/Users/${userId}`,
      patchOp({ op: "replace", value: { externalId: "😀".repeat(256) } }),
    ),
    await idp.post("/Groups", { displayName: "G", externalId: long }),
  ];
  for (const a of answers) assertEquals(said(a), [400, "invalidValue", detail]);
  assertEquals(await state(svc), before);
  const edge = await idp.patch(
    `/Users/${userId}`,
    patchOp({ op: "replace", path: "externalId", value: "😀".repeat(255) }),
  );
  assertEquals(edge.status, 200);
});

Deno.test("the lists' caches keep no filter's text: 25 distinct filters of 4 MiB leave the heap near where it was", async () => {
  const { idp } = await setUp();
  const heap = () => {
    collectGarbage();
    return Deno.memoryUsage().heapUsed;
  };
  await idp.post("/Users/.search", search('userName eq "warm-up"'));
  const before = heap();
  for (let i = 0; i < 25; i++) {
    const filter = `userName eq "${i}${"x".repeat(4 * 1024 * 1024 - 200)}"`;
    const answer = await idp.post("/Users/.search", search(filter));
    assert(answer.status < 500, `${answer.status}`);
  }
  const grown = heap() - before;
  assert(grown < 32 * 1024 * 1024, `the heap grew ${grown} bytes`);
});
