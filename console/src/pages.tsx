/**
 * Every page of the console: where it lives (a hash path), its title, and
 * whether the top navigation names it. A new section is one entry here.
 */
import type { VNode } from "preact";
import type { Account } from "../../clients/mod.ts";
import { AccountPage } from "./pages/account.tsx";
import { AuditTrail } from "./pages/audit.tsx";
import { CreateUser } from "./pages/create-user.tsx";
import { Factors } from "./pages/factors.tsx";
import { ImportPage } from "./pages/import.tsx";
import { Imports } from "./pages/imports.tsx";
import { ScimConnections } from "./pages/scim.tsx";
import { SsoProviders } from "./pages/sso.tsx";
import { UserPage } from "./pages/user.tsx";
import { Users } from "./pages/users.tsx";
import { WebhookPage, Webhooks } from "./pages/webhooks.tsx";
import { href } from "./router.ts";
import { Title } from "./ui.tsx";

/** The signed-in person's own factors, linked beside their name. */
export const FACTORS_PATH = "/factors";

/** The signed-in person's own account, linked from their name. */
export const ACCOUNT_PATH = "/account";

export interface PageProps {
  params: Record<string, string>;
  query: URLSearchParams;
  me: Account;
}

export interface Page {
  /** `/users/:id`; the first that matches wins (an empty hash is `/users`). */
  pattern: string;
  title: string;
  /** The navigation entry it highlights. */
  section: string;
  /** Its label in the top navigation, for a section's own page. */
  nav?: string;
  render(props: PageProps): VNode;
}

export const PAGES: Page[] = [
  {
    pattern: "/users",
    title: "Users",
    section: "users",
    nav: "Users",
    render: ({ query }) => <Users query={query} />,
  },
  {
    pattern: "/users/new",
    title: "New user",
    section: "users",
    render: () => <CreateUser />,
  },
  {
    pattern: "/users/:id",
    title: "User",
    section: "users",
    render: ({ params, me }) => <UserPage id={params.id} me={me} />,
  },
  {
    pattern: "/audit",
    title: "Audit trail",
    section: "audit",
    nav: "Audit trail",
    render: ({ query }) => <AuditTrail query={query} />,
  },
  {
    pattern: "/webhooks",
    title: "Webhooks",
    section: "webhooks",
    nav: "Webhooks",
    render: () => <Webhooks />,
  },
  {
    pattern: "/webhooks/:id",
    title: "Webhook",
    section: "webhooks",
    render: ({ params }) => <WebhookPage id={params.id} />,
  },
  {
    pattern: "/provisioning",
    title: "Provisioning",
    section: "provisioning",
    nav: "Provisioning",
    render: () => <ScimConnections />,
  },
  {
    pattern: "/sign-in-providers",
    title: "Sign-in providers",
    section: "sign-in-providers",
    nav: "Sign-in providers",
    render: () => <SsoProviders />,
  },
  {
    pattern: "/imports",
    title: "Imports",
    section: "imports",
    nav: "Imports",
    render: () => <Imports />,
  },
  {
    pattern: "/imports/:id",
    title: "Import",
    section: "imports",
    render: ({ params }) => <ImportPage id={params.id} />,
  },
  {
    pattern: FACTORS_PATH,
    title: "My second factors",
    section: "factors",
    render: ({ query }) => <Factors query={query} />,
  },
  {
    pattern: ACCOUNT_PATH,
    title: "My account",
    section: "account",
    render: ({ me }) => <AccountPage me={me} />,
  },
];

/** What an address no page matches shows (an unknown path, a malformed one). */
export const NOT_FOUND: Page = {
  pattern: "",
  title: "Page not found",
  section: "",
  render: () => (
    <>
      <Title>Page not found</Title>
      <p>No page of the console is at this address.</p>
      <p>
        <a href={href("/users")}>Back to users</a>
      </p>
    </>
  ),
};
