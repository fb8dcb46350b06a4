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

const placeholder = (title: string, description: string) => ({
  lazy: async () => {
    const { PlaceholderPage } = await import('./pages/placeholder-page');
    return { Component: () => <PlaceholderPage title={title} description={description} /> };
  },
});

const router = createBrowserRouter(
  [
    { path: '/login', element: <LoginPage />, errorElement: <RouteErrorPage /> },
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
        {
          element: <RequireManager />,
          children: [
            {
              path: 'dev-tools',
              lazy: async () => ({ Component: (await import('./pages/dev-tools-page')).DevToolsPage }),
            },
            { path: 'settings/channels', ...placeholder('Channels', 'The accounts your business is reached on.') },
            { path: 'settings/templates', ...placeholder('Templates', 'Approved messages to start a conversation.') },
            { path: 'settings/agents', ...placeholder('AI agents', 'Agents that answer on your behalf.') },
            { path: 'settings/team', ...placeholder('Team', 'The people who use this dashboard.') },
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
