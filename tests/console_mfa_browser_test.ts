/**
 * The console's second factors and imports, as a person uses them in
 * Chromium: setting up an authenticator app from the service's QR code and
 * passkeys (Chromium's virtual authenticator), signing in with either or a
 * recovery code, stepping up before a dangerous action, the enrolment the
 * MFA_REQUIRED_FOR_ADMINS policy asks for, an admin's reset of another
 * user's factors, and importing users from a file. Every change is checked
 * through the API afterwards; TOTP codes come from otpauth, as an
 * authenticator app makes them.
 */
import { Buffer } from "node:buffer";
import type { Page } from "playwright-core";
import { assert, assertEquals, assertMatch } from "./support/assert.ts";
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
} from "./support/console.ts";
import { withTool } from "./support/conditions.ts";
import { ndjson, person } from "./support/imports.ts";
import type { TestService } from "./support/service.ts";
import {
  ageSecondFactor,
  codeAt,
  enrolTotp,
  freshCode,
  records,
} from "./mfa_support.ts";

/** The factors the API has for the user. */
async function factorsOf(svc: TestService, id: number) {
  const detail = await svc.admin.get("/api/users/{id}", {
    params: { path: { id } },
  });
  assert(detail.ok, `GET /api/users/${id}`);
  return detail.data.mfa;
}

/** Opens "My second factors" from the link beside the person's name. */
async function myFactors(page: Page) {
  await page.getByRole("link", { name: "My second factors" }).click();
  await heading(page, "My second factors");
}

/** The recovery codes the page shows once, then dismisses them. */
async function takeRecoveryCodes(page: Page) {
  const box = page.getByRole("textbox", { name: "Recovery codes" });
  const codes = (await box.inputValue()).split("\n");
  await page.getByRole("button", { name: "Done" }).click();
  assertEquals(await box.count(), 0, "the codes are shown once");
  return codes;
}

/** Sets up an authenticator app on the open factors page: its secret. */
async function setUpApp(page: Page) {
  await page.getByRole("button", { name: "Set up an authenticator app" })
    .click();
  const secret = await page.locator("code.totp-secret").textContent() ?? "";
  assertMatch(secret, /^[A-Z2-7]{16,}$/);
  return secret;
}

const signOut = async (page: Page) => {
  await page.getByRole("button", { name: "Sign out" }).click();
  await heading(page, "Sign in");
};

