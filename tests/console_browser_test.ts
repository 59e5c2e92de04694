/**
 * The admin console as a person uses it: a real Chromium opens /admin on a
 * running service, signs in, and uses every page and action; each change
 * is checked through the API afterwards, each page against axe-core's
 * WCAG 2 A/AA rules (no serious or critical finding), and nothing the page
 * does may leave the service's origin, break its CSP or throw.
 */
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
import { ADMIN } from "./support/service.ts";

Deno.test(withTool(
  "the console at /admin signs in with the API's messages, lists, finds, creates and changes users, and every change is the API's",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;

    const served = await page.goto(`${svc.baseUrl}/admin`);
    assertEquals(served?.status(), 200);
    const csp = served?.headers()["content-security-policy"] ?? "";
    assert(csp.includes("script-src 'self'"), csp);
    assert(!csp.includes("unsafe-inline"), csp);
    await heading(page, "Sign in");
    await accessible(page, "the sign-in page");
    await shot(page, "signin");

    // A wrong password: the API's message, as it is.
    await page.getByLabel("Username", { exact: true }).fill(ADMIN.username);
    await page.getByLabel("Password", { exact: true }).fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("Invalid username or password")
      .waitFor();
    await page.getByLabel("Password", { exact: true }).fill(ADMIN.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    // Signing in opens the overview.
    await heading(page, "Overview");
    await section(page, "Users");
    await page.getByRole("link", { name: ADMIN.username }).first().waitFor();
    await accessible(page, "the users page");

    // Create a user whose name reads right to left, with an emoji.
    await page.getByRole("link", { name: "New user" }).click();
    await heading(page, "New user");
    await accessible(page, "the new user page");
    await page.getByLabel("Username", { exact: true }).fill("maryam");
    await page.getByLabel("Name", { exact: true }).fill("مريم الحسن 🌸");
    await page.getByLabel("E-mail", { exact: true }).fill("maryam@example.com");
    await page.getByLabel("Password", { exact: true }).fill("short");
    await page.getByRole("button", { name: "Create user" }).click();
    await page.getByRole("alert").getByText(
      "Password must be at least 8 characters",
    ).waitFor();
    await page.getByLabel("Password", { exact: true }).fill("maryam-password");
    await page.getByRole("button", { name: "Create user" }).click();
    await heading(page, "مريم الحسن 🌸");
    const found = await svc.admin.findByUsername("maryam");
    assert(found.ok && found.data, "created through the API");
    const maryam = found.data;
    assertEquals(maryam.name, "مريم الحسن 🌸");
    assertEquals(maryam.role, "viewer");
    await accessible(page, "a user's page");
    await shot(page, "user");

    // Role: viewer to admin.
    await page.getByLabel("New role", { exact: true }).selectOption("admin");
    await page.getByRole("button", { name: "Change role" }).click();
    await page.getByRole("status").getByText("Role changed to admin.")
      .waitFor();
    const promoted = await svc.admin.get("/api/users/{id}", {
      params: { path: { id: maryam.id } },
    });
    assert(promoted.ok);
    assertEquals(promoted.data.role, "admin");

    // Profile: a department set, then the e-mail corrected, through the API's PATCH.
    // Each change reloads the user, which redraws the forms with its values:
    // fill them once the page shows the change.
    await page.getByRole("definition").filter({ hasText: /^admin$/ }).waitFor();
    await page.getByLabel("Department", { exact: true }).fill("Finance");
    await page.getByRole("button", { name: "Save profile" }).click();
    await page.getByRole("status").getByText("Profile saved.").waitFor();
    await page.getByRole("definition").filter({ hasText: /^Finance$/ })
      .waitFor();
    await page.getByLabel("E-mail", { exact: true }).fill(
      "maryam.alhasan@example.com",
    );
    await page.getByRole("button", { name: "Save profile" }).click();
    await page.getByRole("status").getByText("Profile saved.").waitFor();
    const profiled = await svc.admin.get("/api/users/{id}", {
      params: { path: { id: maryam.id } },
    });
    assert(profiled.ok);
    assertEquals(
      [profiled.data.department, profiled.data.email],
      ["Finance", "maryam.alhasan@example.com"],
    );

    // Password reset: the new one signs in through the API.
    await page.getByRole("tab", { name: "Security" }).click();
    await page.getByLabel("New password", { exact: true }).fill(
      "maryam-new-password",
    );
    await page.getByRole("button", { name: "Reset password" }).click();
    await page.getByRole("status").getByText("Password reset.").waitFor();
    const other = svc.client();
    assert((await other.login("maryam", "maryam-new-password")).ok);

    // A group a key may be limited to (the key form reads the groups).
    const team = await svc.admin.post("/api/groups", {
      body: { displayName: "Billing team" },
    });
    assert(team.ok);

    // Sessions: the one just opened is listed and ended from the page.
    await page.reload();
    await heading(page, "مريم الحسن 🌸");
    await page.getByRole("tab", { name: "Security" }).click();
    const sessions = page.locator("section", {
      has: page.getByRole("heading", { name: "Sessions" }),
    });
    await sessions.getByRole("button", { name: "End session" }).click();
    await sessions.getByRole("button", { name: "Yes, end session" }).click();
    await sessions.getByText("No live sessions.").waitFor();
    assertEquals((await other.me()).status, 401, "the session ended");

    // Keys: created (shown once), usable, revoked.
    const keys = page.locator("section", {
      has: page.getByRole("heading", { name: "API keys" }),
    });
    await keys.getByLabel("Key name", { exact: true }).fill("billing 🧾");
    await keys.getByRole("button", { name: "Create key" }).click();
    const secret = keys.getByRole("textbox", { name: "Key billing 🧾" });
    const key = await secret.inputValue();
    assert(/^uak_[A-Za-z0-9_-]{43}$/.test(key), key);
    const withKey = await fetch(`${svc.baseUrl}/api/auth/me`, {
      headers: { authorization: `Bearer ${key}` },
    });
    assertEquals((await withKey.json()).username, "maryam");
    await keys.getByRole("button", { name: "Done" }).click();
    assertEquals(await secret.count(), 0, "the key is shown once");
    await keys.getByRole("button", { name: "Revoke" }).click();
    await keys.getByRole("button", { name: "Yes, revoke" }).click();
    await keys.getByText("No keys.").waitFor();
    const revoked = await fetch(`${svc.baseUrl}/api/auth/me`, {
      headers: { authorization: `Bearer ${key}` },
    });
    await revoked.body?.cancel();
    assertEquals(revoked.status, 401);

    // A key limited to the group's members, chosen by the group's name.
    await keys.getByLabel("Key name", { exact: true }).fill("team only");
    await keys.getByLabel("Acts on", { exact: true }).selectOption({
      label: "Members of Billing team",
    });
    await keys.getByRole("button", { name: "Create key" }).click();
    await keys.getByRole("button", { name: "Done" }).click();
    await keys.getByText(
      `acts on the members of group ${team.data.id} only`,
    ).waitFor();
    const limited = await svc.admin.get("/api/users/{id}/keys", {
      params: { path: { id: maryam.id } },
    });
    assert(limited.ok);
    assertEquals(
      limited.data.map((k) => [k.name, k.reachGroupId]),
      [["team only", team.data.id]],
    );

    // Disable with reason and end, once confirmed; enable again.
    await page.getByRole("tab", { name: "Profile" }).click();
    await page.getByLabel("Reason", { exact: true }).fill("إجازة طويلة");
    await page.getByLabel("Until", { exact: true }).fill("2099-01-31T12:00");
    await page.getByRole("button", { name: "Disable user" }).click();
    await page.getByRole("button", { name: "Yes, disable user" }).click();
    await page.getByRole("status").getByText("User disabled.").waitFor();
    const disabled = await svc.admin.get("/api/users/{id}", {
      params: { path: { id: maryam.id } },
    });
    assert(disabled.ok);
    assertEquals(disabled.data.disabled?.reason, "إجازة طويلة");
    assertEquals(disabled.data.disabled?.until, "2099-01-31T12:00:00.000Z");
    await page.getByRole("button", { name: "Enable user" }).click();
    await page.getByRole("status").getByText("User enabled.").waitFor();
    const enabled = await svc.admin.get("/api/users/{id}", {
      params: { path: { id: maryam.id } },
    });
    assert(enabled.ok);
    assertEquals(enabled.data.disabled, null);

    // That user's audit records, as GET /api/audit?targetId= has them.
    await page.getByRole("tab", { name: "Activity" }).click();
    const records = page.locator("section", {
      has: page.getByRole("heading", { name: "Audit records" }),
    }).locator("ol.records li");
    await page.locator("ol.records li").getByText("user.enabled").first()
      .waitFor();
    const trail = await svc.admin.get("/api/audit", {
      params: { query: { targetId: maryam.id, limit: 20 } },
    });
    assert(trail.ok);
    assertEquals(await records.count(), trail.data.length);
    assertEquals(
      await records.locator(".action").allTextContents(),
      trail.data.map((r) => r.action),
    );

    // Search, role and status filters, back on the list.
    await section(page, "Users");
    await heading(page, "Users");
    await page.getByLabel("Search", { exact: true }).fill("الحسن");
    await eventually(
      async () => (await rows(page)).join() === "maryam",
      "the search finds maryam alone",
    );
    await page.getByLabel("Search", { exact: true }).fill("");
    await page.getByLabel("Role", { exact: true }).selectOption("viewer");
    await page.getByText("No user matches.").waitFor();
    await page.getByLabel("Role", { exact: true }).selectOption("");
    await page.getByLabel("Status", { exact: true }).selectOption("active");
    await eventually(
      async () => (await rows(page)).join() === "admin,maryam",
      "both users are active",
    );
    await page.getByLabel("Status", { exact: true }).selectOption("disabled");
    await page.getByText("No user matches.").waitFor();
    await page.getByLabel("Status", { exact: true }).selectOption("");
    await shot(page, "users");

    // Delete, from the user's page.
    await page.getByRole("link", { name: "maryam" }).click();
    await heading(page, "مريم الحسن 🌸");
    await page.getByRole("button", { name: "Delete user" }).click();
    await page.getByRole("button", { name: "Yes, delete user" }).click();
    await heading(page, "Users");
    assertEquals(
      (await svc.admin.get("/api/users/{id}", {
        params: { path: { id: maryam.id } },
      })).status,
      404,
    );

    // Sign out: the session is gone on the server too.
    await page.getByRole("button", { name: "Sign out" }).click();
    await heading(page, "Sign in");
    assertEquals(
      (await page.context().cookies()).filter((c) => c.name === "sid").length,
      0,
    );
    clean(c);
  },
));

