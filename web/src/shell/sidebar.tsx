import { useRef, useState, type KeyboardEvent } from 'react';
import { Link, matchPath, useLocation, useNavigate } from 'react-router';
import { canManage, useSession, useSignedIn } from '../session/session';
import { BusinessSwitcher } from './business-switcher';
import { Icon, type IconName } from './icons';
import { useUnreadTotal } from './unread-total';
import styles from './sidebar.module.css';

/** A page's link, marked as the current page on its path and, for the inbox, on a conversation's. */
function Item({
  to,
  icon,
  label,
  alsoAt,
  badge,
}: {
  to: string;
  icon?: IconName;
  label: string;
  alsoAt?: string;
  badge?: string;
}) {
  const { pathname } = useLocation();
  const current = matchPath(to, pathname) !== null || (alsoAt !== undefined && matchPath(alsoAt, pathname) !== null);
  return (
    <li>
      <Link
        to={to}
        className={`${styles.link} ${current ? styles.active : ''}`}
        aria-current={current ? 'page' : undefined}
      >
        {icon && <Icon name={icon} />}
        {label}
        {badge && (
          <span className={styles.badge} aria-label={`${badge} unread`}>
            {badge}
          </span>
        )}
      </Link>
    </li>
  );
}

const SETTINGS = [
  { to: '/settings/channels', label: 'Channels' },
  { to: '/settings/templates', label: 'Templates' },
  { to: '/settings/agents', label: 'AI agents' },
  { to: '/settings/team', label: 'Team' },
];

/** The navigation: the pages the user's role may open, the business switcher, who is signed in, sign-out. */
export function Sidebar() {
  const session = useSignedIn();
  const { signOut } = useSession();
  const navigate = useNavigate();
  const [open, setOpen] = useState(false);
  const menuButton = useRef<HTMLButtonElement>(null);
  const manager = canManage(session.user.role);
  const unread = useUnreadTotal();

  // Escape closes the phone's menu and gives the focus back to its button.
  const closeOnEscape = (event: KeyboardEvent) => {
    if (event.key !== 'Escape' || !open) return;
    setOpen(false);
    menuButton.current?.focus();
  };

  const leave = async () => {
    await signOut();
    await navigate('/login', { replace: true });
  };

  return (
    <header className={styles.sidebar}>
      <div className={styles.top}>
        <p className={styles.brand}>
          <span className={styles.logo} aria-hidden="true" />
          <span className={styles.business}>{session.business.name}</span>
        </p>
        <button
          ref={menuButton}
          type="button"
          className={styles.menuButton}
          aria-expanded={open}
          aria-controls="sidebar-menu"
          onClick={() => setOpen(!open)}
        >
          <Icon name="menu" />
          Menu
        </button>
      </div>
      {/* On a phone the menu covers the page: it closes when a page is chosen. */}
      <div id="sidebar-menu" className={styles.menu} data-open={open} onKeyDown={closeOnEscape}>
        <nav aria-label="Main" onClick={(event) => (event.target as Element).closest('a') && setOpen(false)}>
          <ul className={styles.list}>
            <Item to="/" icon="inbox" label="Inbox" alsoAt="/conversations/:conversationId" badge={unread} />
            <Item to="/contacts" icon="contacts" label="Contacts" alsoAt="/contacts/:contactId" />
            {manager && <Item to="/reports" icon="reports" label="Reports" alsoAt="/reports/:report" />}
            {manager && <Item to="/dev-tools" icon="code" label="Dev Tools" />}
          </ul>
          {manager && (
            <>
              <h2 className={styles.group} id="settings-heading">
                <Icon name="settings" />
                Settings
              </h2>
              <ul className={`${styles.list} ${styles.sublist}`} aria-labelledby="settings-heading">
                {SETTINGS.map((item) => (
                  <Item key={item.to} {...item} />
                ))}
              </ul>
            </>
          )}
        </nav>
        <div className={styles.account}>
          {session.businesses.length > 1 && <BusinessSwitcher />}
          <p className={styles.user}>
            <span className={styles.userName}>{session.user.name || session.user.email}</span>
            <span className={styles.userRole}>{session.user.role}</span>
          </p>
          <button type="button" className={`button ${styles.signOut}`} onClick={() => void leave()}>
            <Icon name="signOut" />
            Sign out
          </button>
        </div>
      </div>
    </header>
  );
}
