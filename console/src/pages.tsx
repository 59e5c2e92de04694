/**
 * Every page of the console: where it lives (a hash path), its title, and
 * whether the top navigation names it. A new section is one entry here.
 */
import type { VNode } from "preact";
import type { Account } from "../../clients/mod.ts";
import type { Permission } from "./access.ts";
import { AccountPage } from "./pages/account.tsx";
import { AuditTrail } from "./pages/audit.tsx";
import { CreateUser } from "./pages/create-user.tsx";
import { Factors } from "./pages/factors.tsx";
import { GroupPage } from "./pages/group.tsx";
import { Groups } from "./pages/groups.tsx";
import { ImportPage } from "./pages/import.tsx";
import { OverviewPage } from "./pages/overview.tsx";
import { Imports } from "./pages/imports.tsx";
import { Roles } from "./pages/roles.tsx";
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
  /** `/users/:id`; the first that matches wins (an empty hash is `/overview`). */
  pattern: string;
  title: string;
  /** The navigation entry it highlights. */
  section: string;
  /** Its label in the top navigation, for a section's own page. */
  nav?: string;
  /** What the person must hold to see it (none: anyone signed in). */
  permission?: Permission;
  render(props: PageProps): VNode;
}

export const PAGES: Page[] = [
  {
    pattern: "/overview",
    permission: "users:read",
    title: "Overview",
    section: "overview",
    nav: "Overview",
    render: () => <OverviewPage />,
  },
  {
    pattern: "/users",
    permission: "users:read",
    title: "Users",
    section: "users",
    nav: "Users",
    render: ({ query, me }) => <Users query={query} me={me} />,
  },
  {
    pattern: "/users/new",
    permission: "users:create",
    title: "New user",
    section: "users",
    render: () => <CreateUser />,
  },
  {
    pattern: "/users/:id",
    permission: "users:read",
    title: "User",
    section: "users",
    render: ({ params, me }) => <UserPage id={params.id} me={me} />,
  },
  {
    pattern: "/audit",
    permission: "audit:read",
    title: "Audit trail",
    section: "audit",
    nav: "Audit trail",
    render: ({ query }) => <AuditTrail query={query} />,
  },
  {
    pattern: "/webhooks",
    permission: "webhooks:manage",
    title: "Webhooks",
    section: "webhooks",
    nav: "Webhooks",
    render: () => <Webhooks />,
  },
  {
    pattern: "/webhooks/:id",
    permission: "webhooks:manage",
    title: "Webhook",
    section: "webhooks",
    render: ({ params }) => <WebhookPage id={params.id} />,
  },
  {
    pattern: "/provisioning",
    permission: "scim:manage",
    title: "Provisioning",
    section: "provisioning",
    nav: "Provisioning",
    render: () => <ScimConnections />,
  },
  {
    pattern: "/sign-in-providers",
    permission: "sso:manage",
    title: "Sign-in providers",
    section: "sign-in-providers",
    nav: "Sign-in providers",
    render: () => <SsoProviders />,
  },
  {
    pattern: "/imports",
    permission: "users:import",
    title: "Imports",
    section: "imports",
    nav: "Imports",
    render: () => <Imports />,
  },
  {
    pattern: "/imports/:id",
    permission: "users:import",
    title: "Import",
    section: "imports",
    render: ({ params }) => <ImportPage id={params.id} />,
  },
  {
    pattern: "/roles",
    permission: "roles:manage",
    title: "Roles",
    section: "roles",
    nav: "Roles",
    render: () => <Roles />,
  },
  {
    pattern: "/groups",
    permission: "roles:manage",
    title: "Groups",
    section: "groups",
    nav: "Groups",
    render: () => <Groups />,
  },
  {
    pattern: "/groups/:id",
    permission: "roles:manage",
    title: "Group",
    section: "groups",
    render: ({ params }) => <GroupPage id={params.id} />,
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
