import { Link } from 'react-router';
import { useDocumentTitle } from '../shell/document-title';
import styles from './page.module.css';

export function NotFoundPage() {
  useDocumentTitle('Page not found');
  return (
    <div className={styles.page}>
      <h1>Page not found</h1>
      <p className={styles.lead}>There is no page at this address.</p>
      <Link to="/">Go to the inbox</Link>
    </div>
  );
}

export function ForbiddenPage() {
  useDocumentTitle('No access');
  return (
    <div className={styles.page}>
      <h1>No access</h1>
      <p className={styles.lead}>Only admins and owners can open this page.</p>
      <Link to="/">Go to the inbox</Link>
    </div>
  );
}

/** What a page that failed to render or load shows instead of a blank screen. */
export function RouteErrorPage() {
  useDocumentTitle('Something went wrong');
  return (
    <main className={styles.page}>
      <h1>Something went wrong</h1>
      <p className={styles.lead}>The page could not be shown. Reload to try again.</p>
      <a href={window.location.href}>Reload</a>
    </main>
  );
}
