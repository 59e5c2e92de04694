/**
 * The console's overview and audit trail in Chromium: the overview's
 * counts as the API has them, the audit trail's filters (in the address,
 * so a view can be linked), its older pages, live records under a filter;
 * axe-core clean in the light and the dark scheme, no horizontal scrolling
 * at 390 pixels.
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
  someone,
} from "./support/console.ts";
import { withTool } from "./support/conditions.ts";
import { seedAudit } from "./support/seed.ts";
import type { TestService } from "./support/service.ts";

/** The overview's figure under `label`, as shown. */
const stat = (page: Page, label: string) =>
  page.locator(".stats li", {
    has: page.locator(".label", { hasText: new RegExp(`^${label}$`) }),
  }).locator(".value").textContent();

/** axe-core in both schemes, back to light after. */
async function accessibleInBothSchemes(page: Page, where: string) {
  await page.emulateMedia({ colorScheme: "light" });
  await accessible(page, `${where} (light)`);
  await page.emulateMedia({ colorScheme: "dark" });
  await accessible(page, `${where} (dark)`);
  await page.emulateMedia({ colorScheme: "light" });
}

/** The record ids the audit table shows, top to bottom. */
const shownIds = (page: Page) =>
  page.locator("table.audit tbody tr").evaluateAll((rows) =>
    rows.map((r) =>
      Number((r as unknown as { dataset: { id: string } }).dataset.id)
    )
  );

/** The ids of the newest 100 records the API lists for these filters. */
async function listedIds(
  svc: TestService,
  query: Record<string, string | number>,
) {
  const listed = await svc.admin.get("/api/audit", {
    params: { query: { limit: 100, ...query } },
  });
  assert(listed.ok, JSON.stringify(listed));
  return listed.data.map((r) => r.id);
}

Deno.test(withTool(
  "the overview opens first with the counts of users, admins, disabled and unenrolled admins, sign-ins per day and webhook health",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const ann = await someone(svc, "ann", "Ann Example");
    await someone(svc, "bob", "Bob Example");
    const disabled = await svc.admin.post("/api/users/{id}/disable", {
      params: { path: { id: ann.id } },
      body: { reason: "on leave" },
    });
    assert(disabled.ok);
    const hook = await svc.admin.post("/api/webhooks", {
      // An action that never comes here: no delivery is attempted.
      body: { url: "https://hooks.example/in", actions: ["import.finished"] },
    });
    assert(hook.ok);
    // A failed sign-in today, for the chart.
    assertEquals(
      (await svc.client().login("bob", "not bob's password")).status,
      401,
    );

    await enterPassword(page, svc.baseUrl);
    await heading(page, "Overview");
    // First in the navigation, and current.
    const nav = page.getByRole("navigation", { name: "Sections" });
    assertEquals(
      (await nav.getByRole("link").first().textContent())?.trim(),
      "Overview",
    );
    assertEquals(
      await nav.getByRole("link", { name: "Overview" }).getAttribute(
        "aria-current",
      ),
      "page",
    );
    await eventually(
      async () => (await stat(page, "Users")) === "3",
      "three users",
    );
    assertEquals(await stat(page, "Admins"), "1");
    assertEquals(await stat(page, "Disabled"), "1");
    assertEquals(await stat(page, "Admins without a second factor"), "1");

    // The chart, and its numbers as a table: today's failed sign-in.
    await page.locator("svg.chart").waitFor();
    await page.getByText("Sign-ins per day as a table").click();
    const lastDay = page.locator("table.signins tbody tr").last();
    assertEquals(await page.locator("table.signins tbody tr").count(), 14);
    assertEquals(
      await lastDay.locator("td").nth(2).textContent(),
      "1",
      "today's failed sign-ins",
    );
    const health = page.locator("ul.health li");
    await health.getByRole("link", { name: "https://hooks.example/in" })
      .waitFor();
    assertEquals(
      await health.locator(".badge").textContent(),
      "No deliveries yet",
    );
    await accessibleInBothSchemes(page, "the overview");
    await shot(page, "overview");
    await page.emulateMedia({ colorScheme: "dark" });
    await shot(page, "overview-dark");
    await page.emulateMedia({ colorScheme: "light" });

    // Another user and another disabled one: the counts follow on reload.
    const cat = await someone(svc, "cat", "Cat Example");
    assert(
      (await svc.admin.post("/api/users/{id}/disable", {
        params: { path: { id: cat.id } },
        body: {},
      })).ok,
    );
    await page.reload();
    await heading(page, "Overview");
    await eventually(
      async () => (await stat(page, "Users")) === "4",
      "four users",
    );
    assertEquals(await stat(page, "Disabled"), "2");

    // The counts link to the users they count.
    await page.getByRole("link", { name: "List disabled users" }).click();
    await heading(page, "Users");
    assert(page.url().includes("status=disabled"), page.url());

    // 390 pixels: nothing scrolls sideways, in either scheme.
    await page.setViewportSize({ width: 390, height: 844 });
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      for (
        const [hash, title] of [["#/overview", "Overview"], [
          "#/audit",
          "Audit trail",
        ]]
      ) {
        await page.goto(`${svc.baseUrl}/admin${hash}`);
        await heading(page, title);
        await page.waitForLoadState("networkidle").catch(() => {});
        assertEquals(await overflow(page), 0, `${hash} at 390 px, ${scheme}`);
      }
    }
    clean(c);
  },
));

