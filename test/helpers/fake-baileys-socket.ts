import { randomBytes } from 'node:crypto';
import { Boom } from '@hapi/boom';
import { DisconnectReason, makeEventBuffer, type AuthenticationState } from 'baileys';
import type { LinkSocket } from '../../src/channels/whatsapp-web/whatsapp-web.socket.ts';

/** A logger that says nothing, in the shape Baileys' event buffer takes. */
export const silent = {
  level: 'silent',
  child: () => silent,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * A Baileys socket with its transport replaced: Baileys' own event buffer as `ev`, and sends,
 * pairing codes, logout and end recorded. Tests and benchmarks emit the events WhatsApp's servers
 * make Baileys emit, in their recorded shapes.
 */
export class FakeSocket implements LinkSocket {
  readonly ev = makeEventBuffer(silent);
  readonly sent: { jid: string; content: Record<string, unknown> }[] = [];
  readonly pairingRequests: string[] = [];
  user: LinkSocket['user'];
  ended = false;
  constructor(readonly auth: AuthenticationState) {}
  sendMessage = (async (jid: string, content: Record<string, unknown>) => {
    this.sent.push({ jid, content });
    return { key: { id: `3EB0${randomBytes(8).toString('hex').toUpperCase()}`, remoteJid: jid, fromMe: true } };
  }) as unknown as LinkSocket['sendMessage'];
  requestPairingCode = async (phone: string) => {
    this.pairingRequests.push(phone);
    return 'ABCD1234';
  };
  logout = async () => undefined;
  end = async (error: Error | undefined) => {
    if (this.ended) return;
    this.ended = true;
    this.close(new Boom(error?.message ?? 'Connection Closed', { statusCode: DisconnectReason.connectionClosed }));
  };
  close(error: Boom) {
    this.ev.emit('connection.update', { connection: 'close', lastDisconnect: { error, date: new Date() } });
  }
  /** The phone scanned the QR code: the credentials name the device, then the connection opens. */
  link(phone: string) {
    this.auth.creds.me = { id: `${phone}:7@s.whatsapp.net`, name: 'Shop' };
    this.auth.creds.registered = true;
    this.ev.emit('creds.update', { me: this.auth.creds.me, registered: true });
    this.user = { id: `${phone}:7@s.whatsapp.net` };
    this.ev.emit('connection.update', { connection: 'open' });
  }
}
