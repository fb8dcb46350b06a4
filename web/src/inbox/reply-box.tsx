import { useEffect, useState, type FormEvent, type KeyboardEvent } from 'react';
import { api, errorMessage } from '../api/client';
import { newKey, type Compose } from './inbox-types';
import { useTypingSender } from './use-typing';
import styles from './inbox.module.css';

/**
 * The reply box: text while the 24-hour window is open (Enter sends, Shift+Enter is a new line), else
 * the channel's templates with their variables.
 */
export function ReplyBox({ conversationId, onSent }: { conversationId: string; onSent: () => void }) {
  const [compose, setCompose] = useState<Compose | undefined>();
  const [text, setText] = useState('');
  const [templateId, setTemplateId] = useState('');
  const [variables, setVariables] = useState<Record<string, string>>({});
  const [sending, setSending] = useState(false);
  const [error, setError] = useState('');
  const typing = useTypingSender(conversationId);

  const loadCompose = () =>
    api
      .GET('/dashboard/api/conversations/{id}/compose', { params: { path: { id: conversationId } } })
      .then(({ data }) => data && setCompose(data));

  useEffect(() => {
    void loadCompose();
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [conversationId]);

  const template = compose?.templates.find((t) => t.id === templateId);
  const windowOpen = compose?.window_open ?? true;

  const send = async (event?: FormEvent) => {
    event?.preventDefault();
    if (sending) return;
    const body = windowOpen ? { text: text.trim() } : { template_id: templateId, variables };
    if (windowOpen ? !text.trim() : !templateId) return;
    setSending(true);
    setError('');
    typing.stop();
    const {
      data,
      error: failure,
      response,
    } = await api.POST('/dashboard/api/conversations/{id}/messages', {
      params: { path: { id: conversationId } },
      body,
      headers: { 'idempotency-key': newKey() },
    });
    setSending(false);
    if (data) {
      setText('');
      setVariables({});
      onSent();
      return;
    }
    // The window closed since the page read it: show the templates.
    if (failure?.error?.code === 'template_required') await loadCompose();
    setError(errorMessage(failure, response));
  };

  const keys = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void send();
    }
  };

  return (
    <form className={styles.reply} onSubmit={(event) => void send(event)}>
      {error && (
        <p role="alert" className={styles.error}>
          Not sent: {error}.
        </p>
      )}
      {windowOpen ? (
        <label className={styles.replyField}>
          <span className="visually-hidden">Message</span>
          <textarea
            rows={2}
            value={text}
            placeholder="Write a reply… (Enter sends, Shift+Enter for a new line)"
            onChange={(event) => {
              setText(event.target.value);
              typing.typed();
            }}
            onKeyDown={keys}
          />
        </label>
      ) : (
        <fieldset className={styles.templates}>
          <legend>The 24-hour window is closed: send a template</legend>
          <label className="field">
            <span className="field-label">Template</span>
            <select value={templateId} onChange={(event) => setTemplateId(event.target.value)}>
              <option value="">Choose a template</option>
              {compose?.templates.map((t) => (
                <option key={t.id} value={t.id}>
                  {t.name} ({t.language})
                </option>
              ))}
            </select>
          </label>
          {template && <p className={styles.note}>{template.body}</p>}
          {template?.variables.map((name) => (
            <label key={name} className="field">
              <span className="field-label">Variable {name}</span>
              <input
                value={variables[name] ?? ''}
                onChange={(event) => setVariables({ ...variables, [name]: event.target.value })}
              />
            </label>
          ))}
        </fieldset>
      )}
      <button type="submit" className="button button-primary" disabled={sending}>
        Send
      </button>
    </form>
  );
}
