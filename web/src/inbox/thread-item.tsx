import type { ThreadEvent, ThreadMessage } from './inbox-types';
import { time } from './inbox-types';
import styles from './inbox.module.css';

const STATUS: Record<string, string> = {
  PENDING: 'Pending',
  SENT: 'Sent',
  DELIVERED: 'Delivered',
  READ: 'Read',
  ERROR: 'Failed',
};

const EVENT_TEXT: Record<string, string> = {
  manual_control_activated: 'took over from the AI',
  manual_control_released: 'handed back to the AI',
  manual_control_locked: 'pinned manual control',
  manual_control_unlocked: 'unpinned manual control',
  conversation_resolved: 'resolved the conversation',
  conversation_archived: 'archived the conversation',
  conversation_unarchived: 'reopened the conversation',
  conversation_transferred: 'transferred the conversation',
  agent_assigned: 'assigned an AI agent',
  agent_switched: 'switched the AI agent',
  agent_removed: 'removed the AI agent',
};

export function EventLine({ event }: { event: ThreadEvent }) {
  const who =
    event.user?.name ?? event.agent?.name ?? (event.actor_type === 'system' ? 'The system' : event.actor_type);
  return (
    <li className={styles.event}>
      <span>
        {who} {EVENT_TEXT[event.type] ?? event.type.replaceAll('_', ' ')}
      </span>{' '}
      <time dateTime={event.created_at}>{time(event.created_at)}</time>
    </li>
  );
}

function Media({ media }: { media: ThreadMessage['media'][number] }) {
  const type = media.content_type ?? '';
  const label = media.filename ?? 'attachment';
  if (type.startsWith('image/')) return <img className={styles.media} src={media.url} alt={label} loading="lazy" />;
  if (type.startsWith('video/')) return <video className={styles.media} src={media.url} controls aria-label={label} />;
  if (type.startsWith('audio/')) return <audio src={media.url} controls aria-label={label} />;
  return (
    <a href={media.url} target="_blank" rel="noreferrer">
      {label}
    </a>
  );
}

export function MessageBubble({ message }: { message: ThreadMessage }) {
  const outbound = message.direction === 'outbound';
  const author =
    message.sender.type === 'contact'
      ? null
      : (message.sender.user?.name ?? message.sender.agent?.name ?? message.sender.type.replace('_', ' '));
  return (
    <li className={`${styles.message} ${outbound ? styles.outbound : styles.inbound}`} data-message-id={message.id}>
      {author && <span className={styles.author}>{author}</span>}
      {message.forwarded && <span className={styles.note}>Forwarded</span>}
      {message.reply_to && (
        <blockquote className={styles.quote}>
          <span className={styles.note}>Reply to</span>{' '}
          {message.reply_to.text ?? `[${message.reply_to.type ?? 'message'}]`}
        </blockquote>
      )}
      {message.media.map((media, index) => (
        <Media key={media.id ?? index} media={media} />
      ))}
      {message.location && (
        <p>
          Location:{' '}
          <a
            href={`https://www.openstreetmap.org/?mlat=${message.location.latitude}&mlon=${message.location.longitude}`}
            target="_blank"
            rel="noreferrer"
          >
            {message.location.name ?? `${message.location.latitude}, ${message.location.longitude}`}
          </a>
          {message.location.address && <> · {message.location.address}</>}
        </p>
      )}
      {message.contacts.map((card, index) => (
        <p key={index} className={styles.card}>
          Contact: {card.formatted_name ?? [card.first_name, card.last_name].filter(Boolean).join(' ')}
          {card.phones.map((phone) => ` · ${phone.phone}`)}
          {card.emails.map((email) => ` · ${email.email}`)}
        </p>
      ))}
      {message.choice && <p>Chose: {message.choice.title}</p>}
      {message.reaction && <p>Reacted {message.reaction.emoji ?? '(removed)'}</p>}
      {message.text && <p className={styles.text}>{message.text}</p>}
      {!message.text &&
        message.media.length === 0 &&
        !message.location &&
        message.contacts.length === 0 &&
        !message.choice &&
        !message.reaction && <p className={styles.note}>[{message.type}]</p>}
      <span className={styles.status}>
        <time dateTime={message.created_at}>{time(message.created_at)}</time>
        {outbound && <> · {STATUS[message.status] ?? message.status}</>}
        {message.status === 'ERROR' && message.error && <span className={styles.failure}> · {message.error}</span>}
      </span>
    </li>
  );
}
