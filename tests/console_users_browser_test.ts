/**
 * The users list and the user page as an admin uses them, in Chromium:
 * each user's state on the list, the total, sorting (the whole list, page
 * after page, by a column header), exports, bulk actions
 * asked first and summed up; a provisioned user's origin and the warning
 * by their role; the provisioning page's base URL; what the user page's
 * forms say. Each change is checked through the API, each page with axe.
 */
import type { Download, Page } from "playwright-core";
import { assert, assertEquals } from "./support/assert.ts";
import { CHROMIUM_TOOL } from "./support/browser.ts";
import {
  accessible,
  clean,
  eventually,
  heading,
  openConsole,
  overflow,
  rows,
  section,
  shot,
  signIn,
  someone,
} from "./support/console.ts";
import { withTool } from "./support/conditions.ts";
import { seedUsers } from "./support/seed.ts";
import { createConnection, GROUP_SCHEMA, scimClient } from "./scim_support.ts";
import { loginCookie, type TestService } from "./support/service.ts";

/** The text of the cell under `column` in the row of `username`. */
const cell = (page: Page, username: string, column: string) =>
  page.locator("table.list tbody tr", {
    has: page.getByRole("link", { name: username, exact: true }),
  }).locator(`td[data-label="${column}"]`).textContent();

/** The usernames of a downloaded export, one line each. */
async function downloaded(download: Download): Promise<string[]> {
  const path = await download.path();
  const text = await Deno.readTextFile(path);
  return text.trim().split("\n").map((l) => JSON.parse(l).username);
}

const detail = async (svc: TestService, id: number) =>
  await svc.admin.get("/api/users/{id}", { params: { path: { id } } });

/** The user's disable as the API has it (null: active). */
async function disabledOf(svc: TestService, id: number) {
  const found = await detail(svc, id);
  assert(found.ok, `GET /api/users/${id}`);
  return found.data.disabled;
}

