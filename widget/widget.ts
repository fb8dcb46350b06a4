// The website widget: one script tag adds a chat launcher to any site. It talks to the service's
// widget routes (/widget/v1/<data-channel>/...) with the visitor token it keeps in localStorage, so
// the conversation survives reloads and tabs. No framework: a few elements in a shadow root.
import { styles } from './styles.ts';

interface Attachment {
  kind: string;
  url: string;
  filename: string | null;
  content_type: string | null;
}

interface Message {
  id: string;
  client_id: string | null;
  from: 'visitor' | 'business';
  text: string;
  attachments: Attachment[];
  status: string;
}

interface Session {
  token: string;
  visitor_id: string;
  verified: boolean;
  messages: Message[];
  online: boolean;
  away_message: string | null;
}

/** The session as kept in localStorage: a signed-in customer's is never reused by an anonymous page. */
interface Kept {
  token: string;
  verified: boolean;
  /** The visitor left an email address (or the site gave one): the widget asks no more. */
  reachable?: boolean;
}

const AWAY = "We're away right now. Leave your email address and we'll answer you there.";
const ASK = 'Leave your email address so we can answer you if you go.';

const script = document.currentScript as HTMLScriptElement | null;
const channel = script?.dataset.channel ?? '';
const base = script ? new URL(script.src).origin : location.origin;
const api = `${base}/widget/v1/${encodeURIComponent(channel)}`;
const storageKey = `messaging-widget:${channel}`;

/** The customer the page vouches for (identity validation): its server's HMAC of the external id. */
function identity(): Record<string, string> | undefined {
  const d = script?.dataset;
  if (!d?.externalId || !d.identityHash) return undefined;
  return {
    external_id: d.externalId,
    hash: d.identityHash,
    ...(d.name ? { name: d.name } : {}),
    ...(d.email ? { email: d.email } : {}),
    ...(d.phone ? { phone: d.phone } : {}),
  };
}

function kept(): Kept | undefined {
  try {
    return JSON.parse(localStorage.getItem(storageKey) ?? 'null') as Kept | undefined;
  } catch {
    return undefined;
  }
}

// A customer who signed out leaves a page without identity: their conversation is not the next visitor's.
let token = kept()?.verified && !identity() ? undefined : kept()?.token;
let reachable = Boolean(kept()?.reachable || identity()?.email);
let online = true;
/** The visitor closed the chat with a message unanswered: ask for an address on the next look. */
let leftUnanswered = false;
const messages = new Map<string, Message>();
const acknowledged = new Map<string, 'delivered' | 'read'>();

const host = document.createElement('div');
const root = host.attachShadow({ mode: 'open' });
root.innerHTML = `<style>${styles}</style>
<button class="launcher" type="button" aria-label="Open chat" aria-expanded="false" aria-controls="panel">&#128172;</button>
<section class="panel" id="panel" role="dialog" aria-label="Chat" hidden>
  <header><h2>Chat with us</h2><button type="button" class="close" aria-label="Close chat">&times;</button></header>
  <p class="notice" role="status" hidden></p>
  <div class="log" role="log" aria-live="polite" aria-label="Messages"><ol></ol></div>
  <p class="typing" role="status" aria-live="polite"></p>
  <form class="ask" hidden><label for="email">${ASK}</label>
    <input id="email" type="email" autocomplete="email" maxlength="254" required>
    <button type="submit">Save</button></form>
  <form class="write"><label class="sr" for="text">Your message</label>
    <label class="attach" title="Send a file"><span class="sr">Send a file</span>&#128206;
      <input type="file" accept="image/png,image/jpeg,image/gif,image/webp,application/pdf,.docx,.xlsx,audio/*,video/mp4,video/webm"></label>
    <textarea id="text" rows="1" maxlength="4096" placeholder="Write a message"></textarea>
    <button type="submit">Send</button></form>
</section>`;
const launcher = root.querySelector<HTMLButtonElement>('.launcher')!;
const panel = root.querySelector<HTMLElement>('.panel')!;
const log = root.querySelector<HTMLDivElement>('.log')!;
const list = log.querySelector('ol')!;
const form = root.querySelector<HTMLFormElement>('form.write')!;
const input = root.querySelector<HTMLTextAreaElement>('textarea')!;
const notice = root.querySelector<HTMLParagraphElement>('.notice')!;
const ask = root.querySelector<HTMLFormElement>('form.ask')!;
const email = root.querySelector<HTMLInputElement>('#email')!;
const file = root.querySelector<HTMLInputElement>('input[type=file]')!;
const typingLine = root.querySelector<HTMLParagraphElement>('.typing')!;
let awayMessage = AWAY;

