/**
 * The console's self-service and webhook health in a real Chromium: a
 * viewer opens "My account" from their name, changes their own password
 * with the API's messages, and signs out their other sessions (another
 * browser's among them) and then this one; a webhook's page shows its health as
 * its deliveries tell it and sends a test event; a refused target names
 * WEBHOOK_ALLOW_PRIVATE.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { CHROMIUM_TOOL } from "./support/browser.ts";
import {
  accessible,
  clean,
  enterPassword,
  eventually,
  heading,
  openConsole,
  section,
  shot,
  signIn,
} from "./support/console.ts";
import { withTool } from "./support/conditions.ts";

Deno.test(withTool(
  "a viewer opens My account from their name and changes their own password (a differing confirmation and a wrong current one are refused, a success clears the form), then signs out another browser, all other sessions, and this one",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page } = c;
    const made = await svc.admin.post("/api/users", {
      body: {
        username: "selfserve",
        name: "Self Serve",
        email: "self@example.com",
        password: "first-password-1",
        role: "viewer",
      },
    });
    assert(made.ok);
    await enterPassword(page, svc.baseUrl, {
      username: "selfserve",
      password: "first-password-1",
    });
    await page.getByRole("link", { name: "selfserve, my account" }).click();
    await heading(page, "My account");
    await page.getByText("Self Serve").waitFor();
    await accessible(page, "My account");

    const current = page.getByLabel("Current password", { exact: true });
    const next = page.getByLabel("New password", { exact: true });
    const confirm = page.getByLabel("Confirm new password", { exact: true });
    const submit = page.getByRole("button", { name: "Change password" });

    await current.fill("first-password-1");
    await next.fill("second-password-2");
    await confirm.fill("second-password-3");
    await submit.click();
    await page.getByRole("alert")
      .getByText("The new password and its confirmation differ").waitFor();

    await current.fill("not-my-password");
    await confirm.fill("second-password-2");
    await submit.click();
    await page.getByRole("alert").getByText("Current password is incorrect")
      .waitFor();

    await current.fill("first-password-1");
    await submit.click();
    await page.getByRole("status").getByText("Password changed.").waitFor();
    assertEquals(
      [
        await current.inputValue(),
        await next.inputValue(),
        await confirm.inputValue(),
      ],
      ["", "", ""],
    );
    // The page's own session stays; the new password signs in.
    await page.reload();
    await heading(page, "My account");
    assert(
      (await svc.client().login("selfserve", "second-password-2")).ok,
    );

    // A second browser signed in as the same person: listed on the first's
    // My account, and signed out from there.
    const elsewhere = await c.browser.newContext({
      locale: "en-GB",
      timezoneId: "UTC",
    });
    const other = await elsewhere.newPage();
    await enterPassword(other, svc.baseUrl, {
      username: "selfserve",
      password: "second-password-2",
    });
    await heading(other, "My account");
    await page.reload();
    await heading(page, "My account");
    const sessions = page.locator("section", {
      has: page.getByRole("heading", { name: "Sessions" }),
    });
    const cards = sessions.locator("li");
    // This page's, the other browser's, and the API client's above.
    await eventually(async () => await cards.count() === 3, "three sessions");
    const mine = cards.filter({ hasText: "This device" });
    assertEquals(await mine.count(), 1);
    await mine.getByText("Chrome on Linux").waitFor();
    await accessible(page, "My account with sessions");
    await shot(page, "my-account-sessions");
    // The other browser's: the newest of the others, so listed first.
    const theirs = cards.filter({ hasNotText: "This device" })
      .filter({ hasText: "Chrome on Linux" });
    await theirs.getByRole("button", { name: "Sign out", exact: true })
      .click();
    await theirs.getByRole("button", { name: "Yes, sign out", exact: true })
      .click();
    await sessions.getByRole("status").getByText("Session signed out.")
      .waitFor();
    await eventually(async () => await cards.count() === 2, "two left");
    await other.reload();
    await heading(other, "Sign in");

    // All others: the API client's ends, this page's stays.
    await sessions.getByRole("button", { name: "Sign out all other sessions" })
      .click();
    await sessions.getByRole("button", {
      name: "Yes, sign out all other sessions",
    }).click();
    await sessions.getByRole("status").getByText("1 other session signed out.")
      .waitFor();
    await eventually(async () => await cards.count() === 1, "this one left");
    assertEquals(await mine.count(), 1);
    assertEquals(
      await sessions.getByRole("button", {
        name: "Sign out all other sessions",
      }).count(),
      0,
      "nothing else to sign out",
    );

    // This device: signed out, back to signing in.
    await mine.getByRole("button", { name: "Sign out", exact: true }).click();
    await mine.getByRole("button", { name: "Yes, sign out", exact: true })
      .click();
    await heading(page, "Sign in");
    await page.getByText("You signed out this device.").waitFor();
    await page.reload();
    await heading(page, "Sign in");
    await elsewhere.close();
    clean(c);
  },
));

Deno.test(withTool(
  "a webhook's health shows as its deliveries tell it, a test event is sent from its page, and a refused target names WEBHOOK_ALLOW_PRIVATE",
  CHROMIUM_TOOL,
  async () => {
    const delivered: { type: string }[] = [];
    let answer = 503;
    await using receiver = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (req) => {
        delivered.push(await req.json());
        return new Response(null, { status: answer });
      },
    );
    const target = `http://127.0.0.1:${receiver.addr.port}/hook`;
    // Private targets refused, as by default: the hint shows.
    {
      await using c = await openConsole();
      const { svc, page } = c;
      await signIn(page, svc.baseUrl);
      await section(page, "Webhooks");
      await page.getByLabel("URL", { exact: true }).fill(
        "http://127.0.0.1:9/x",
      );
      await page.getByRole("button", { name: "Create webhook" }).click();
      await page.getByRole("alert").getByText("Invalid webhook").waitFor();
      await page.getByText(/WEBHOOK_ALLOW_PRIVATE=true/).waitFor();
      clean(c);
    }
    await using c = await openConsole({
      env: {
        WEBHOOK_ALLOW_PRIVATE: "true",
        WEBHOOK_POLL_MS: "50",
        WEBHOOK_RETRY_SCHEDULE: "600000",
      },
    });
    const { svc, page } = c;
    const hook = await svc.admin.post("/api/webhooks", {
      body: { url: target, actions: ["user.created"] },
    });
    assert(hook.ok);
    assert(
      (await svc.admin.post("/api/users", {
        body: {
          username: "hooked",
          name: "Hooked",
          email: "hooked@example.com",
          password: "hooked-password",
          role: "viewer",
        },
      })).ok,
    );
    await eventually(
      async () => {
        const got = await svc.admin.get("/api/webhooks/{id}", {
          params: { path: { id: hook.data.id } },
        });
        return got.ok && got.data.health === "failing";
      },
      "the first delivery fails",
    );
    await signIn(page, svc.baseUrl);
    await section(page, "Webhooks");
    await page.getByText(/^failing \(1 consecutive failure, last error: /)
      .waitFor();
    await page.getByRole("link", { name: target }).click();
    await heading(page, target);
    await accessible(page, "a failing webhook's page");

    answer = 204;
    await page.getByRole("button", { name: "Send a test event" }).click();
    await page.getByRole("status").getByText("Test event queued").waitFor();
    await eventually(
      () => Promise.resolve(delivered.some((m) => m.type === "webhook.test")),
      "the test event arrives",
    );
    await page.getByRole("button", { name: "Retry now" }).click();
    await page.getByRole("status").getByText("being retried now").waitFor();
    await eventually(async () => {
      await page.reload();
      await heading(page, target);
      return await page.getByText("healthy", { exact: true }).count() === 1;
    }, "healthy after the retry");
    await page.getByRole("button", { name: "Refresh" }).click();
    await page.locator("table.list tbody tr").filter({ hasText: "test event" })
      .first().waitFor();
    clean(c);
  },
));