Deno.test(withTool(
  "the users page pages through any number of users by the API's next links, never asking for more than one page",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    await seedUsers(svc.sql, 121);
    const asked: URL[] = [];
    page.on("request", (r) => {
      const url = new URL(r.url());
      if (url.pathname === "/api/users") asked.push(url);
    });
    await signIn(page, svc.baseUrl);
    await eventually(async () => (await rows(page)).length === 50, "page 1");
    assertEquals((await rows(page))[49], "user50");
    await page.getByRole("button", { name: "Next" }).click();
    await eventually(async () => (await rows(page))[0] === "user51", "page 2");
    await page.getByRole("button", { name: "Next" }).click();
    await eventually(async () => (await rows(page))[0] === "user101", "page 3");
    assertEquals((await rows(page)).length, 21);
    assertEquals(
      await page.getByRole("button", { name: "Next" }).count(),
      0,
      "no next page after the last",
    );
    await page.getByRole("button", { name: "Previous" }).click();
    await eventually(async () => (await rows(page))[0] === "user51", "back");
    await page.getByRole("button", { name: "Previous" }).click();
    await eventually(async () => (await rows(page))[0] === "admin", "first");
    assertEquals(
      await page.getByRole("button", { name: "Previous" }).count(),
      0,
    );

    // A reload keeps the page (its cursor is in the address).
    await page.getByRole("button", { name: "Next" }).click();
    await eventually(async () => (await rows(page))[0] === "user51", "again");
    await page.reload();
    await eventually(async () => (await rows(page))[0] === "user51", "reload");
    await page.getByRole("button", { name: "First page" }).click();
    await eventually(async () => (await rows(page))[0] === "admin", "first");

    assert(asked.length >= 7, `${asked.length} list requests`);
    for (const url of asked) {
      assertEquals(url.searchParams.get("limit"), "50", url.href);
    }
    clean(c);
  },
));