Deno.test(withTool(
  "the users list shows each user's state, the total, sorts, exports, and disables and deletes the selected users once asked",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const ann = await someone(svc, "ann", "Ann Archer");
    const bob = await someone(svc, "bob", "Bob Baker");
    const cyd = await someone(svc, "cyd", "Cyd Cole");
    const off = await svc.admin.post("/api/users/{id}/disable", {
      params: { path: { id: cyd.id } },
      body: { until: "2099-01-31T12:00:00Z" },
    });
    assert(off.ok);
    await signIn(page, svc.baseUrl);
    await eventually(
      async () => (await rows(page)).join() === "admin,ann,bob,cyd",
      "every user listed",
    );
    await page.getByText("4 users", { exact: true }).waitFor();
    assertEquals(
      await cell(page, "cyd", "Status"),
      `Disabled until ${
        new Date("2099-01-31T12:00:00Z").toLocaleString("en-GB", {
          timeZone: "UTC",
        })
      }`,
    );
    assertEquals(await cell(page, "ann", "Status"), "Active");
    assertEquals(await cell(page, "ann", "Last sign-in"), "never");
    assert(
      (await cell(page, "admin", "Last sign-in")) !== "never",
      "the admin signed in just now",
    );
    assertEquals(await cell(page, "ann", "Second factor"), "None");
    assertEquals(await cell(page, "ann", "Source"), "API");
    await accessible(page, "the users list with state");
    await shot(page, "users-state");

    // Sorted: the list is asked again in that order.
    await page.getByLabel("Sort", { exact: true }).selectOption("-username");
    await eventually(
      async () => (await rows(page)).join() === "cyd,bob,ann,admin",
      "Z to A",
    );
    await page.getByLabel("Sort", { exact: true }).selectOption("createdAt");
    await eventually(
      async () => (await rows(page)).join() === "admin,ann,bob,cyd",
      "oldest first",
    );

    // The export of the current filter.
    await page.getByLabel("Status", { exact: true }).selectOption("active");
    await page.getByText("3 users", { exact: true }).waitFor();
    const [all] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("link", { name: "Export" }).click(),
    ]);
    assertEquals(await downloaded(all), ["admin", "ann", "bob"]);
    await page.getByLabel("Status", { exact: true }).selectOption("");
    await page.getByText("4 users", { exact: true }).waitFor();

    // Bulk disable of two, named in the question.
    await page.getByLabel("Select ann", { exact: true }).check();
    await page.getByLabel("Select bob", { exact: true }).check();
    await page.getByText("2 selected").waitFor();
    await page.getByRole("button", { name: "Disable", exact: true }).click();
    const asked = page.getByRole("dialog", { name: "Disable 2 users?" });
    await asked.waitFor();
    await accessible(page, "the bulk action's question");
    await asked.getByRole("button", { name: "Disable 2 users" }).click();
    await page.getByRole("status").getByText("Disabled 2 users.").waitFor();
    for (const u of [ann, bob]) {
      const now = await detail(svc, u.id);
      assert(now.ok && now.data.disabled !== null, `${u.username} disabled`);
    }
    await eventually(
      async () => (await cell(page, "bob", "Status")) === "Disabled",
      "the list shows it",
    );

    // The selection's export.
    await page.getByLabel("Select cyd", { exact: true }).check();
    const [picked] = await Promise.all([
      page.waitForEvent("download"),
      page.getByRole("button", { name: "Export selection" }).click(),
    ]);
    assertEquals(await downloaded(picked), ["cyd"]);
    await page.getByRole("button", { name: "Clear selection" }).click();

    // Bulk delete: one's own row is left out, and said to be.
    await page.getByLabel("Select every user on this page").check();
    await page.getByText("4 selected").waitFor();
    await page.getByRole("button", { name: "Delete", exact: true }).click();
    const deleting = page.getByRole("dialog", { name: "Delete 3 users?" });
    await deleting.getByText("Your own account is left out.").waitFor();
    await deleting.getByRole("button", { name: "Delete 3 users" }).click();
    await page.getByRole("status").getByText("Deleted 3 users.").waitFor();
    for (const u of [ann, bob, cyd]) {
      assertEquals((await detail(svc, u.id)).status, 404, u.username);
    }
    assert((await detail(svc, svc.adminAccount.id)).ok, "the admin stays");
    await eventually(async () => (await rows(page)).join() === "admin", "gone");
    await page.getByText("1 user", { exact: true }).waitFor();

    // At 390 pixels: no horizontal scrolling.
    await page.setViewportSize({ width: 390, height: 900 });
    assertEquals(await overflow(page), 0, "no horizontal scroll at 390 px");
    clean(c);
  },
));

Deno.test(withTool(
  "a provisioned user's page names its connection, externalId and groups and warns by the role; the provisioning page gives the absolute SCIM URL and each connection's last request",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const conn = await createConnection(svc, "Okta");
    const idp = scimClient(svc, conn.token);
    const made = await idp.post("/Users", {
      userName: "sam@example.com",
      displayName: "Sam Scim",
      externalId: "okta-sam-1",
    });
    assertEquals(made.status, 201);
    const group = await idp.post("/Groups", {
      schemas: [GROUP_SCHEMA],
      displayName: "Engineering",
      members: [{ value: made.body.id }],
    });
    assertEquals(group.status, 201);

    await signIn(page, svc.baseUrl);
    await eventually(
      async () =>
        (await cell(page, "sam@example.com", "Source")) === "SCIM: Okta",
      "the list names the connection",
    );
    await page.getByRole("link", { name: "sam@example.com" }).click();
    await heading(page, "Sam Scim");
    const facts = page.locator("dl.facts");
    await facts.getByText("Provisioned by Okta (SCIM)").waitFor();
    await facts.getByText("okta-sam-1").waitFor();
    await facts.getByText("Engineering").waitFor();
    const warning = page.locator("#role-managed");
    await warning.getByText("Okta sets this role.").waitFor();
    assertEquals(
      await page.getByLabel("New role", { exact: true }).getAttribute(
        "aria-describedby",
      ),
      "role-managed",
      "the warning describes the role control",
    );
    await accessible(page, "a provisioned user's page");
    await shot(page, "user-scim");

    await section(page, "Provisioning");
    const url = page.getByRole("textbox", { name: "SCIM base URL" });
    assertEquals(await url.inputValue(), `${svc.baseUrl}/scim/v2`);
    assert(/^https?:\/\//.test(await url.inputValue()), "absolute");
    await page.getByRole("button", { name: "Copy URL" }).waitFor();
    const item = page.locator("ul.cards li", { hasText: "Okta" });
    await item.getByText("Last request:").locator("time").waitFor();
    await accessible(page, "the provisioning page with its URL");
    clean(c);
  },
));