const isOpen = () => !panel.hidden && document.visibilityState === 'visible';

function toggle(open: boolean): void {
  panel.hidden = !open;
  launcher.setAttribute('aria-expanded', String(open));
  launcher.setAttribute('aria-label', open ? 'Close chat' : 'Open chat');
  if (open) {
    input.focus();
    void acknowledge();
    render();
  } else {
    leftUnanswered = unanswered();
    launcher.focus();
  }
}

/** The visitor's last message has no answer yet. */
function unanswered(): boolean {
  return [...messages.values()].at(-1)?.from === 'visitor';
}
launcher.addEventListener('click', () => toggle(panel.hidden));
root.querySelector('.close')!.addEventListener('click', () => toggle(false));
panel.addEventListener('keydown', (e) => {
  if (e.key === 'Escape') toggle(false);
});
document.addEventListener('visibilitychange', () => void acknowledge());

function render(): void {
  const items = [...messages.values()].map((m) => {
    const li = document.createElement('li');
    li.className = m.from + (m.status === 'pending' ? ' pending' : '');
    if (m.text) li.append(m.text);
    for (const a of m.attachments) li.append(attachment(a));
    return li;
  });
  list.replaceChildren(...items);
  log.scrollTop = log.scrollHeight;
  notice.hidden = online;
  notice.textContent = awayMessage;
  // Asked when no one is around, or when the visitor left with a message unanswered.
  ask.hidden = reachable || !unanswered() || (online && !leftUnanswered);
}

/** A file of a message: an image shown, anything else a link (by address only: never markup of the sender's). */
function attachment(a: Attachment): HTMLElement {
  if (a.kind === 'image') {
    const img = document.createElement('img');
    img.src = a.url;
    img.alt = a.filename ?? 'image';
    return img;
  }
  const link = document.createElement('a');
  link.href = a.url;
  link.target = '_blank';
  link.rel = 'noopener noreferrer';
  link.textContent = a.filename ?? 'file';
  return link;
}

/** A team member writing: shown until they stop, send, or go quiet (their dashboard renews it every few seconds). */
let typingTimer: ReturnType<typeof setTimeout> | undefined;
function showTyping(state: { typing: boolean; name: string | null }): void {
  clearTimeout(typingTimer);
  typingLine.textContent = state.typing ? `${state.name || 'Someone'} is typing…` : '';
  if (state.typing) typingTimer = setTimeout(() => (typingLine.textContent = ''), 6000);
}

/** The visitor writing: said at most every 3 s, and that they stopped after 4 s without a key or on send. */
let saidTyping = 0;
let idleTimer: ReturnType<typeof setTimeout> | undefined;
function typed(): void {
  if (!token) return;
  if (Date.now() - saidTyping >= 3000) {
    saidTyping = Date.now();
    void call('/typing', { typing: true }).catch(() => undefined);
  }
  clearTimeout(idleTimer);
  idleTimer = setTimeout(stoppedTyping, 4000);
}
function stoppedTyping(): void {
  clearTimeout(idleTimer);
  if (saidTyping === 0 || !token) return;
  saidTyping = 0;
  void call('/typing', { typing: false }).catch(() => undefined);
}

/** Messages from the service: a visitor's own replace their local echo (same client id). */
function take(list: Message[]): void {
  if (list.some((m) => m.from === 'business')) showTyping({ typing: false, name: null });
  for (const m of list) {
    if (m.client_id) messages.delete(`local:${m.client_id}`);
    messages.set(m.id, m);
  }
  render();
  void acknowledge();
}