Deno.test(withTool(
  "webhooks are created with their secret shown once, listed, opened with their deliveries, enabled and deleted, as the API has them",
  CHROMIUM_TOOL,
  async () => {
    const delivered: unknown[] = [];
    await using receiver = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (req) => {
        delivered.push(await req.json());
        return new Response(null, { status: 204 });
      },
    );
    const target = `http://127.0.0.1:${receiver.addr.port}/hook`;
    await using c = await openConsole({
      env: { WEBHOOK_ALLOW_PRIVATE: "true" },
    });
    const { svc, page } = c;
    await signIn(page, svc.baseUrl);
    await section(page, "Webhooks");
    await page.getByText("No webhooks.").waitFor();
    await accessible(page, "the webhooks page");

    await page.getByLabel("URL", { exact: true }).fill("ftp://example.com/x");
    await page.getByRole("button", { name: "Create webhook" }).click();
    await page.getByRole("alert").getByText("Invalid webhook").waitFor();

    await page.getByLabel("URL", { exact: true }).fill(target);
    await page.getByLabel("Description", { exact: true }).fill("Directory");
    await page.getByLabel("user.created", { exact: true }).check();
    await page.getByRole("button", { name: "Create webhook" }).click();
    const secret = page.getByRole("textbox", {
      name: `Signing secret of ${target}`,
    });
    assert(/^whsec_/.test(await secret.inputValue()));
    await shot(page, "webhooks");
    const listed = await svc.admin.get("/api/webhooks");
    assert(listed.ok);
    assertEquals(listed.data.map((w) => [w.url, w.description, w.actions]), [
      [target, "Directory", ["user.created"]],
    ]);
    await page.getByRole("button", { name: "Done" }).click();
    assertEquals(await secret.count(), 0, "the secret is shown once");

    const created = await svc.admin.post("/api/users", {
      body: {
        username: "hooked",
        name: "Hooked",
        email: "hooked@example.com",
        password: "hooked-password",
        role: "viewer",
      },
    });
    assert(created.ok);
    await eventually(() => Promise.resolve(delivered.length > 0), "delivery");

    await page.getByRole("link", { name: target }).click();
    await heading(page, target);
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.locator("table.list tbody tr").filter({ hasText: "delivered" })
      .first().waitFor();
    await accessible(page, "a webhook's page");
    await shot(page, "webhook");

    // Given up (as after three days of failures): enabled from the page.
    const id = listed.data[0].id;
    // Its lease taken too: an attempt failing meanwhile does not undo it.
    await svc.sql`
      update webhook_endpoints set disabled_at = now(), lease_until = null,
        lease_token = null
      where id = ${id}`;
    await page.reload();
    await page.getByRole("button", { name: "Enable webhook" }).click();
    await page.getByRole("status").getByText("Webhook enabled.").waitFor();
    const enabled = await svc.admin.get("/api/webhooks/{id}", {
      params: { path: { id } },
    });
    assert(enabled.ok);
    assertEquals(enabled.data.status, "active");

    await page.getByRole("button", { name: "Delete webhook" }).click();
    await page.getByRole("button", { name: "Yes, delete webhook" }).click();
    await heading(page, "Webhooks");
    await page.getByText("No webhooks.").waitFor();
    const after = await svc.admin.get("/api/webhooks");
    assert(after.ok);
    assertEquals(after.data, []);
    clean(c);
  },
));