Deno.test(withTool(
  "an authenticator app is set up from the service's QR code (a wrong code: Invalid code) with ten recovery codes shown once; signing in then asks for a code or a recovery code (used once), and new codes and removing the app step up first",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page, origin } = c;
    const adminId = svc.adminAccount.id;
    await signIn(page, origin);
    await myFactors(page);
    await page.getByText("No authenticator app.").waitFor();
    await accessible(page, "my second factors");

    const secret = await setUpApp(page);
    const qr = page.getByRole("img", {
      name: "QR code of the authenticator app's secret",
    });
    assertMatch(await qr.getAttribute("src") ?? "", /^data:image\/svg\+xml/);
    assert(
      await qr.evaluate((img) =>
        (img as unknown as { naturalWidth: number }).naturalWidth > 0
      ),
      "the QR code is drawn, under the page's CSP",
    );
    const link = await page.getByRole("link", { name: "open it in the app" })
      .getAttribute("href");
    assertEquals(
      new URL(link ?? "").searchParams.get("secret"),
      secret,
      "the secret shown is the one the QR code holds",
    );
    await accessible(page, "an authenticator app being set up");
    await shot(page, "totp");
    const appCode = page.getByLabel("Code from the app", { exact: true });
    await appCode.fill(codeAt(secret, 5));
    await page.getByRole("button", { name: "Confirm" }).click();
    await page.getByRole("alert").getByText("Invalid code").waitFor();
    await appCode.fill(codeAt(secret));
    await page.getByRole("button", { name: "Confirm" }).click();
    await page.getByRole("status").getByText("Authenticator app set up.")
      .waitFor();
    const codes = await takeRecoveryCodes(page);
    assertEquals(codes.length, 10);
    const enrolled = await factorsOf(svc, adminId);
    assert(enrolled.totp !== null, "the API has the app");
    assertEquals(enrolled.recoveryCodesLeft, 10);
    await page.getByText("10 of 10 left.").waitFor();

    // Signing in: the password, then a code (a wrong one first).
    await signOut(page);
    await enterPassword(page, origin);
    await heading(page, "Second factor");
    await accessible(page, "the second step of signing in");
    await shot(page, "second-factor");
    const code = page.getByLabel("Code", { exact: true });
    await code.fill(codeAt(secret, 5));
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("Invalid code").waitFor();
    await code.fill(await freshCode(svc, adminId, secret));
    await page.getByRole("button", { name: "Sign in" }).click();
    await heading(page, "Overview");
    assertEquals(
      (await records(svc, "login.succeeded", adminId)).at(-1)?.details,
      { methods: ["password", "totp"] },
    );

    // A recovery code stands in once.
    await signOut(page);
    await enterPassword(page, origin);
    await code.fill(codes[0]);
    await page.getByRole("button", { name: "Sign in" }).click();
    await heading(page, "Overview");
    assertEquals((await factorsOf(svc, adminId)).recoveryCodesLeft, 9);
    await signOut(page);
    await enterPassword(page, origin);
    await code.fill(codes[0]);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("alert").getByText("Invalid code").waitFor();
    await code.fill(await freshCode(svc, adminId, secret));
    await page.getByRole("button", { name: "Sign in" }).click();
    await heading(page, "Overview");

    // New codes need a recent factor: the step-up asks (Escape declines it,
    // and the API's 403 stays), then takes a code from the keyboard.
    await ageSecondFactor(svc, adminId);
    await myFactors(page);
    const renew = async () => {
      await page.getByRole("button", { name: "New recovery codes" }).click();
      await page.getByRole("button", { name: "Yes, new recovery codes" })
        .click();
    };
    const dialog = page.getByRole("dialog", { name: "Confirm it is you" });
    await renew();
    await dialog.waitFor();
    await page.keyboard.press("Escape");
    await page.getByRole("alert").getByText("Recent second factor required")
      .waitFor();
    await renew();
    await dialog.waitFor();
    await accessible(page, "the step-up");
    await page.keyboard.type(codeAt(secret, 5));
    await page.keyboard.press("Enter");
    await dialog.getByRole("alert").getByText("Invalid code").waitFor();
    await shot(page, "step-up");
    await page.keyboard.type(await freshCode(svc, adminId, secret));
    await page.keyboard.press("Enter");
    await dialog.waitFor({ state: "hidden" });
    const renewed = await takeRecoveryCodes(page);
    assertEquals(renewed.length, 10);
    assert(!renewed.includes(codes[1]), "new codes");
    assertEquals((await factorsOf(svc, adminId)).recoveryCodesLeft, 10);
    assertEquals((await records(svc, "mfa.recovery_codes", adminId)).length, 1);

    // Removed, with the factor just given.
    await page.getByRole("button", { name: "Remove authenticator app" })
      .click();
    await page.getByRole("button", { name: "Yes, remove authenticator app" })
      .click();
    await page.getByRole("status").getByText("Authenticator app removed.")
      .waitFor();
    await page.getByText("No authenticator app.").waitFor();
    const removed = await factorsOf(svc, adminId);
    assertEquals([removed.totp, removed.recoveryCodesLeft], [null, 0]);
    clean(c);
  },
));

Deno.test(withTool(
  "a passkey is added (the same authenticator twice is refused), signs in and steps up before an admin resets another user's factors, and is removed",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole({ passkeys: true });
    const { svc, page, origin } = c;
    const adminId = svc.adminAccount.id;
    const erin = await svc.userClient("admin", { username: "erin" });
    await enrolTotp(erin.client);

    await signIn(page, origin);
    await myFactors(page);
    await page.getByText("No passkeys.").waitFor();
    await page.getByLabel("Passkey name", { exact: true }).fill("Work laptop");
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByRole("status").getByText("Passkey Work laptop added.")
      .waitFor();
    // The first factor: its recovery codes come with it.
    assertEquals((await takeRecoveryCodes(page)).length, 10);
    const added = await factorsOf(svc, adminId);
    assertEquals(added.passkeys.map((p) => p.name), ["Work laptop"]);
    assertEquals(added.recoveryCodesLeft, 10);
    await page.getByRole("button", { name: "Add a passkey" }).click();
    await page.getByRole("alert").getByText(
      "This authenticator holds one of your passkeys already.",
    ).waitFor();
    assertEquals((await factorsOf(svc, adminId)).passkeys.length, 1);
    await accessible(page, "my second factors with a passkey");
    await shot(page, "factors");

    await signOut(page);
    await enterPassword(page, origin);
    await heading(page, "Second factor");
    await page.getByRole("button", { name: "Use a passkey" }).click();
    await heading(page, "Overview");
    assertEquals(
      (await records(svc, "login.succeeded", adminId)).at(-1)?.details,
      { methods: ["password", "passkey"] },
    );

    // Erin lost her phone: her factors are reset from her page, after a
    // step-up with the passkey.
    await page.goto(`${origin}/admin#/users/${erin.account.id}`);
    await heading(page, erin.account.name);
    await page.getByRole("tab", { name: "Security" }).click();
    const factors = page.locator("section", {
      has: page.getByRole("heading", { name: "Second factors" }),
    });
    await factors.getByText("10 left").waitFor();
    await accessible(page, "a user's page with factors");
    await ageSecondFactor(svc, adminId);
    await factors.getByRole("button", { name: "Reset second factors" }).click();
    await factors.getByRole("button", { name: "Yes, reset second factors" })
      .click();
    const dialog = page.getByRole("dialog", { name: "Confirm it is you" });
    await dialog.getByRole("button", { name: "Use a passkey" }).click();
    await page.getByRole("status").getByText("Second factors reset.").waitFor();
    await factors.getByText("No second factor.").waitFor();
    const reset = await factorsOf(svc, erin.account.id);
    assertEquals(reset, { totp: null, passkeys: [], recoveryCodesLeft: 0 });
    assertEquals((await erin.client.me()).status, 401, "her sessions ended");
    assertEquals((await records(svc, "mfa.reset", erin.account.id)).length, 1);
    const stepped = await factorsOf(svc, adminId);
    assert(stepped.passkeys[0].lastUsedAt !== null);

    // Removed (the step-up was just now).
    await myFactors(page);
    await page.getByRole("button", { name: "Remove", exact: true }).click();
    await page.getByRole("button", { name: "Yes, remove" }).click();
    await page.getByRole("status").getByText("Passkey Work laptop removed.")
      .waitFor();
    await page.getByText("No passkeys.").waitFor();
    assertEquals((await factorsOf(svc, adminId)).passkeys, []);
    clean(c);
  },
));