Deno.test(withTool(
  "the audit trail filters by every parameter the API has, keeps them in the address, pages back through older records and still shows live ones",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    // 250 records, one a second up to now, over users 1 and 2.
    await seedAudit(svc.sql, 250, { users: 2, actorId: 1 });

    await enterPassword(page, svc.baseUrl);
    await heading(page, "Overview");
    await section(page, "Audit trail");
    await page.getByText("Live: new records appear at the top.").waitFor();
    const all = await listedIds(svc, {});
    await eventually(
      async () => (await shownIds(page)).join() === all.join(),
      "the newest 100",
    );
    await accessibleInBothSchemes(page, "the audit trail");

    // Older pages, until there are none.
    const older = page.getByRole("button", { name: "Older records" });
    await older.click();
    await eventually(
      async () => (await shownIds(page)).length === 200,
      "two pages",
    );
    const ids = await shownIds(page);
    assertEquals(ids.slice(0, 100), all);
    assertEquals(
      ids.slice(100),
      await listedIds(svc, { before: all.at(-1)! }),
    );
    const total = (await svc.sql<{ n: number }[]>`
      select count(*)::int as n from audit_events`)[0].n;
    while (await older.isVisible()) {
      const had = (await shownIds(page)).length;
      await older.click();
      await eventually(
        async () => (await shownIds(page)).length > had,
        "another page",
      );
    }
    assertEquals((await shownIds(page)).length, total);

    // An action, from its label: only its records, and in the address.
    await page.getByLabel("Action", { exact: true }).selectOption({
      label: "Sign-in failed",
    });
    const failed = await listedIds(svc, { action: "login.failed" });
    await eventually(
      async () => (await shownIds(page)).join() === failed.join(),
      "the failed sign-ins",
    );
    assert(page.url().includes("action=login.failed"), page.url());
    assertEquals(
      new Set(
        await page.locator("table.audit .action").evaluateAll((els) =>
          els.map((e) => e.getAttribute("data-action"))
        ),
      ),
      new Set(["login.failed"]),
    );
    assertEquals(
      new Set(await page.locator("table.audit .action").allTextContents()),
      new Set(["Sign-in failed"]),
    );

    // Actor and target ids, with the action kept.
    await page.getByLabel("Target (user id)", { exact: true }).fill("2");
    await page.getByRole("button", { name: "Apply filters" }).click();
    const ofTwo = await listedIds(svc, { action: "login.failed", targetId: 2 });
    await eventually(
      async () => (await shownIds(page)).join() === ofTwo.join(),
      "user 2's failed sign-ins",
    );
    assert(ofTwo.length > 0 && ofTwo.length < failed.length);
    assert(page.url().includes("targetId=2"), page.url());
    await accessibleInBothSchemes(page, "the filtered audit trail");
    await shot(page, "audit-filtered");

    // A time window: records of a minute that ended in the past; not live.
    await page.getByRole("link", { name: "Clear filters" }).click();
    await eventually(
      async () => (await shownIds(page)).join() === all.join(),
      "cleared",
    );
    const [{ from, to }] = await svc.sql<{ from: Date; to: Date }[]>`
      select min(time) + interval '30 seconds' as from,
        min(time) + interval '90 seconds' as to
      from audit_events where id > ${Math.min(...all) - 150}`;
    const local = (d: Date) => {
      // The page's zone is UTC (openConsole): a datetime-local in UTC.
      return d.toISOString().slice(0, 16);
    };
    await page.getByLabel("From", { exact: true }).fill(local(from));
    await page.getByLabel("Before", { exact: true }).fill(local(to));
    await page.getByLabel("Actor (user id)", { exact: true }).fill("1");
    await page.getByRole("button", { name: "Apply filters" }).click();
    const since = `${local(from)}:00.000Z`;
    const until = `${local(to)}:00.000Z`;
    const windowed = await listedIds(svc, { actorId: 1, since, until });
    assert(windowed.length > 0);
    await eventually(
      async () => (await shownIds(page)).join() === windowed.join(),
      "the window's records",
    );
    await page.getByText("Not live: the time filter ends in the past.")
      .waitFor();

    // The address is the view: opened afresh, the same records and fields.
    const linked = page.url();
    await page.goto(`${svc.baseUrl}/admin#/overview`);
    await heading(page, "Overview");
    await page.goto(linked);
    await heading(page, "Audit trail");
    await eventually(
      async () => (await shownIds(page)).join() === windowed.join(),
      "the linked view",
    );
    assertEquals(
      await page.getByLabel("Actor (user id)", { exact: true }).inputValue(),
      "1",
    );
    assertEquals(
      await page.getByLabel("From", { exact: true }).inputValue(),
      local(from),
    );

    // A bad value in the address: the API's message, as it is.
    await page.goto(`${svc.baseUrl}/admin#/audit?targetId=abc`);
    await page.getByRole("alert").getByText(
      "Invalid query parameter: targetId",
    ).waitFor();

    // Live under a filter: a record it keeps arrives at the top; one it
    // excludes does not.
    await page.goto(`${svc.baseUrl}/admin#/audit?action=login.failed`);
    await heading(page, "Audit trail");
    await page.getByText("Live: new records appear at the top.").waitFor();
    const dee = await someone(svc, "dee", "Dee Example");
    assertEquals((await svc.client().login("dee", "wrong")).status, 401);
    const top = page.locator("table.audit tbody tr").first();
    await top.getByRole("link", { name: "dee" }).waitFor();
    assertEquals(
      await top.locator("td.details").textContent(),
      "wrong password",
    );
    assertEquals(
      await page.locator('table.audit [data-action="user.created"]').count(),
      0,
    );

    // Unfiltered: details in words, the target linked to its page.
    await page.getByRole("link", { name: "Clear filters" }).click();
    await heading(page, "Audit trail");
    const created = page.locator("table.audit tbody tr", {
      has: page.locator('[data-action="user.created"]'),
    }).first();
    await created.getByRole("link", { name: "dee" }).waitFor();
    assertEquals(
      await created.locator("td.details").textContent(),
      "role viewer",
    );
    await created.getByRole("link", { name: "dee" }).click();
    await heading(page, "Dee Example");
    assert(page.url().endsWith(`#/users/${dee.id}`), page.url());
    clean(c);
  },
));