Deno.test(withTool(
  "the console shows plainly a stale tag (412, with a reload), a user deleted meanwhile (404), the API unreachable, a 429 with Retry-After and a session that ended",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole({
      env: { LOGIN_MAX_FAILURES: "2" },
      // The requests this test cuts off itself.
      allowFailed: (url) => new URL(url).pathname === "/api/users",
    });
    const { svc, page } = c;
    const dana = await someone(svc, "dana", "Dana 👩‍💻");
    await signIn(page, svc.baseUrl);

    // 412: another admin changed Dana after the page loaded.
    await page.goto(`${svc.baseUrl}/admin#/users/${dana.id}`);
    await heading(page, "Dana 👩‍💻");
    const meanwhile = await svc.admin.patch("/api/users/{id}", {
      params: { path: { id: dana.id } },
      body: { role: "admin" },
    });
    assert(meanwhile.ok);
    await page.getByRole("tab", { name: "Security" }).click();
    await page.getByLabel("New password", { exact: true }).fill(
      "dana-new-pass",
    );
    await page.getByRole("button", { name: "Reset password" }).click();
    const stale = page.getByRole("alert").filter({
      hasText: "Precondition failed",
    });
    await stale.getByText("Someone changed this user meanwhile").waitFor();
    await accessible(page, "a user's page with a 412");
    await shot(page, "412");
    await stale.getByRole("button", { name: "Reload" }).click();
    await page.getByRole("tab", { name: "Profile" }).click();
    await page.locator("dl.facts dd").getByText("admin", { exact: true })
      .waitFor();
    await page.getByLabel("New role", { exact: true }).selectOption("viewer");
    await page.getByRole("button", { name: "Change role" }).click();
    await page.getByRole("status").getByText("Role changed to viewer.")
      .waitFor();
    // The change's reload done, so it cannot answer the deletion below.
    await page.locator("dl.facts dd").getByText("viewer", { exact: true })
      .waitFor();
    const now = await svc.admin.get("/api/users/{id}", {
      params: { path: { id: dana.id } },
    });
    assert(now.ok);
    assertEquals(now.data.role, "viewer");

    // 404: deleted by another admin while the page is open.
    const gone = await svc.admin.delete("/api/users/{id}", {
      params: { path: { id: dana.id } },
    });
    assert(gone.ok);
    await page.getByLabel("Reason", { exact: true }).fill("left");
    await page.getByRole("button", { name: "Disable user" }).click();
    await page.getByRole("button", { name: "Yes, disable user" }).click();
    await heading(page, "User not found");
    await page.getByRole("alert").getByText("User not found").waitFor();
    await accessible(page, "a deleted user's page");

    // The API unreachable, then back.
    await page.route(
      "**/api/users?*",
      (route) => route.abort("connectionrefused"),
    );
    await section(page, "Users");
    const down = page.getByRole("alert").filter({
      hasText: "The service could not be reached.",
    });
    await down.waitFor();
    await shot(page, "unreachable");
    await page.unroute("**/api/users?*");
    await down.getByRole("button", { name: "Try again" }).click();
    await eventually(async () => (await rows(page)).join() === "admin", "back");

    // The session ends elsewhere (every session of the admin ended by a key).
    const key = await svc.admin.post("/api/users/{id}/keys", {
      params: { path: { id: svc.adminAccount.id } },
      body: { name: "ender" },
    });
    assert(key.ok);
    const ended = await fetch(
      `${svc.baseUrl}/api/users/${svc.adminAccount.id}/sessions`,
      {
        method: "DELETE",
        headers: { authorization: `Bearer ${key.data.key}` },
      },
    );
    assertEquals(ended.status, 200, await ended.text());
    await section(page, "Audit trail").catch(() => {});
    await heading(page, "Sign in");
    await page.getByRole("alert").getByText("Unauthorised").waitFor();
    await page.getByText("Your session has ended: sign in again.").waitFor();
    await shot(page, "session-ended");
    // Signing in again goes back to where the person was.
    await page.getByLabel("Username", { exact: true }).fill(ADMIN.username);
    await page.getByLabel("Password", { exact: true }).fill(ADMIN.password);
    await page.getByRole("button", { name: "Sign in" }).click();
    await heading(page, "Audit trail");

    // 429 with Retry-After: the throttle's own answer, as it is.
    await page.getByRole("button", { name: "Sign out" }).click();
    await heading(page, "Sign in");
    await page.getByLabel("Username", { exact: true }).fill("nobody");
    for (let i = 0; i < 2; i++) {
      await page.getByLabel("Password", { exact: true }).fill(`wrong-${i}`);
      await page.getByRole("button", { name: "Sign in" }).click();
      await page.getByRole("alert").getByText("Invalid username or password")
        .waitFor();
      await page.getByRole("button", { name: "Sign in" }).isEnabled();
    }
    await page.getByLabel("Password", { exact: true }).fill("wrong-again");
    await page.getByRole("button", { name: "Sign in" }).click();
    const throttled = page.getByRole("alert").filter({
      hasText: "Too many login attempts",
    });
    await throttled.waitFor();
    assert(
      /Try again in \d+ s\./.test(await throttled.textContent() ?? ""),
      await throttled.textContent() ?? "",
    );
    await shot(page, "429");
    clean(c);
  },
));

