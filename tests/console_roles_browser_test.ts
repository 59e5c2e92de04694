/**
 * Delegated administration in the console, in a real Chromium: an admin
 * makes a role and a group, fills the group and gives it the role; its
 * member then sees only the navigation and actions the role allows, a
 * viewer none; the new pages pass axe-core and read at 390 pixels.
 */
import type { Page } from "playwright-core";
import { assert, assertEquals } from "./support/assert.ts";
import { CHROMIUM_TOOL } from "./support/browser.ts";
import {
  accessible,
  clean,
  enterPassword,
  eventually,
  heading,
  openConsole,
  overflow,
  section,
  shot,
  signIn,
  someone,
} from "./support/console.ts";
import { withTool } from "./support/conditions.ts";
import type { TestService } from "./support/service.ts";
import { createConnection, scimClient } from "./scim_support.ts";

/** The labels of the top navigation, in order. */
const navigation = (page: Page) =>
  page.getByRole("navigation", { name: "Sections" }).getByRole("link")
    .allTextContents();

/** The section of the page under the heading `name`. */
const part = (page: Page, name: string) =>
  page.locator("section", {
    has: page.getByRole("heading", { name, exact: true }),
  });

async function dataOf<T>(
  answer: Promise<{ ok: true; data: T } | { ok: false; status: number }>,
): Promise<T> {
  const a = await answer;
  assert(a.ok, `answered ${"status" in a ? a.status : ""}`);
  return a.data;
}

