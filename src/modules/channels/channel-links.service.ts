import QRCode from 'qrcode';
import { readKinds } from '../../channels/registry.ts';
import type { ChannelLink, LinkReport, LinkState } from '../../channels/provider.ts';
import type { Db } from '../../db/database.ts';
import { invalid, notFound } from '../../lib/domain-errors.ts';
import { normalisePhone } from '../../lib/phone.ts';
import { resealStored, type SealCounts, type SecretBox } from '../../lib/secret-box.ts';
import { channelLinksRepository } from './channel-links.repository.ts';
import type { ChannelRow, ChannelsService } from './channels.service.ts';

/** A link as the dashboard shows it. */
export interface LinkView {
  state: LinkState;
  /** The QR code to scan with the phone, as a PNG data URL, while `qr`. */
  qr_image: string | null;
  /** The QR code's content (for a client drawing it itself), while `qr`. */
  qr: string | null;
  pairing_code: string | null;
  /** The operator asked to link and the link is not yet made. */
  requested: boolean;
  account: string | null;
  updated_at: string;
}

const STATES: readonly LinkState[] = ['unlinked', 'qr', 'linked', 'logged_out'];

/**
 * Channels linked to their provider as a device (SocketTransport.linked): the storage the core
 * keeps for each link's adapter (its credentials and keys, sealed; its state), and the link as the
 * dashboard shows it and asks for it (a QR code, a pairing code, linking again after a logout).
 */
export class ChannelLinksService {
  constructor(
    private readonly db: Db,
    private readonly channels: ChannelsService,
    /** Seals the link's credentials and keys: whoever holds them is the business's number. */
    private readonly secrets: SecretBox,
  ) {}

  /** The storage of one channel's link, for its adapter's `watch`. */
  linkOf(channel: ChannelRow): ChannelLink {
    const { db, secrets } = this;
    return {
      async read(keys) {
        const rows = await channelLinksRepository.readKeys(db, channel, keys);
        return new Map(rows.map((r) => [r.key, secrets.open(r.value)]));
      },
      write(entries) {
        const sealed = new Map([...entries].map(([key, value]) => [key, value === null ? null : secrets.seal(value)]));
        return channelLinksRepository.writeKeys(db, channel, sealed);
      },
      clear: () => channelLinksRepository.clearKeys(db, channel),
      report: (report) => channelLinksRepository.upsert(db, channel, rowOf(report)),
      async requests() {
        const row = await channelLinksRepository.find(db, channel);
        const pairingPhone = row?.pairing_phone ? await channelLinksRepository.takePairingPhone(db, channel) : null;
        return { state: stateOf(row?.state), requested: row?.requested ?? false, pairingPhone };
      },
    };
  }

  /**
   * Seals with the current SECRET_KEY the link keys sealed with a fallback key, so the fallback can
   * be dropped without unlinking a phone; run at start. Answers how many were sealed, and how many
   * no key opens.
   */
  sealStored(): Promise<SealCounts> {
    return resealStored(
      (after: Awaited<ReturnType<typeof channelLinksRepository.keysAfter>>[number] | undefined) =>
        channelLinksRepository.keysAfter(this.db, after, 500),
      (row) => (this.secrets.isCurrent(row.value) ? undefined : this.secrets.reseal(row.value)),
      (row, value) => channelLinksRepository.replaceKeyIf(this.db, row, value),
    );
  }

  /** The link of a channel of the business, for the dashboard; 404 for a channel that is not linked as a device. */
  async view(businessId: string, channelId: string): Promise<LinkView> {
    const channel = await this.linkedChannel(businessId, channelId);
    const row = await channelLinksRepository.find(this.db, channel);
    const state = stateOf(row?.state);
    const qr = state === 'qr' ? (row?.qr ?? null) : null;
    return {
      state,
      qr,
      qr_image: qr ? await QRCode.toDataURL(qr, { margin: 1, width: 264 }) : null,
      pairing_code: state === 'qr' ? (row?.pairing_code ?? null) : null,
      requested: row?.requested ?? false,
      account: row?.account ?? null,
      updated_at: new Date(row?.updated_at ?? Date.now()).toISOString(),
    };
  }

  /**
   * The operator asks to link the channel (again, after a logout): the process holding it starts
   * a link, which shows a QR code; with `phoneNumber`, a pairing code for that number as well.
   */
  async request(businessId: string, channelId: string, phoneNumber?: string): Promise<LinkView> {
    const channel = await this.linkedChannel(businessId, channelId);
    const phone = phoneNumber === undefined ? null : normalisePhone(phoneNumber);
    if (phone === undefined) throw invalid('not a phone number with country code', [{ path: '/phone_number' }]);
    const row = await channelLinksRepository.find(this.db, channel);
    await channelLinksRepository.upsert(this.db, channel, {
      requested: true,
      ...(row?.state === 'linked' ? {} : { state: row?.state === 'qr' ? 'qr' : 'unlinked' }),
      ...(phone ? { pairing_phone: phone.digits, pairing_code: null } : {}),
    });
    return this.view(businessId, channelId);
  }

  private async linkedChannel(businessId: string, channelId: string): Promise<ChannelRow> {
    const channel = await this.channels.get(businessId, channelId);
    if (!readKinds().some((k) => k.linked && k.entry.kind === channel.provider_kind)) throw notFound('linked channel');
    return channel;
  }
}

function stateOf(state: string | undefined): LinkState {
  return STATES.find((s) => s === state) ?? 'unlinked';
}

/** The columns a report writes: a QR and a pairing code only while waiting for them. */
function rowOf(report: LinkReport) {
  return {
    state: report.state,
    qr: report.state === 'qr' ? (report.qr ?? null) : null,
    ...(report.pairingCode !== undefined || report.state !== 'qr' ? { pairing_code: report.pairingCode ?? null } : {}),
    // Linked, logged out, or a link that ended unused (its QR codes expired): the request is answered.
    ...(report.state === 'qr' ? {} : { requested: false }),
    ...(report.account !== undefined ? { account: report.account } : {}),
  };
}