Deno.test(withTool(
  "at 390 pixels wide every page of the console reads without horizontal scrolling, long right-to-left and emoji names included",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole({
      width: 390,
      env: { WEBHOOK_ALLOW_PRIVATE: "true" },
    });
    const { svc, page } = c;
    const long = await someone(
      svc,
      "محمد_عبدالرحمن_الشمري_🚀🚀🚀".slice(0, 30),
      "محمد عبد الرحمن الشمري الطويل جدا جدا 👨‍👩‍👧‍👦🚀🌍✨",
    );
    const hook = await svc.admin.post("/api/webhooks", {
      body: {
        url: "http://127.0.0.1:9/a/very/long/path/that/goes/on/and/on/and/on",
        description: "وصف طويل جدا للخطاف 🪝",
      },
    });
    assert(hook.ok);
    // An import with a refused record, for its page's table.
    const imported = await svc.adminFetch("/api/imports", {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: JSON.stringify({
        username: "x".repeat(40),
        name: "اسم طويل جدا جدا جدا",
        email: "an-address-without-its-at-sign-that-goes-on-and-on.example.com",
      }) + "\n",
    });
    assertEquals(imported.status, 202);
    const job = (await imported.json()) as { id: number };

    await page.goto(`${svc.baseUrl}/admin`);
    await heading(page, "Sign in");
    assertEquals(await overflow(page), 0, "sign-in");
    await signIn(page, svc.baseUrl);
    const pages: [string, string | RegExp][] = [
      ["#/overview", "Overview"],
      ["#/users", "Users"],
      [`#/users/${long.id}`, long.name],
      ["#/users/new", "New user"],
      ["#/audit", "Audit trail"],
      ["#/webhooks", "Webhooks"],
      [`#/webhooks/${hook.data.id}`, /a\/very\/long/],
      ["#/provisioning", "Provisioning"],
      ["#/sign-in-providers", "Sign-in providers"],
      ["#/imports", "Imports"],
      [`#/imports/${job.id}`, `Import ${job.id}`],
      ["#/factors", "My second factors"],
    ];
    for (const [hash, title] of pages) {
      await page.goto(`${svc.baseUrl}/admin${hash}`);
      await heading(page, title);
      await page.waitForLoadState("networkidle").catch(() => {});
      assertEquals(await overflow(page), 0, `no horizontal scroll on ${hash}`);
      await accessible(page, `${hash} at 390 px`);
    }
    await page.goto(`${svc.baseUrl}/admin#/users`);
    await eventually(async () => (await rows(page)).length === 2, "rows");
    await shot(page, "users-390");
    clean(c);
  },
));

