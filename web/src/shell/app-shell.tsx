import { Outlet } from 'react-router';
import { LiveProvider } from '../live/live';
import { Sidebar } from './sidebar';
import styles from './app-shell.module.css';

/**
 * The signed-in layout, with the business's live stream open: the sidebar beside the page (above it on
 * a phone), and a link past the sidebar.
 */
export function AppShell() {
  return (
    <LiveProvider>
      <div className={styles.shell}>
        <a className="skip-link" href="#main">
          Skip to content
        </a>
        <Sidebar />
        <main id="main" className={styles.main} tabIndex={-1}>
          <Outlet />
        </main>
      </div>
    </LiveProvider>
  );
}