Deno.test(withTool(
  "under MFA_REQUIRED_FOR_ADMINS an admin without a factor is led to set one up, then uses the console",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole({
      env: { MFA_REQUIRED_FOR_ADMINS: "true" },
    });
    const { svc, page, origin } = c;
    await enterPassword(page, origin);
    await heading(page, "My second factors");
    await page.getByRole("alert").getByText(
      "Second factor enrollment required",
    ).waitFor();
    await accessible(page, "the enrolment the policy asks for");
    const secret = await setUpApp(page);
    await page.getByLabel("Code from the app", { exact: true }).fill(
      codeAt(secret),
    );
    await page.getByRole("button", { name: "Confirm" }).click();
    await page.getByRole("textbox", { name: "Recovery codes" }).waitFor();
    await page.getByText("Second factor enrollment required").waitFor({
      state: "detached",
    });
    await page.getByRole("link", { name: "Go on to the users" }).click();
    await heading(page, "Users");
    await page.getByRole("link", { name: "admin", exact: true }).waitFor();
    // The harness's own session has no factor: the policy holds it, but
    // not the listing of its own factors.
    const mine = await svc.admin.get("/api/auth/mfa");
    assert(mine.ok);
    assert(mine.data.totp !== null, "the API has the app");
    clean(c);
  },
));

Deno.test(withTool(
  "at 390 pixels the second step of signing in is used with the keyboard alone, and the sixth code in the window shows the API's 429 with its wait",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole({ width: 390 });
    const { svc, page, origin } = c;
    const ops = await svc.userClient("admin", { password: "ops-password" });
    const { secret } = await enrolTotp(ops.client);
    const credentials = {
      username: ops.account.username,
      password: "ops-password",
    };
    await enterPassword(page, origin, credentials);
    await heading(page, "Second factor");
    assertEquals(await overflow(page), 0, "no horizontal scroll");
    await accessible(page, "the second step at 390 px");

    const focused = () =>
      page.evaluate(() =>
        (globalThis as unknown as {
          document: { activeElement: { id: string } | null };
        }).document.activeElement?.id
      );
    for (let i = 0; i < 10 && await focused() !== "signin-code"; i++) {
      await page.keyboard.press("Tab");
    }
    assertEquals(await focused(), "signin-code");
    /** Types a code and presses Enter: the API's answer's status. */
    const send = async (value: string) => {
      await page.keyboard.type(value);
      const [answer] = await Promise.all([
        page.waitForResponse((r) =>
          r.url().endsWith("/api/auth/login/second-factor")
        ),
        page.keyboard.press("Enter"),
      ]);
      return answer.status();
    };
    for (let i = 0; i < 5; i++) {
      assertEquals(await send(codeAt(secret, 5 + i)), 401);
      await page.getByRole("alert").getByText("Invalid code").waitFor();
      assertEquals(await focused(), "signin-code", "the code again, at once");
    }
    assertEquals(
      await send(await freshCode(svc, ops.account.id, secret)),
      429,
    );
    const throttled = page.getByRole("alert").filter({
      hasText: "Too many login attempts",
    });
    await throttled.waitFor();
    assertMatch(await throttled.textContent() ?? "", /Try again in \d+ s\./);
    assertEquals(await overflow(page), 0, "no horizontal scroll");
    clean(c);
  },
));

