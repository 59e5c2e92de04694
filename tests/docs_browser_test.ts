/**
 * Swagger UI as a person uses it: a real Chromium (Debian's, driven by
 * playwright-core) opens /docs on a running service, logs in with
 * "Try it out", lists users, creates one and sees the 409 of a duplicate.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { CHROMIUM_TOOL, launch, tryItOut } from "./support/browser.ts";
import { withTool } from "./support/conditions.ts";
import { ADMIN, startService } from "./support/service.ts";

const ARTIFACTS = new URL("./artifacts/", import.meta.url);
/** The copies README shows; `UPDATE_SCREENSHOTS=1` refreshes them. */
const SCREENSHOTS = new URL("./screenshots/", import.meta.url);

Deno.test(withTool(
  "a person logs in through Swagger UI at /docs and lists, creates and duplicates users, with nothing loaded from outside",
  CHROMIUM_TOOL,
  async () => {
    await using svc = await startService();
    await using browser = await launch();
    const page = await browser.newPage({
      viewport: { width: 1280, height: 900 },
    });

    page.setDefaultTimeout(15_000);

    const requested: string[] = [];
    const problems: string[] = [];
    page.on("request", (r) => requested.push(r.url()));
    page.on("requestfailed", (r) => problems.push(`failed: ${r.url()}`));
    page.on("response", (r) => {
      // The API's 4xx are what this test provokes; the page's own files must load.
      const api = new URL(r.url()).pathname.startsWith("/api/");
      if (!api && r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on("pageerror", (e) => problems.push(`page error: ${e.message}`));
    page.on("console", (m) => {
      // Chromium logs every 4xx as "Failed to load resource"; covered above.
      if (m.type() !== "error" || m.text().startsWith("Failed to load")) return;
      problems.push(`console: ${m.text()}`);
    });
    // Report what the CSP blocks in words, whether or not Chromium logs it.
    await page.addInitScript({
      content: `document.addEventListener("securitypolicyviolation", (e) =>
      console.error("CSP violation: " + e.violatedDirective + " " + e.blockedURI));`,
    });

    const docs = await page.goto(`${svc.baseUrl}/docs`);
    assertEquals(docs?.status(), 200);
    const title = await page.locator(".info .title").first().textContent();
    assert(title?.startsWith("User administration API"), `title: ${title}`);
    // The cookie scheme is declared: operations behind it show a padlock.
    assert(
      await page.locator("#operations-users-listUsers .authorization__btn")
        .isVisible(),
      "listUsers shows the padlock of cookieAuth",
    );

    const overview = await page.screenshot();

    const login = await tryItOut(page, "auth-login", {
      username: ADMIN.username,
      password: ADMIN.password,
    });
    assertEquals(login.status, "200");
    assertEquals(JSON.parse(login.body!).username, ADMIN.username);

    const list = await tryItOut(page, "users-listUsers");
    assertEquals(list.status, "200");
    assertEquals(
      JSON.parse(list.body!).map((u: { username: string }) => u.username),
      [ADMIN.username],
    );

    // The example body Swagger UI offers is a valid new user as it stands.
    const created = await tryItOut(page, "users-createUser");
    assertEquals(created.status, "201");
    const alice = JSON.parse(created.body!);
    assertEquals(alice.username, "alice");

    const duplicate = await tryItOut(page, "users-createUser");
    assertEquals(duplicate.status, "409");
    assertEquals(JSON.parse(duplicate.body!), {
      error: "Username or email already exists",
    });

    const stored = await svc.admin.GET("/api/users");
    assertEquals(stored.data?.map((u) => u.username), [
      ADMIN.username,
      "alice",
    ]);

    await Deno.mkdir(ARTIFACTS, { recursive: true });
    const shots = {
      "docs.png": overview,
      "docs-409.png": await duplicate.op.locator(".live-responses-table")
        .screenshot(),
    };
    for (const [name, png] of Object.entries(shots)) {
      await Deno.writeFile(new URL(name, ARTIFACTS), png);
      if (Deno.env.get("UPDATE_SCREENSHOTS") === "1") {
        await Deno.writeFile(new URL(name, SCREENSHOTS), png);
      }
    }

    const outside = requested.filter((u) =>
      new URL(u).host !== new URL(svc.baseUrl).host
    );
    assertEquals(outside, [], "every request stays on the service");
    assertEquals(problems, [], "no script error and no CSP violation");
  },
));

Deno.test(withTool(
  'an API key pasted into Swagger UI\'s Authorize dialog signs "Try it out" in, with no login and no cookie',
  CHROMIUM_TOOL,
  async () => {
    await using svc = await startService();
    const created = await svc.admin.post("/api/users/{id}/keys", {
      params: { path: { id: svc.adminAccount.id } },
      body: { name: "swagger" },
    });
    assert(created.ok);
    await using browser = await launch();
    const page = await browser.newPage();
    page.setDefaultTimeout(15_000);
    const sent: (string | undefined)[] = [];
    page.on("request", (r) => {
      if (new URL(r.url()).pathname === "/api/auth/me") {
        sent.push(r.headers()["authorization"]);
      }
    });
    await page.goto(`${svc.baseUrl}/docs`);
    // Without the key: 401.
    const before = await tryItOut(page, "auth-me");
    assertEquals(before.status, "401");

    await page.locator(".auth-wrapper button.authorize").click();
    const dialog = page.locator(".dialog-ux");
    const bearer = dialog.locator(".auth-container").filter({
      hasText: "bearerAuth",
    });
    await bearer.locator("input").fill(created.data.key);
    await bearer.locator("button.authorize").click();
    await dialog.locator("button.btn-done").first().click();

    const me = await tryItOut(page, "auth-me");
    assertEquals(me.status, "200");
    assertEquals(JSON.parse(me.body!).username, ADMIN.username);
    assertEquals(sent, [undefined, `Bearer ${created.data.key}`]);
    assertEquals((await page.context().cookies()).length, 0);
  },
));
