import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import * as foundation from './migrations/0001-foundation.ts';
import * as messaging from './migrations/0002-messaging.ts';
import * as sending from './migrations/0003-sending.ts';
import * as webhooks from './migrations/0004-webhooks.ts';
import * as exportsMigration from './migrations/0005-exports.ts';
import * as importFlags from './migrations/0006-import-flags.ts';
import * as webCopies from './migrations/0007-web-copies.ts';
import * as webCopiesPerStatement from './migrations/0008-web-copies-per-statement.ts';
import * as idempotencyLeases from './migrations/0009-idempotency-leases.ts';
import * as batchRows from './migrations/0010-batch-rows.ts';
import * as agentsAndSearch from './migrations/0011-agents-and-search.ts';
import * as searchEmbeddings from './migrations/0012-search-embeddings.ts';
import * as mediaIds from './migrations/0013-media-ids.ts';
import * as webhookQueueHeads from './migrations/0014-webhook-queue-heads.ts';
import * as domainEvents from './migrations/0015-domain-events.ts';
import * as webhookHeaderSecrets from './migrations/0016-webhook-header-secrets.ts';
import * as outboxOwners from './migrations/0018-outbox-owners.ts';
import * as contactIdentities from './migrations/0019-contact-identities.ts';
import * as dashboardAuth from './migrations/0021-dashboard-auth.ts';
import * as inbox from './migrations/0022-inbox.ts';
import * as domainEventsByBusiness from './migrations/0023-domain-events-by-business.ts';
import * as contactsCreated from './migrations/0025-contacts-created.ts';
import * as apiKeyLastUse from './migrations/0026-api-key-last-use.ts';
import * as teamMembers from './migrations/0027-team-members.ts';
import * as contactsAssignedUser from './migrations/0028-contacts-assigned-user.ts';
import * as mergedContacts from './migrations/0029-merged-contacts.ts';
import * as aiRuns from './migrations/0031-ai-runs.ts';
import * as aiTools from './migrations/0032-ai-tools.ts';
import * as aiTimers from './migrations/0033-ai-timers.ts';
import * as aiTokenUsage from './migrations/0035-ai-token-usage.ts';
import * as channelCredentials from './migrations/0036-channel-credentials.ts';
import * as inboundCursors from './migrations/0037-inbound-cursors.ts';
import * as sessionsActivity from './migrations/0041-sessions-activity.ts';
import * as channelLinks from './migrations/0042-channel-links.ts';
import * as channelPaces from './migrations/0043-channel-paces.ts';
import * as domainEventsKeyedByBusiness from './migrations/0044-domain-events-by-business.ts';
import * as channelAccounts from './migrations/0045-channel-accounts.ts';
import * as tokenLookups from './migrations/0046-token-lookups.ts';
import * as whatsappMessageKeys from './migrations/0048-whatsapp-message-keys.ts';
import * as businessTimeZone from './migrations/0049-business-time-zone.ts';
import * as reportsIndexes from './migrations/0050-reports-indexes.ts';
import * as webhookDeliveryOwners from './migrations/0051-webhook-delivery-owners.ts';
import * as reportQuarters from './migrations/0052-report-quarters.ts';
import * as reportConversationDays from './migrations/0054-report-conversation-days.ts';

/** Migrations are imported statically so they run the same under tsx, Vitest and a bundle. */
const migrations: Record<string, Migration> = {
  '0001-foundation': foundation,
  '0002-messaging': messaging,
  '0003-sending': sending,
  '0004-webhooks': webhooks,
  '0005-exports': exportsMigration,
  '0006-import-flags': importFlags,
  '0007-web-copies': webCopies,
  '0008-web-copies-per-statement': webCopiesPerStatement,
  '0009-idempotency-leases': idempotencyLeases,
  '0010-batch-rows': batchRows,
  '0011-agents-and-search': agentsAndSearch,
  '0012-search-embeddings': searchEmbeddings,
  '0013-media-ids': mediaIds,
  '0014-webhook-queue-heads': webhookQueueHeads,
  '0015-domain-events': domainEvents,
  '0016-webhook-header-secrets': webhookHeaderSecrets,
  '0018-outbox-owners': outboxOwners,
  '0019-contact-identities': contactIdentities,
  '0021-dashboard-auth': dashboardAuth,
  '0022-inbox': inbox,
  '0023-domain-events-by-business': domainEventsByBusiness,
  '0025-contacts-created': contactsCreated,
  '0026-api-key-last-use': apiKeyLastUse,
  '0027-team-members': teamMembers,
  '0028-contacts-assigned-user': contactsAssignedUser,
  '0029-merged-contacts': mergedContacts,
  '0031-ai-runs': aiRuns,
  '0032-ai-tools': aiTools,
  '0033-ai-timers': aiTimers,
  '0035-ai-token-usage': aiTokenUsage,
  '0036-channel-credentials': channelCredentials,
  '0037-inbound-cursors': inboundCursors,
  '0041-sessions-activity': sessionsActivity,
  '0042-channel-links': channelLinks,
  '0043-channel-paces': channelPaces,
  '0044-domain-events-by-business': domainEventsKeyedByBusiness,
  '0045-channel-accounts': channelAccounts,
  '0046-token-lookups': tokenLookups,
  '0048-whatsapp-message-keys': whatsappMessageKeys,
  '0049-business-time-zone': businessTimeZone,
  '0050-reports-indexes': reportsIndexes,
  '0051-webhook-delivery-owners': webhookDeliveryOwners,
  '0052-report-quarters': reportQuarters,
  '0054-report-conversation-days': reportConversationDays,
};

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** The migrations run on a database of any schema: the one they build is what the app's types describe. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDatabase = Kysely<any>;

/** Migrates up or down to the migration named `target` (upgrade tests start from an older schema). */
export async function migrateTo(db: AnyDatabase, target: string): Promise<void> {
  const { error } = await new Migrator({ db, provider }).migrateTo(target);
  if (error) throw asError(error);
}

/** Applies pending migrations; `schema` names where the migration bookkeeping lives (default public). */
export async function migrateToLatest(db: AnyDatabase, schema?: string): Promise<string[]> {
  const migrator = new Migrator({ db, provider, migrationTableSchema: schema });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw asError(error);
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** The migrator reports whatever a migration threw; callers get an Error either way. */
const asError = (error: unknown) => (error instanceof Error ? error : new Error(String(error)));
