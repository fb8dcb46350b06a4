import { setTimeout as sleep } from 'node:timers/promises';
import { makeWASocket, type UserFacingSocketConfig, type WASocket } from 'baileys';

/** What the adapter uses of a Baileys socket: its events, sends, the pairing code, logout and end. */
export type LinkSocket = Pick<WASocket, 'ev' | 'sendMessage' | 'requestPairingCode' | 'logout' | 'end'> & {
  user?: WASocket['user'];
  /** Baileys' LID to phone number mappings, where a LID sender's number may be known. */
  signalRepository?: Pick<WASocket['signalRepository'], 'lidMapping'>;
};

/** Opens a socket to WhatsApp's servers (Baileys' makeWASocket; a fake of it in the tests). */
export type SocketFactory = (config: UserFacingSocketConfig) => LinkSocket;

/**
 * How the adapter reaches WhatsApp: the socket factory, and the pause before each send (a random
 * 0.5 to 2 s, so that sends do not come at a machine's even pace). Replaced in the tests.
 */
export const whatsAppWebTransport: {
  makeSocket: SocketFactory;
  pause(ms: number): Promise<void>;
  jitterMs(): number;
} = {
  makeSocket: (config) => makeWASocket(config),
  pause: (ms) => sleep(ms),
  jitterMs: () => 500 + Math.floor(Math.random() * 1500),
};