Deno.test(withTool(
  "an admin makes a role and a group in the console and gives the role to the group; its member sees only the pages and actions the role allows",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const hana = await someone(svc, "hana", "Hana Kobayashi");
    const tariq = await someone(svc, "tariq", "Tariq Aziz");

    await signIn(page, svc.baseUrl);
    assertEquals(await navigation(page), [
      "Overview",
      "Users",
      "Audit trail",
      "Webhooks",
      "Provisioning",
      "Sign-in providers",
      "Imports",
      "Roles",
      "Groups",
    ]);

    // A role: its permissions picked by their names in words.
    await section(page, "Roles");
    await page.getByText("No roles yet.").waitFor();
    const create = part(page, "New role");
    await create.getByLabel("Role name", { exact: true }).fill("Help desk");
    await create.getByLabel("Description", { exact: true }).fill(
      "Resets passwords",
    );
    for (
      const label of ["See users", "Reset passwords", "See and end sessions"]
    ) {
      await create.getByRole("checkbox", { name: label }).check();
    }
    await accessible(page, "the roles page, a role being made");
    await create.getByRole("button", { name: "Create role" }).click();
    await page.getByRole("status").getByText("Role Help desk created.")
      .waitFor();
    const [role] = await dataOf(svc.admin.get("/api/roles"));
    assertEquals(
      [role.name, role.description, role.permissions],
      ["Help desk", "Resets passwords", [
        "users:read",
        "users:password",
        "users:sessions",
      ]],
    );
    // The API's refusal, as it is.
    await create.getByLabel("Role name", { exact: true }).fill("HELP DESK");
    await create.getByRole("button", { name: "Create role" }).click();
    await create.getByRole("alert").getByText("Role name already exists")
      .waitFor();

    // A group, its member found by searching, the role given to it.
    await section(page, "Groups");
    await page.getByText("No groups yet.").waitFor();
    await page.getByLabel("Group name", { exact: true }).fill("Support");
    await page.getByRole("button", { name: "Create group" }).click();
    await heading(page, "Support");
    await page.getByLabel("Find a user to add", { exact: true }).fill("hana");
    await page.getByRole("button", { name: "Find", exact: true }).click();
    await page.getByRole("button", { name: "Add hana" }).click();
    await page.getByRole("status").getByText("hana added.").waitFor();
    await part(page, "Members").getByRole("link", { name: "hana" }).waitFor();
    await page.getByLabel("Role to give", { exact: true }).selectOption(
      "Help desk",
    );
    await page.getByRole("button", { name: "Give role" }).click();
    await page.getByRole("status").getByText("Help desk given.").waitFor();
    await page.getByRole("button", { name: "End Help desk" }).waitFor();
    const [group] = await dataOf(svc.admin.get("/api/groups"));
    assertEquals(
      [group.displayName, group.members.map((m) => m.id)],
      ["Support", [hana.id]],
    );
    const given = await dataOf(svc.admin.get("/api/assignments", {
      params: { query: { groupId: group.id } },
    }));
    assertEquals(given.map((a) => a.roleId), [role.id]);
    await accessible(page, "a group's page");
    // Deleting asks once more, saying what ends with it.
    await page.getByRole("button", { name: "Delete group" }).click();
    await page.getByText(
      "Delete Support? Its 1 member leaves it and its 1 role assignment ends.",
    ).waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();

    // The list: name, members, who manages it.
    await section(page, "Groups");
    const row = page.locator("table.list tbody tr");
    await row.first().waitFor();
    assertEquals(
      await row.first().locator("td").allTextContents(),
      ["Support", "1", "This console"],
    );

    // A role changed by someone else meanwhile: 412, reload, then saved.
    await section(page, "Roles");
    await page.getByRole("button", { name: "Edit Help desk" }).click();
    const item = page.locator("ul.cards > li").first();
    const editing = item.getByLabel("Description", { exact: true });
    await editing.waitFor();
    assertEquals(await editing.inputValue(), "Resets passwords");
    const read = await svc.admin.GET("/api/roles/{id}", {
      params: { path: { id: role.id } },
    });
    assert(
      (await svc.admin.patch("/api/roles/{id}", {
        params: {
          path: { id: role.id },
          header: { "if-match": read.response.headers.get("etag")! },
        },
        body: { description: "Resets passwords, ends sessions" },
      })).ok,
    );
    await editing.fill("Mine");
    await page.getByRole("button", { name: "Save role" }).click();
    const stale = page.getByRole("alert");
    await stale.getByText("Precondition failed").waitFor();
    await stale.getByText(
      "Someone changed this role meanwhile: reload to see it.",
    )
      .waitFor();
    await stale.getByRole("button", { name: "Reload" }).click();
    await eventually(
      async () =>
        await editing.inputValue() === "Resets passwords, ends sessions",
      "the form shows the role as it is now",
    );
    await page.getByRole("button", { name: "Save role" }).click();
    await page.getByRole("status").getByText("Role Help desk saved.")
      .waitFor();
    // Deleting names the role and the assignments that end.
    await page.getByRole("button", { name: "Delete Help desk" }).click();
    await page.getByText("Delete Help desk? Its 1 assignment ends.").waitFor();
    await page.getByRole("button", { name: "Cancel" }).click();

    // A user's page: their own roles and their groups.
    await page.goto(`${svc.baseUrl}/admin#/users/${hana.id}`);
    await heading(page, "Hana Kobayashi");
    await page.getByRole("tab", { name: "Roles" }).click();
    const theirs = part(page, "Roles");
    await theirs.getByText("No roles given.").waitFor();
    await theirs.getByRole("link", { name: "Support" }).waitFor();

    // The member: the navigation and actions of the role, nothing more.
    await page.getByRole("button", { name: "Sign out" }).click();
    await signIn(page, svc.baseUrl, {
      username: "hana",
      password: "hana-password",
    });
    assertEquals(await navigation(page), ["Overview", "Users"]);
    assertEquals(await page.getByRole("link", { name: "New user" }).count(), 0);
    await page.goto(`${svc.baseUrl}/admin#/users/${tariq.id}`);
    await heading(page, "Tariq Aziz");
    // The tabs of what the role allows: no Roles, no Activity.
    assertEquals(
      await page.getByRole("tab").allTextContents(),
      ["Profile", "Security"],
    );
    for (
      const absent of [
        "Change profile",
        "Role",
        "Access",
        "API keys",
        "Roles",
        "Audit records",
        "Delete",
      ]
    ) {
      assertEquals(
        await page.getByRole("heading", { name: absent, exact: true }).count(),
        0,
        `no ${absent} section`,
      );
    }
    for (
      const absent of [
        "Disable user",
        "Delete user",
        "Save profile",
        "Change role",
      ]
    ) {
      assertEquals(
        await page.getByRole("button", { name: absent }).count(),
        0,
        `no ${absent} button`,
      );
    }
    await page.getByRole("tab", { name: "Security" }).click();
    await part(page, "Sessions").getByText("No live sessions.").waitFor();
    assertEquals(
      await page.getByRole("heading", { name: "API keys", exact: true })
        .count(),
      0,
      "no API keys section",
    );
    await accessible(page, "a user's page for a help desk");
    await page.getByLabel("New password", { exact: true }).fill(
      "tariq-new-password",
    );
    await page.getByRole("button", { name: "Reset password" }).click();
    await page.getByRole("status").getByText("Password reset.").waitFor();
    assert((await svc.client().login("tariq", "tariq-new-password")).ok);

    // Pages beyond the role: said plainly, not the API's Forbidden.
    for (
      const [hash, title] of [
        ["#/roles", "Roles"],
        ["#/audit", "Audit trail"],
        [`#/groups/${group.id}`, "Group"],
      ]
    ) {
      await page.goto(`${svc.baseUrl}/admin${hash}`);
      await heading(page, title);
      await page.getByText("You do not have access to this page").waitFor();
      assertEquals(await page.getByText("Forbidden").count(), 0);
    }
    await accessible(page, "a page without access");
    clean(c);
  },
));

Deno.test(withTool(
  "a viewer lands on their own account and sees no admin navigation; admin pages say they have no access",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    await someone(svc, "vera", "Vera Nowak");
    await enterPassword(page, svc.baseUrl, {
      username: "vera",
      password: "vera-password",
    });
    await heading(page, "My account");
    assertEquals(
      await page.getByRole("navigation", { name: "Sections" }).count(),
      0,
    );
    await accessible(page, "a viewer's landing page");
    for (
      const [hash, title] of [["#/users", "Users"], ["#/groups", "Groups"], [
        "#/users/new",
        "New user",
      ]]
    ) {
      await page.goto(`${svc.baseUrl}/admin${hash}`);
      await heading(page, title);
      await page.getByText("You do not have access to this page").waitFor();
    }
    clean(c);
  },
));

