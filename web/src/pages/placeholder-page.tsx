import { useDocumentTitle } from '../shell/document-title';
import styles from './page.module.css';

/** A page of the dashboard whose content is not built yet: it says so rather than showing nothing. */
export function PlaceholderPage({ title, description }: { title: string; description: string }) {
  useDocumentTitle(title);
  return (
    <div className={styles.page}>
      <h1>{title}</h1>
      <p className={styles.lead}>{description}</p>
      <p className={styles.notice}>This page is not available yet.</p>
    </div>
  );
}