async function call(path: string, body: unknown): Promise<Response> {
  return fetch(`${api}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
    body: JSON.stringify(body),
  });
}

/** The business's messages received (delivered) or shown (read), each said once. */
async function acknowledge(): Promise<void> {
  const status = isOpen() ? 'read' : 'delivered';
  const ids = [...messages.values()]
    .filter((m) => m.from === 'business' && acknowledged.get(m.id) !== 'read' && acknowledged.get(m.id) !== status)
    .map((m) => m.id)
    .slice(0, 100);
  if (ids.length === 0 || !token) return;
  for (const id of ids) acknowledged.set(id, status);
  await call('/receipts', { message_ids: ids, status }).catch(() => undefined);
}

/** What waits for the first session: a message or file sent before it would otherwise be lost. */
const waiting: (() => void)[] = [];
const session = (): Promise<void> => (token ? Promise.resolve() : new Promise((resolve) => waiting.push(resolve)));

/** Thrown when trying again cannot help: an unknown widget, a site not allowed, a wrong identity hash. */
class Refused extends Error {}

async function start(): Promise<void> {
  const res = await call('/sessions', { ...(token ? { token } : {}), ...(identity() ? { identity: identity() } : {}) });
  if (res.status === 401 || res.status === 403 || res.status === 404) throw new Refused(`session: ${res.status}`);
  if (!res.ok) throw new Error(`session: ${res.status}`);
  const session = (await res.json()) as Session;
  token = session.token;
  for (const resolve of waiting.splice(0)) resolve();
  online = session.online;
  awayMessage = session.away_message ?? AWAY;
  keep(session.verified);
  take(session.messages);
}

function keep(verified = kept()?.verified ?? false): void {
  localStorage.setItem(storageKey, JSON.stringify({ token: token!, verified, reachable } satisfies Kept));
}

/** The visitor's stream (Server-Sent Events read from fetch, which can send the token in a header). */
async function follow(): Promise<void> {
  const res = await fetch(`${api}/stream`, { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok || !res.body) throw new Error(`stream: ${res.status}`);
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end: number;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = /^data: (.*)$/m.exec(frame)?.[1];
      if (/^event: messages$/m.test(frame) && data) take((JSON.parse(data) as { messages: Message[] }).messages);
      if (/^event: typing$/m.test(frame) && data)
        showTyping(JSON.parse(data) as { typing: boolean; name: string | null });
    }
  }
}

/** Session then stream, again after any break (a reconnect reads the history, so nothing is missed). */
async function run(): Promise<void> {
  for (let delay = 1000; ; delay = Math.min(delay * 2, 30_000)) {
    try {
      await start();
      delay = 1000;
      await follow();
    } catch (err) {
      if (err instanceof Refused) return;
      // Offline, or the service restarted: try again later.
    }
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

form.addEventListener('submit', (e) => {
  e.preventDefault();
  const text = input.value.trim();
  if (!text) return;
  input.value = '';
  stoppedTyping();
  const clientId = crypto.randomUUID();
  messages.set(`local:${clientId}`, {
    id: `local:${clientId}`,
    client_id: clientId,
    from: 'visitor',
    text,
    attachments: [],
    status: 'pending',
  });
  render();
  void session()
    .then(() => call('/messages', { client_id: clientId, text }))
    .then((res) => {
      if (!res.ok) input.value = text;
    });
});

file.addEventListener('change', () => {
  const chosen = file.files?.[0];
  file.value = '';
  if (!chosen) return;
  const clientId = crypto.randomUUID();
  const local = `local:${clientId}`;
  messages.set(local, {
    id: local,
    client_id: clientId,
    from: 'visitor',
    text: chosen.name,
    attachments: [],
    status: 'pending',
  });
  render();
  const query = new URLSearchParams({ client_id: clientId, filename: chosen.name.slice(0, 255) });
  void session()
    .then(() =>
      fetch(`${api}/files?${query}`, {
        method: 'POST',
        headers: { 'content-type': chosen.type || 'application/octet-stream', authorization: `Bearer ${token}` },
        body: chosen,
      }),
    )
    .then((res) => {
      if (res.ok) return;
      const refused = messages.get(local);
      if (refused) refused.text = `${chosen.name}: ${res.status === 413 ? 'too large' : 'this file cannot be sent'}`;
      render();
    });
});

ask.addEventListener('submit', (e) => {
  e.preventDefault();
  void call('/profile', { email: email.value.trim() }).then((res) => {
    if (!res.ok) return (email.setCustomValidity('Check this address'), ask.reportValidity());
    reachable = true;
    keep();
    render();
  });
});
email.addEventListener('input', () => email.setCustomValidity(''));
input.addEventListener('input', typed);
input.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && !e.shiftKey) {
    e.preventDefault();
    form.requestSubmit();
  }
});

// A script in <head> may run before <body> exists.
if (document.body) document.body.appendChild(host);
else document.addEventListener('DOMContentLoaded', () => document.body.appendChild(host));
void run();