/** A role, a group with a member and the role, and a group an identity provider pushed. */
async function delegation(svc: TestService) {
  const long = await someone(
    svc,
    "ليلى_عبدالرحمن_الطويلة_🌸🌸",
    "ليلى عبد الرحمن الطويلة جدا جدا 👩‍👩‍👧‍👦🌍✨",
  );
  const role = await dataOf(svc.admin.post("/api/roles", {
    body: {
      name: "مكتب المساعدة والدعم الفني للمستخدمين 🛟🛟🛟",
      description: "يعيد تعيين كلمات المرور وينهي الجلسات لجميع المستخدمين",
      permissions: ["users:read", "users:password", "users:sessions"],
    },
  }));
  const group = await dataOf(svc.admin.post("/api/groups", {
    body: { displayName: "فريق الدعم الفني في المكتب الرئيسي للشركة 🧑‍💻🧑‍💻" },
  }));
  assert(
    (await svc.admin.post("/api/groups/{id}/members", {
      params: { path: { id: group.id } },
      body: { userIds: [long.id] },
    })).ok,
  );
  for (const holder of [{ groupId: group.id }, { userId: long.id }]) {
    assert(
      (await svc.admin.post("/api/assignments", {
        body: { roleId: role.id, ...holder },
      })).ok,
    );
  }
  const conn = await createConnection(svc, "Okta");
  const pushed = await scimClient(svc, conn.token).post("/Groups", {
    schemas: ["urn:ietf:params:scim:schemas:core:2.0:Group"],
    displayName: "Engineering",
    members: [],
  });
  assertEquals(pushed.status, 201);
  return { long, group, managed: Number(pushed.body.id), connection: conn.id };
}

Deno.test(withTool(
  "the roles and groups pages and a user's roles pass axe-core and read at 390 pixels; a group an identity provider manages is read-only",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole({ width: 390 });
    const { svc, page } = c;
    const { long, group, managed, connection } = await delegation(svc);
    await signIn(page, svc.baseUrl);
    const pages: [string, string | RegExp, string][] = [
      ["#/roles", "Roles", "roles"],
      ["#/groups", "Groups", "groups"],
      [`#/groups/${group.id}`, /فريق الدعم/, "group"],
      [`#/groups/${managed}`, "Engineering", "group-managed"],
      [`#/users/${long.id}`, long.name, "user-roles"],
    ];
    for (const [hash, title, name] of pages) {
      await page.goto(`${svc.baseUrl}/admin${hash}`);
      await heading(page, title);
      await page.waitForLoadState("networkidle").catch(() => {});
      assertEquals(await overflow(page), 0, `no horizontal scroll on ${hash}`);
      await accessible(page, `${hash} at 390 px`);
      await shot(page, `${name}-390`);
    }

    // The managed group: a note, its members shown, nothing of them changed
    // here; roles are still given.
    await page.goto(`${svc.baseUrl}/admin#/groups/${managed}`);
    await heading(page, "Engineering");
    await page.getByText(
      `Its identity provider manages this group (provisioning connection ${connection}): change its name and members there.`,
    ).waitFor();
    await page.getByRole("button", { name: "Give role" }).waitFor();
    for (const absent of ["Rename", "Find", "Delete group"]) {
      assertEquals(
        await page.getByRole("button", { name: absent, exact: true }).count(),
        0,
        `no ${absent} on a managed group`,
      );
    }
    clean(c);
  },
));

Deno.test(withTool(
  "the console shows a grant beyond the giver's permissions refused with the API's message",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    // A manager of roles who reads users and nothing more.
    const manager = await someone(svc, "mina", "Mina Park");
    const rolesOnly = await dataOf(svc.admin.post("/api/roles", {
      body: { name: "Delegates", permissions: ["users:read", "roles:manage"] },
    }));
    assert(
      (await svc.admin.post("/api/assignments", {
        body: { roleId: rolesOnly.id, userId: manager.id },
      })).ok,
    );
    await signIn(page, svc.baseUrl, {
      username: "mina",
      password: "mina-password",
    });
    assertEquals(await navigation(page), [
      "Overview",
      "Users",
      "Roles",
      "Groups",
    ]);
    await section(page, "Roles");
    const create = part(page, "New role");
    await create.getByLabel("Role name", { exact: true }).fill("Auditors");
    await create.getByRole("checkbox", { name: "Read the audit trail" })
      .check();
    await create.getByRole("button", { name: "Create role" }).click();
    await create.getByRole("alert").getByText("Cannot grant more than you hold")
      .waitFor();
    assertEquals((await dataOf(svc.admin.get("/api/roles"))).length, 1);
    clean(c);
  },
));
