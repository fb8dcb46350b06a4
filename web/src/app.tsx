// The dashboard's pages and their paths (under /dashboard): the sign-in page, and the signed-in shell
// with one route per page. Pages other than the inbox load when first opened, which keeps the first
// load small.
import { createBrowserRouter, Navigate, Outlet, RouterProvider, useLocation } from 'react-router';
import { LoginPage } from './pages/login-page';
import { InboxPage } from './pages/inbox-page';
import { ForbiddenPage, NotFoundPage, RouteErrorPage } from './pages/status-pages';
import { canManage, SessionProvider, useSession } from './session/session';
import { AppShell } from './shell/app-shell';
import { Loading } from './shell/loading';

/** The signed-in part: a visitor without a session goes to the sign-in page, and comes back after it. */
function RequireSession() {
  const { session } = useSession();
  const location = useLocation();
  if (session === undefined) return <Loading />;
  if (session === null) return <Navigate to="/login" replace state={{ from: location }} />;
  return <AppShell />;
}

/** Pages for admins and owners; an agent who opens one by its address is told so. */
function RequireManager() {
  const { session } = useSession();
  return session && canManage(session.user.role) ? <Outlet /> : <ForbiddenPage />;
}

/** The settings pages, loaded together when the first of them opens. */
const settingsPage = (name: keyof typeof import('./pages/settings/settings-pages')) => async () => {
  const pages = await import('./pages/settings/settings-pages');
  return { Component: pages[name] };
};

/** The reports page, with its charts, loaded when first opened. */
const reportsPage = async () => ({ Component: (await import('./pages/reports/reports-page')).ReportsPage });

const router = createBrowserRouter(
  [
    { path: '/login', element: <LoginPage />, errorElement: <RouteErrorPage /> },
    {
      path: '/invitations/:token',
      errorElement: <RouteErrorPage />,
      hydrateFallbackElement: <Loading />,
      lazy: async () => ({ Component: (await import('./pages/invitation-page')).InvitationPage }),
    },
    {
      element: <RequireSession />,
      errorElement: <RouteErrorPage />,
      // What shows while a page opened by its address loads its code.
      hydrateFallbackElement: <Loading />,
      children: [
        { index: true, element: <InboxPage /> },
        { path: 'conversations/:conversationId', element: <InboxPage /> },
        {
          path: 'contacts',
          lazy: async () => ({ Component: (await import('./pages/contacts-page')).ContactsPage }),
        },
        {
          path: 'contacts/:contactId',
          lazy: async () => ({ Component: (await import('./pages/contact-page')).ContactPage }),
        },
        // Every signed-in user may open the reports page; the service answers 403 to those it does not
        // let read them, which the page says.
        { path: 'reports', lazy: reportsPage },
        { path: 'reports/:report', lazy: reportsPage },
        {
          element: <RequireManager />,
          children: [
            {
              path: 'dev-tools',
              lazy: async () => ({ Component: (await import('./pages/dev-tools-page')).DevToolsPage }),
            },
            { path: 'settings/channels', lazy: settingsPage('ChannelsPage') },
            { path: 'settings/templates', lazy: settingsPage('TemplatesPage') },
            { path: 'settings/agents', lazy: settingsPage('AgentsPage') },
            { path: 'settings/team', lazy: settingsPage('TeamPage') },
          ],
        },
        { path: '*', element: <NotFoundPage /> },
      ],
    },
  ],
  { basename: '/dashboard' },
);

export function App() {
  return (
    <SessionProvider>
      <RouterProvider router={router} />
    </SessionProvider>
  );
}