Deno.test(withTool(
  "the console is usable with the keyboard alone: sign in, find a user, open them and change their role",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const kim = await someone(svc, "kim", "Kim Lee");
    await page.goto(`${svc.baseUrl}/admin`);
    await heading(page, "Sign in");
    const focused = () =>
      page.evaluate(() => {
        const el = (globalThis as unknown as {
          document: {
            activeElement: {
              id: string;
              tagName: string;
              textContent: string | null;
            } | null;
          };
        }).document.activeElement;
        return el ? `${el.tagName}#${el.id} ${el.textContent ?? ""}` : "";
      });
    /** Presses Tab until the focused element's description includes `what`. */
    const tabTo = async (what: string) => {
      for (let i = 0; i < 40; i++) {
        await page.keyboard.press("Tab");
        if ((await focused()).includes(what)) return;
      }
      throw new Error(`Tab never reached ${what}`);
    };
    await tabTo("INPUT#username");
    await page.keyboard.type(ADMIN.username);
    await tabTo("INPUT#password");
    await page.keyboard.type(ADMIN.password);
    await page.keyboard.press("Enter");
    await heading(page, "Overview");
    await tabTo("A# Users");
    await page.keyboard.press("Enter");
    await heading(page, "Users");
    await tabTo("INPUT#q");
    await page.keyboard.type("kim");
    await eventually(async () => (await rows(page)).join() === "kim", "found");
    await tabTo("A# kim");
    await page.keyboard.press("Enter");
    await heading(page, "Kim Lee");
    await tabTo("SELECT#new-role");
    await page.keyboard.press("ArrowDown");
    await page.keyboard.press("Home");
    await page.keyboard.press("Tab");
    await page.keyboard.press("Enter");
    await page.getByRole("status").getByText("Role changed to admin.")
      .waitFor();
    const promoted = await svc.admin.get("/api/users/{id}", {
      params: { path: { id: kim.id } },
    });
    assert(promoted.ok);
    assertEquals(promoted.data.role, "admin");
    clean(c);
  },
));