Deno.test(withTool(
  "the user page: tabs by keyboard, an empty password said to be empty, messages that clear, a disable confirmed first, a deletion said on the list",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const dana = await someone(svc, "dana", "Dana Doe");
    await signIn(page, svc.baseUrl);
    await page.goto(`${svc.baseUrl}/admin#/users/${dana.id}`);
    await heading(page, "Dana Doe");

    // Tabs: the arrow keys move between them.
    await page.getByRole("tab", { name: "Profile" }).focus();
    await page.keyboard.press("ArrowRight");
    const security = page.getByRole("tab", { name: "Security" });
    assertEquals(await security.getAttribute("aria-selected"), "true");
    assert(
      await security.evaluate((el) =>
        el === (el.ownerDocument as { activeElement: unknown }).activeElement
      ),
      "the selected tab has the focus",
    );
    await page.getByRole("tabpanel", { name: "Security" })
      .getByRole("heading", { name: "Password" }).waitFor();
    await accessible(page, "the user page's Security tab");

    // An empty password: said, and nothing sent.
    const tagOf = async () =>
      (await svc.admin.GET("/api/users/{id}", {
        params: { path: { id: dana.id } },
      })).response.headers.get("etag");
    const before = await tagOf();
    await page.getByRole("button", { name: "Reset password" }).click();
    await page.getByRole("alert").getByText(
      "Enter a new password: at least 8 characters.",
    ).waitFor();
    assertEquals(await page.getByText("Password reset.").count(), 0);
    assertEquals(await tagOf(), before, "nothing changed");

    // A message clears on the next action.
    await page.getByLabel("New password", { exact: true }).fill(
      "dana-new-pass",
    );
    await page.getByRole("button", { name: "Reset password" }).click();
    const reset = page.getByRole("status").getByText("Password reset.");
    await reset.waitFor();
    await page.getByRole("tab", { name: "Profile" }).click();
    await page.getByLabel("Department", { exact: true }).fill("Ops");
    assertEquals(await reset.count(), 0, "gone once something else is done");

    // Disable asks first; Cancel leaves the user as they were.
    await page.getByRole("button", { name: "Disable user" }).click();
    await page.getByRole("group", { name: "Disable dana?" }).waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();
    assertEquals(await disabledOf(svc, dana.id), null);
    await page.getByRole("button", { name: "Disable user" }).click();
    await page.getByRole("button", { name: "Yes, disable user" }).click();
    await page.getByRole("status").getByText("User disabled.").waitFor();
    assert(await disabledOf(svc, dana.id), "disabled");

    // Deleted: back on the list, which says so.
    await page.getByRole("button", { name: "Delete user" }).click();
    await page.getByRole("button", { name: "Yes, delete user" }).click();
    await heading(page, "Users");
    await page.getByRole("status").getByText("User dana deleted.").waitFor();
    assertEquals((await detail(svc, dana.id)).status, 404);
    await accessible(page, "the list after a deletion");
    clean(c);
  },
));

/** Code point order, as the API compares canonical usernames (these are ASCII, lower case). */
const byCodePoint = (a: string, b: string) => a < b ? -1 : a > b ? 1 : 0;

