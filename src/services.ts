import type { FastifyBaseLogger } from 'fastify';
import type { Config } from './config.ts';
import type { Db, Engine } from './db/database.ts';
import { sliceSizes } from './db/slices.ts';
import type { OutboxWorker } from './jobs/outbox.worker.ts';
import { dashboardLinks } from './lib/links.ts';
import { SecretBox } from './lib/secret-box.ts';
import { guardedAgent, resolveTargetHost } from './net/ssrf-guard.ts';
import type { ApiKeyCache } from './modules/api-keys/api-key-cache.ts';
import { ApiKeysService } from './modules/api-keys/api-keys.service.ts';
import { BusinessesService } from './modules/businesses/businesses.service.ts';
import { ContactFieldsService } from './modules/contact-fields/contact-fields.service.ts';
import { ContactsService } from './modules/contacts/contacts.service.ts';
import { DashboardContactsService } from './modules/contacts/contacts.dashboard.service.ts';
import { TeamsService } from './modules/teams/teams.service.ts';
import { UsersService } from './modules/users/users.service.ts';
import { ImportService } from './modules/import/import.service.ts';
import { ContactMergeService } from './modules/contact-merge/contact-merge.service.ts';
import { ConversationsService } from './modules/conversations/conversations.service.ts';
import { MessagesService } from './modules/messages/messages.service.ts';
import { ChannelSetupService } from './modules/channels/channel-setup.service.ts';
import { ThreadService } from './modules/messages/thread.service.ts';
import { ChannelsService } from './modules/channels/channels.service.ts';
import { InboundPoller } from './modules/inbound/inbound.poller.ts';
import { ChannelLinksService } from './modules/channels/channel-links.service.ts';
import { InboundService } from './modules/inbound/inbound.service.ts';
import { VisitorsService } from './modules/visitors/visitors.service.ts';
import { TemplatesService } from './modules/templates/templates.service.ts';
import { IdempotencyService } from './modules/idempotency/idempotency.service.ts';
import { afterFetchAll } from './modules/media/media.fetch-job.ts';
import { MediaService } from './modules/media/media.service.ts';
import { SendingService } from './modules/sending/sending.service.ts';
import { RepliesService } from './modules/sending/replies.service.ts';
import { AgentsService } from './modules/agents/agents.service.ts';
import { AI_RUN_JOB } from './modules/ai/ai-run.job.ts';
import { aiRunSubscriber } from './modules/ai/ai-run.subscriber.ts';
import { AiRunsService } from './modules/ai/ai-runs.service.ts';
import { aiTimersSubscriber } from './modules/ai/ai-timers.subscriber.ts';
import { AiTimersService } from './modules/ai/ai-timers.service.ts';
import { TokenBudget } from './modules/ai/token-budget.ts';
import { openAiChatModel, openAiTranscriber } from './modules/ai/llm-client.ts';
import { TRANSCRIPTION_JOB, transcriptionAfterFetch, transcriptionJobHandler } from './modules/ai/transcription.job.ts';
import { openAiEmbeddings } from './modules/search/embeddings.client.ts';
import { SearchService } from './modules/search/search.service.ts';
import { createFileStorage } from './storage/create-file-storage.ts';
import { systemClock, type Clock } from './lib/clock.ts';
import { InvitationsService } from './modules/dashboard-auth/invitations.service.ts';
import { DashboardSessionsService } from './modules/dashboard-auth/sessions.service.ts';
import type { WebhookWorkerOptions } from './modules/webhooks/webhook-worker.ts';
import { createWebhooks } from './modules/webhooks/webhooks.module.ts';
import { ExportsService } from './modules/exports/exports.service.ts';
import { ReportsService } from './modules/reports/reports.service.ts';
import { TimelineService } from './modules/timeline/timeline.service.ts';
import { ConversationOpsService } from './modules/conversations/conversation-ops.service.ts';
import { InboxService } from './modules/conversations/inbox.service.ts';
import { DomainEventDispatcher } from './modules/domain-events/domain-events.dispatcher.ts';
import { webhookDeliveriesSubscriber } from './modules/webhooks/webhook-subscriber.ts';
import { LiveCatchUp } from './modules/live/live.catch-up.ts';
import { LiveHub, type LiveOptions } from './modules/live/live.hub.ts';
import { liveStreamSubscriber } from './modules/live/live.subscriber.ts';
import { LiveSignals } from './modules/live/live.signals.ts';
import { TypingService } from './modules/live/typing.service.ts';
import { MIRROR_JOB, mirrorAfterFetch, mirrorJobHandler } from './modules/mirroring/mirror.job.ts';
import { relayStatusJobHandler } from './modules/mirroring/relay-status.job.ts';
import { mirroringSubscriber } from './modules/mirroring/mirroring.subscriber.ts';

