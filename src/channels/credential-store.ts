/**
 * Where an adapter keeps the secrets it renews itself (an OAuth access token it refreshed, its new
 * refresh token and expiry): the channel's stored provider config, written by the core
 * (ChannelsService), sealed as every secret field is. One per channel, handed to the adapter with
 * its config (ChannelKind.create); only the kind's `renewedFields` may be written through it.
 */
export interface CredentialStore {
  /**
   * The channel's config as stored now, secrets opened; undefined when the channel is gone. Another
   * process, or an adapter built from an older copy of the row, may have renewed the tokens since
   * this adapter's config was read: it looks here before renewing them again.
   */
  current(): Promise<Record<string, unknown> | undefined>;
  /**
   * Writes these fields into the stored config (the other fields as stored now), sealed; resolves
   * once committed. Every process builds the channel's adapter again from the new config.
   */
  save(changes: Record<string, string>): Promise<void>;
}