Deno.test(withTool(
  "a column header orders the whole users list through the API, across its pages, and says so in aria-sort",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    // 63 users: the admin, then user2..user61 and two who sign in, oldest
    // first: two pages of 50.
    await seedUsers(svc.sql, 61);
    const signers = [
      await someone(svc, "signs-in-first", "First"),
      await someone(svc, "signs-in-second", "Second"),
    ];
    for (const u of signers) {
      await loginCookie(svc, {
        username: u.username,
        password: `${u.username}-password`,
      });
    }
    const listed = await svc.admin.get("/api/users");
    assert(listed.ok);
    const all = listed.data.map((u) => u.username);
    assertEquals(all.length, 63);
    // The admin signs in last, in the browser.
    await signIn(page, svc.baseUrl);
    await page.getByText("63 users", { exact: true }).waitFor();
    const header = (name: string) =>
      page.locator("table.list thead th", {
        has: page.getByRole("button", { name, exact: true }),
      });
    const shows = async (want: string[], what: string) =>
      await eventually(
        async () => (await rows(page)).join() === want.join(),
        what,
      );
    /** Both pages, by the pager's Next: the order the whole list is in. */
    const bothPages = async (want: string[], what: string) => {
      await shows(want.slice(0, 50), `${what}, first page`);
      await page.getByRole("button", { name: "Next", exact: true }).click();
      await shows(want.slice(50), `${what}, second page`);
    };
    assertEquals(
      await header("Created").getAttribute("aria-sort"),
      "ascending",
    );
    assertEquals(await header("Username").getAttribute("aria-sort"), null);
    await bothPages(all, "oldest first");

    // Created again: newest first, from the newest of all (not of a page).
    await page.getByRole("button", { name: "Created", exact: true }).click();
    await eventually(
      async () =>
        (await header("Created").getAttribute("aria-sort")) === "descending",
      "aria-sort descending",
    );
    await bothPages(all.toReversed(), "newest first");

    // Username: A to Z over the whole list, then Z to A.
    const byName = all.toSorted(byCodePoint);
    await page.getByRole("button", { name: "Username", exact: true }).click();
    await eventually(
      async () =>
        (await header("Username").getAttribute("aria-sort")) === "ascending",
      "aria-sort ascending",
    );
    assertEquals(await header("Created").getAttribute("aria-sort"), null);
    await bothPages(byName, "A to Z");
    assert(page.url().includes("sort=username"), page.url());
    await page.getByRole("button", { name: "Username", exact: true }).click();
    await eventually(
      async () =>
        (await header("Username").getAttribute("aria-sort")) === "descending",
      "aria-sort descending",
    );
    await bothPages(byName.toReversed(), "Z to A");
    assertEquals(
      await page.getByLabel("Sort", { exact: true }).inputValue(),
      "-username",
    );

    // Last sign-in: the latest first, then the other way; who never signed
    // in comes after the rest either way, by id in the sort's direction.
    const [first, second] = signers.map((u) => u.username);
    const never = all.filter((u) => ![all[0], first, second].includes(u));
    await page.getByRole("button", { name: "Last sign-in", exact: true })
      .click();
    await eventually(
      async () =>
        (await header("Last sign-in").getAttribute("aria-sort")) ===
          "descending",
      "aria-sort descending",
    );
    await bothPages(
      [all[0], second, first, ...never.toReversed()],
      "latest sign-in first",
    );
    assert(page.url().includes("sort=-lastLoginAt"), page.url());
    await page.getByRole("button", { name: "Last sign-in", exact: true })
      .click();
    await eventually(
      async () =>
        (await header("Last sign-in").getAttribute("aria-sort")) ===
          "ascending",
      "aria-sort ascending",
    );
    await bothPages([first, second, all[0], ...never], "longest ago first");
    await accessible(page, "the users list sorted by a column");
  },
));