/** Every service of the app, built once over one database; routes, CLI and seeding share them. */
export function createServices(
  db: Db,
  config: Config,
  worker: OutboxWorker,
  options: {
    engine: Engine;
    apiKeyCache: ApiKeyCache;
    clock?: Clock;
    webhookWorker?: WebhookWorkerOptions;
    live?: LiveOptions;
  },
) {
  const links = dashboardLinks(config.publicUrl);
  // How much of a long operation one transaction or statement carries on this engine.
  const { engine } = options;
  const slices = sliceSizes(engine);
  // Every provider call carries a channel's secrets: its URLs and each connection obey the address
  // policy of webhook deliveries. The pool is closed with the app (components.ts).
  const targets = { allowPrivate: config.allowPrivateWebhookTargets };
  const providerConnections = guardedAgent(targets);
  const channels = new ChannelsService(db, new SecretBox(config.secretKeys, 'channel-secrets'), targets, {
    dispatcher: providerConnections,
    resolveHost: (host) => resolveTargetHost(host, targets),
    publicUrl: config.publicUrl,
  });
  const domainEvents = new DomainEventDispatcher(db);
  const contacts = new ContactsService(db, links, domainEvents);
  const dashboardContacts = new DashboardContactsService(db, config.secretKeys, contacts);
  const templates = new TemplatesService(db);
  // Webhook registrations (.service), the message_created hook (.events) and the delivery worker.
  const webhooks = createWebhooks(db, config, options.clock, options.webhookWorker);
  // Domain events are handed to their subscribers after the commit: webhook deliveries first.
  void domainEvents.register(webhookDeliveriesSubscriber(webhooks.events));
  // Open dashboards hear every event of their business; on PostgreSQL, transactions run side by
  // side, and one that writes events may commit some seconds after drawing their ids.
  const live = new LiveHub(new LiveCatchUp(db, { lateCommitMs: engine === 'postgres' ? 10_000 : 0 }), options.live);
  void domainEvents.register(liveStreamSubscriber(live, engine));
  const signals = new LiveSignals(db, engine, (businessId, signal) => live.signal(businessId, signal));
  const storage = createFileStorage(config.dataDir, config.s3);
  // Calls' recordings are transcribed by the speech-to-text of LLM_URL once stored; without it, none is.
  const transcriber = config.llm ? openAiTranscriber(config.llm) : undefined;
  const media = new MediaService(
    db,
    storage,
    config,
    async (businessId, channelId) => {
      const channel = await channels.find(businessId, channelId);
      return channel?.provider_kind ? channels.providerFor(channel) : undefined;
    },
    afterFetchAll([
      ...(transcriber ? [transcriptionAfterFetch(() => worker.wake(TRANSCRIPTION_JOB))] : []),
      mirrorAfterFetch(() => worker.wake(MIRROR_JOB)),
    ]),
  );
  const clock = options.clock ?? systemClock;
  const dashboardSessions = new DashboardSessionsService(db, config.dashboard, clock);
  // A live stream ends with its session (signed out, expired, or moved to another business).
  live.checkSessionsWith((ids) => dashboardSessions.liveBusinesses(ids));
  const invitations = new InvitationsService(
    db,
    { secretKeys: config.secretKeys, publicUrl: config.publicUrl, invitationMs: config.dashboard.invitationMs },
    clock,
    dashboardSessions,
  );
  const replies = new RepliesService(db, worker, channels, templates, domainEvents, media);
  const search = new SearchService(db, worker, config.embeddings ? openAiEmbeddings(config.embeddings) : undefined);
  // The AI agents answer through the model of LLM_URL; without it no run starts (the agents say why).
  const chatModel = config.llm ? openAiChatModel(config.llm) : undefined;
  void domainEvents.register(
    aiRunSubscriber({ llmConfigured: chatModel !== undefined, clock, wake: () => worker.wake(AI_RUN_JOB) }),
  );
  // Follow-ups, quiet conversations, manual control's return and sentiment: durable timers per conversation.
  void domainEvents.register(
    aiTimersSubscriber({
      llmConfigured: chatModel !== undefined,
      sentimentQuietMinutes: config.ai.sentimentQuietMinutes,
      wake: (kind) => worker.wake(kind),
    }),
  );
  // Customers' messages copied to the channels that mirror the others (a helpdesk's inbox, say).
  void domainEvents.register(mirroringSubscriber({ channels, wake: (kind) => worker.wake(kind) }));
  const budget = new TokenBudget(db, config.ai.dailyTokenBudget);
  const conversationOps = new ConversationOpsService(db, domainEvents);
  // Replies written in a mirroring channel's provider go out through their conversations' channels.
  const inbound = new InboundService(
    db,
    channels,
    worker,
    domainEvents,
    media.avatars,
    slices.inboundItems,
    (channel, relayed) => replies.relay(channel, relayed),
  );
  const channelLinks = new ChannelLinksService(db, channels, new SecretBox(config.secretKeys, 'channel-links'));
  return {
    channels,
    channelSetup: new ChannelSetupService(channels, config.publicUrl),
    channelLinks,
    providerConnections,
    inbound,
    // Mailboxes and numbers linked as a device, one process at a time per channel.
    inboundPoller: new InboundPoller(db, channels, inbound, config.poller, channelLinks),
    visitors: new VisitorsService(db, channels, inbound, live, signals, media, domainEvents, config.secretKeys),
    typing: new TypingService(db, signals),
    businesses: new BusinessesService(db),
    apiKeys: new ApiKeysService(db, options.apiKeyCache),
    contacts,
    dashboardContacts,
    users: new UsersService(db, invitations, dashboardSessions, clock, domainEvents),
    dashboardSessions,
    invitations,
    teams: new TeamsService(db, domainEvents),
    contactFields: new ContactFieldsService(db),
    imports: new ImportService(db, {
      parallel: engine === 'postgres' ? 3 : 1,
      batchRows: slices.importRows,
      engine,
      domainEvents,
    }),
    conversations: new ConversationsService(db),
    messages: new MessagesService(db, media),
    contactMerge: new ContactMergeService(db, domainEvents, worker, slices.mergeRows),
    templates,
    idempotency: new IdempotencyService(db),
    sending: new SendingService(db, worker, channels, templates, contacts, domainEvents),
    replies,
    mirroring: {
      jobHandlers: (log: FastifyBaseLogger) => [
        mirrorJobHandler(db, channels, media, log),
        relayStatusJobHandler(db, channels, log),
      ],
    },
    aiRuns: new AiRunsService({
      db,
      model: chatModel,
      replies,
      search,
      contacts,
      budget,
      concurrency: config.llm?.concurrency,
    }),
    aiTimers: new AiTimersService({
      db,
      model: chatModel,
      replies,
      budget,
      conversationOps,
      domainEvents,
      sentimentQuietMinutes: config.ai.sentimentQuietMinutes,
    }),
    agents: new AgentsService(db, { llmConfigured: config.llm !== undefined }),
    search,
    webhooks,
    exports: new ExportsService(db, config.secretKeys),
    reports: new ReportsService(db, config.ai.dailyTokenBudget),
    timeline: new TimelineService(db, config.secretKeys),
    conversationOps,
    inbox: new InboxService(db, dashboardContacts, config.secretKeys),
    thread: new ThreadService(db, media, config.secretKeys),
    domainEvents,
    live,
    media,
    /** The outbox handler of recordings' transcriptions, when LLM_URL is set. */
    transcriptionJob: transcriber ? transcriptionJobHandler(db, storage, transcriber) : undefined,
  };
}

export type Services = ReturnType<typeof createServices>;
