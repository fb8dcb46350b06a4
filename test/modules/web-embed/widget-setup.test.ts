import { expect, it } from 'vitest';
import { ChannelSetupService } from '../../../src/modules/channels/channel-setup.service.ts';
import type { ChannelsService } from '../../../src/modules/channels/channels.service.ts';

it("the dashboard's form of a widget channel takes its allowed origins as a list, and its identity secret as a secret", () => {
  const kinds = new ChannelSetupService({} as ChannelsService, 'https://messaging.example.com').kinds();
  const widget = kinds.find((k) => k.channel_types.includes('web_embed'))!;
  expect(widget).toMatchObject({ address_kind: 'visitor_id', webhook_url: null });
  const field = (name: string) => widget.fields.find((f) => f.name === name);
  expect(field('allowed_origins')).toMatchObject({ type: 'list', required: true, secret: false });
  expect(field('identity_secret')).toMatchObject({ type: 'text', required: false, secret: true });
  expect(field('widget_id')).toMatchObject({ type: 'text', required: true });
});