Deno.test(withTool(
  "provisioning connections are created with their token shown once, edited and deleted, as the API has them",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    await signIn(page, svc.baseUrl);
    await section(page, "Provisioning");
    await page.getByText("No connections.").waitFor();
    await accessible(page, "the provisioning page");

    await page.getByRole("button", { name: "Create connection" }).click();
    await page.getByRole("alert").getByText("Invalid provisioning connection")
      .waitFor();
    await page.getByLabel("Connection name", { exact: true }).fill("Okta");
    await page.getByLabel("Groups whose members are admins", { exact: true })
      .fill("User Admins\n\nIT");
    await page.getByRole("button", { name: "Create connection" }).click();
    const secret = page.getByRole("textbox", { name: "Token of Okta" });
    const token = await secret.inputValue();
    assert(/^usc_[A-Za-z0-9_-]{43}$/.test(token), token);
    await shot(page, "provisioning");
    const listed = await svc.admin.get("/api/scim/connections");
    assert(listed.ok);
    assertEquals(listed.data.map((x) => [x.name, x.adminGroups]), [
      ["Okta", ["User Admins", "IT"]],
    ]);
    const scim = (t: string) =>
      fetch(`${svc.baseUrl}/scim/v2/Users?count=1`, {
        headers: { authorization: `Bearer ${t}` },
      });
    const used = await scim(token);
    await used.body?.cancel();
    assertEquals(used.status, 200, "the token shown works");
    await page.getByRole("button", { name: "Done" }).click();
    assertEquals(await secret.count(), 0, "the token is shown once");

    await page.getByRole("button", { name: "Edit Okta" }).click();
    await page.getByLabel("Name", { exact: true }).fill("Okta (prod)");
    await page.getByLabel("Admin groups", { exact: true }).fill("Admins");
    await page.getByRole("button", { name: "Save" }).click();
    await page.getByRole("status").getByText("Connection saved.").waitFor();
    const edited = await svc.admin.get("/api/scim/connections");
    assert(edited.ok);
    assertEquals(edited.data.map((x) => [x.name, x.adminGroups]), [
      ["Okta (prod)", ["Admins"]],
    ]);

    await page.getByRole("button", { name: "Delete connection" }).click();
    await page.getByRole("button", { name: "Yes, delete connection" }).click();
    await page.getByText("No connections.").waitFor();
    const after = await svc.admin.get("/api/scim/connections");
    assert(after.ok);
    assertEquals(after.data, []);
    const revoked = await scim(token);
    await revoked.body?.cancel();
    assertEquals(revoked.status, 401, "the token is revoked");
    clean(c);
  },
));

