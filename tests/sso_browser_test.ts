/**
 * Signing in with an identity provider through the console in a real
 * Chromium: an admin adds the provider on its page, then a person signs
 * in with its button through a real OpenID Connect provider (oidc-provider,
 * on another site) and lands in the console signed in; a person without an
 * account lands on the sign-in page with the service's message.
 */
import { assert, assertEquals } from "./support/assert.ts";
import { CHROMIUM_TOOL } from "./support/browser.ts";
import {
  accessible,
  heading,
  openConsole,
  section,
  signIn,
} from "./support/console.ts";
import { withTool } from "./support/conditions.ts";
import { CLIENT_ID, CLIENT_SECRET, startIdp } from "./sso_support.ts";

Deno.test(withTool(
  "a person signs in with their identity provider through the console: the whole redirect dance, and its refusal shown",
  CHROMIUM_TOOL,
  async () => {
    await using c = await openConsole({
      onLocalhost: true,
      // The provider's own pages load its fonts from the internet.
      allowFailed: (url) => !url.startsWith("http://localhost"),
    });
    const { svc, page, origin } = c;
    await using idp = await startIdp(origin);

    // The admin adds the provider on its page.
    await signIn(page, origin);
    await section(page, "Sign-in providers");
    await accessible(page, "the sign-in providers page");
    await page.getByLabel("Name", { exact: true }).fill("Example IdP");
    await page.getByLabel("Issuer URL", { exact: true }).fill(idp.issuer);
    await page.getByLabel("Client id", { exact: true }).fill(CLIENT_ID);
    await page.getByLabel("Client secret", { exact: true }).fill(
      CLIENT_SECRET,
    );
    await page.getByRole("button", { name: "Add provider" }).click();
    await page.getByRole("status").getByText("Example IdP added.").waitFor();
    const { data: providers } = await svc.admin.GET("/api/sso/providers");
    assertEquals(providers?.map((p) => [p.name, p.issuer]), [[
      "Example IdP",
      idp.issuer,
    ]]);
    const id = providers![0].id;
    await page.getByText(`${origin}/api/sso/${id}/callback`).waitFor();
    await page.getByRole("button", { name: "Sign out" }).click();
    await heading(page, "Sign in");

    // Rosa has an account with the e-mail her provider vouches for.
    const rosa = await svc.admin.POST("/api/users", {
      body: {
        username: "rosa",
        name: "Rosa",
        email: "rosa@example.com",
        password: "rosa-password-1",
        role: "admin",
      },
    });
    assert(rosa.data);
    idp.accounts.set("rosa-at-idp", {
      email: "rosa@example.com",
      email_verified: true,
      preferred_username: "rosa",
    });
    await page.reload();
    await heading(page, "Sign in");
    await accessible(page, "the sign-in page with a provider");
    await page.getByRole("link", { name: "Sign in with Example IdP" }).click();
    // The provider's own login and consent pages.
    await page.locator('input[name="login"]').fill("rosa-at-idp");
    await page.locator('input[name="password"]').fill("any");
    await page.getByRole("button", { name: "Sign-in" }).click();
    await page.getByRole("button", { name: "Continue" }).click();
    // Back where the sign-in began (the page the admin signed out on).
    await heading(page, "Sign-in providers");
    assertEquals(new URL(page.url()).hash, "#/sign-in-providers");
    assertEquals(new URL(page.url()).origin, origin);
    const me = await page.evaluate(async () =>
      (await fetch("/api/auth/me")).json()
    );
    assertEquals(me.username, "rosa");

    // Someone the service has no account for: the message on the sign-in page.
    await page.getByRole("button", { name: "Sign out" }).click();
    await heading(page, "Sign in");
    idp.accounts.set("stranger", {
      email: "stranger@example.com",
      email_verified: true,
    });
    await page.context().clearCookies({ domain: "127.0.0.1" });
    await page.getByRole("link", { name: "Sign in with Example IdP" }).click();
    await page.locator('input[name="login"]').fill("stranger");
    await page.locator('input[name="password"]').fill("any");
    await page.getByRole("button", { name: "Sign-in" }).click();
    await page.getByRole("button", { name: "Continue" }).click();
    await heading(page, "Sign in");
    await page.getByRole("alert").getByText("No account for this identity")
      .waitFor();
    // The message is not kept in the address.
    assertEquals(new URL(page.url()).search, "");
    // A made-up message in a link is not shown.
    await page.goto(`${origin}/admin?error=Call%20555-0100%20now`);
    await heading(page, "Sign in");
    assertEquals(await page.getByRole("alert").count(), 0);
  },
));