/** Chooses a file from "disk" for the upload form. */
const choose = (page: Page, name: string, text: string, mimeType = "") =>
  page.getByLabel("File", { exact: true }).setInputFiles({
    name,
    mimeType,
    buffer: Buffer.from(text),
  });

/** The job page's import id, from the address. */
const jobId = (page: Page) => Number(new URL(page.url()).hash.split("/")[2]);

Deno.test(withTool(
  "imports: a file's type follows it (another: 415), a dry run writes nothing, a CSV's refused lines show as the API has them, a running import is cancelled, and the recent ones are listed",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole();
    const { svc, page, origin } = c;
    await signIn(page, origin);
    await section(page, "Imports");
    await page.getByText("No imports yet.").waitFor();
    await accessible(page, "the imports page");

    await choose(page, "people.txt", "ann\n", "text/plain");
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await page.getByRole("alert").getByText(
      "Import must be application/x-ndjson or text/csv",
    ).waitFor();

    // NDJSON (browsers name no type for it), as a dry run.
    await choose(page, "people.ndjson", ndjson([person("ann"), person("bob")]));
    await page.getByLabel(/Dry run/).check();
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await heading(page, /^Import \d+$/);
    await page.getByText("Ended: finished").waitFor();
    const dry = await svc.admin.get("/api/imports/{id}", {
      params: { path: { id: jobId(page) } },
    });
    assert(dry.ok);
    assertEquals([dry.data.status, dry.data.total], ["finished", 2]);
    const none = await svc.admin.findByUsername("ann");
    assert(none.ok);
    assertEquals(none.data, null, "a dry run writes nothing");

    // CSV: one new user, one refused line, one taken name skipped.
    await section(page, "Imports");
    await choose(
      page,
      "people.csv",
      "username,name,email\n" +
        "ann,Ann,ann@example.com\n" +
        "bob,Bob,not-an-address\n" +
        "admin,Someone,someone@example.com\n",
      "text/csv",
    );
    await page.getByLabel("When a username or e-mail is taken", {
      exact: true,
    }).selectOption("skip");
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await page.getByText("Ended: finished").waitFor();
    const id = jobId(page);
    const errors = page.locator("table.errors tbody tr");
    await errors.first().waitFor();
    const shown = await errors.evaluateAll((trs) =>
      trs.map((tr) =>
        Array.from(
          (tr as unknown as {
            querySelectorAll(s: string): { textContent: string }[];
          }).querySelectorAll("td"),
          (td) => td.textContent,
        )
      )
    );
    assertEquals(shown, [["3", "Email must be a valid address"]]);
    const listed = await svc.admin.get("/api/imports/{id}/errors", {
      params: { path: { id } },
    });
    assert(listed.ok);
    assertEquals(shown, listed.data.map((e) => [String(e.line), e.error]));
    const job = await svc.admin.get("/api/imports/{id}", {
      params: { path: { id } },
    });
    assert(job.ok);
    assertEquals(
      [job.data.created, job.data.skipped, job.data.failed],
      [1, 1, 1],
    );
    const ann = await svc.admin.findByUsername("ann");
    assert(ann.ok && ann.data, "ann was created");
    await accessible(page, "an import's page");
    await shot(page, "import");

    // A long one (plain passwords: bcrypt-bound), stopped while it runs.
    await section(page, "Imports");
    await choose(
      page,
      "many.ndjson",
      ndjson(Array.from(
        { length: 20_000 },
        (_, i) => person(`many${i}`, { password: `many-password-${i}` }),
      )),
    );
    await page.getByRole("button", { name: "Import", exact: true }).click();
    await heading(page, /^Import \d+$/);
    const long = jobId(page);
    await page.getByRole("button", { name: "Cancel import" }).click();
    await page.getByRole("button", { name: "Yes, cancel import" }).click();
    await page.getByText("Ended: cancelled").waitFor();
    const cancelled = await svc.admin.get("/api/imports/{id}", {
      params: { path: { id: long } },
    });
    assert(cancelled.ok);
    assertEquals(cancelled.data.status, "cancelled");
    assert(cancelled.data.created < 20_000, "stopped before its end");

    // The recent ones, newest first, each with its status.
    await section(page, "Imports");
    const recent = page.locator("table.list tbody tr");
    // The list comes from the audit trail, which has them once sealed.
    await eventually(async () => {
      if (await recent.count() === 3) return true;
      await page.getByRole("button", { name: "Refresh" }).click();
      return false;
    }, "3 imports");
    assertEquals(
      await recent.locator("td:first-child a").allTextContents(),
      [`Import ${long}`, `Import ${id}`, `Import ${dry.data.id}`],
    );
    assertEquals(
      await recent.locator("td:nth-child(4)").allTextContents(),
      ["cancelled", "finished", "finished"],
    );
    await accessible(page, "the imports page with imports");
    await shot(page, "imports");
    clean(c);
  },
));