Deno.test(withTool(
  "an address that names no page of the console, a malformed one included, shows Page not found with the way back to users",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    await signIn(page, svc.baseUrl);
    for (
      const hash of [
        "#/users/%E0%A4%A",
        "#/webhooks/%",
        "#/imports/%ZZ",
        "#/nowhere",
      ]
    ) {
      // Opened afresh, as a shared link would be.
      await page.goto("about:blank");
      await page.goto(`${svc.baseUrl}/admin${hash}`);
      await heading(page, "Page not found");
    }
    await accessible(page, "the page-not-found view");
    await page.goto(`${svc.baseUrl}/admin#/users`);
    await heading(page, "Users");
    await page.goto(`${svc.baseUrl}/admin#/users/%E0%A4%A`);
    await heading(page, "Page not found");
    await page.getByRole("link", { name: "Back to users" }).click();
    await heading(page, "Users");
    clean(c);
  },
));

Deno.test(withTool(
  "one import's page asks again while its job runs and shows its end without a reload; an import or group that is not there is named not found with the way back, and one that did not load is tried again",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const imported = await svc.adminFetch("/api/imports", {
      method: "POST",
      headers: { "content-type": "application/x-ndjson" },
      body: JSON.stringify({
        username: "imported",
        name: "Imported",
        email: "imported@example.com",
      }) + "\n",
    });
    assertEquals(imported.status, 202);
    const job = (await imported.json()) as { id: number };
    await eventually(async () => {
      const now = await svc.adminFetch(`/api/imports/${job.id}`);
      return ((await now.json()) as { status: string }).status === "finished";
    }, "the import finishes");
    // The job has ended; its first two answers say it still runs, so the
    // page shows the end only if it asks again by itself.
    let asked = 0;
    await page.route(`**/api/imports/${job.id}`, async (route) => {
      asked++;
      if (asked > 2) return route.continue();
      const response = await route.fetch();
      const json = { ...await response.json(), status: "running" };
      await route.fulfill({ response, json });
    });
    await signIn(page, svc.baseUrl);
    await page.goto(`${svc.baseUrl}/admin#/imports/${job.id}`);
    await heading(page, `Import ${job.id}`);
    const state = page.locator(".import-state");
    await eventually(
      async () => await state.textContent() === "Running: running",
      "the job shown running",
    );
    await eventually(
      async () => await state.textContent() === "Ended: finished",
      "the job's end shown without a reload",
    );
    assertEquals(asked, 3);
    await page.unroute(`**/api/imports/${job.id}`);

    await page.goto(`${svc.baseUrl}/admin#/imports/999999`);
    await heading(page, "Import not found");
    await page.getByRole("alert").getByText("Import not found").waitFor();
    await page.getByRole("link", { name: "Back to imports" }).click();
    await heading(page, "Imports");

    await page.goto(`${svc.baseUrl}/admin#/groups/999999`);
    await heading(page, "Group not found");
    await page.getByRole("alert").getByText("Group not found").waitFor();
    await accessible(page, "a missing group's page");
    await page.getByRole("link", { name: "Back to groups" }).click();
    await heading(page, "Groups");

    // A group whose first answer is a failure other than 404: the page
    // says so under its title and loads it again on request.
    const group = await svc.admin.post("/api/groups", {
      body: { displayName: "Support" },
    });
    assert(group.ok);
    let failed = false;
    await page.route(`**/api/groups/${group.data.id}`, async (route) => {
      if (failed) return route.continue();
      failed = true;
      await route.fulfill({
        status: 503,
        json: { error: "Service unavailable" },
      });
    });
    await page.goto(`${svc.baseUrl}/admin#/groups/${group.data.id}`);
    await heading(page, "Group");
    const down = page.getByRole("alert").filter({
      hasText: "Service unavailable",
    });
    await down.getByRole("button", { name: "Try again" }).click();
    await heading(page, "Support");
    clean(c);
  },
));
