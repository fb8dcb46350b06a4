// The lint rule that keeps each table written by its owner only (docs/ARCHITECTURE.md#modules-and-their-tables):
// a module writes its own tables, and another module's through that module's repository or service.

/**
 * The folder under src/ that writes each table: the table of docs/ARCHITECTURE.md, checked by test/architecture.
 * @type {Record<string, string>}
 */
export const TABLE_OWNERS = {
  businesses: 'modules/businesses',
  api_keys: 'modules/api-keys',
  users: 'modules/users',
  dashboard_sessions: 'modules/dashboard-auth',
  dashboard_session_users: 'modules/dashboard-auth',
  dashboard_invitations: 'modules/dashboard-auth',
  dashboard_sign_in_failures: 'modules/dashboard-auth',
  teams: 'modules/teams',
  team_members: 'modules/teams',
  contacts: 'modules/contacts',
  contact_aliases: 'modules/contacts',
  contact_identities: 'modules/contacts',
  contact_fields: 'modules/contact-fields',
  conversations: 'modules/conversations',
  conversation_reads: 'modules/conversations',
  messages: 'modules/messages',
  channels: 'modules/channels',
  templates: 'modules/templates',
  media: 'modules/media',
  events: 'modules/events',
  idempotency_keys: 'modules/idempotency',
  webhooks: 'modules/webhooks',
  webhook_deliveries: 'modules/webhooks',
  webhook_attempts: 'modules/webhooks',
  domain_events: 'modules/domain-events',
  domain_event_subscribers: 'modules/domain-events',
  domain_event_pending: 'modules/domain-events',
  agents: 'modules/agents',
  search_collections: 'modules/search',
  search_items: 'modules/search',
  outbox: 'jobs',
  ai_runs: 'modules/ai',
  ai_token_usage: 'modules/ai',
  inbound_cursors: 'modules/inbound',
  channel_links: 'modules/channels',
  channel_link_keys: 'modules/channels',
  channel_accounts: 'modules/channels',
  rate_limit_counters: 'http',
  channel_paces: 'modules/sending',
  message_quarters: 'modules/reports',
  user_reply_quarters: 'modules/reports',
  conversation_days: 'modules/reports',
};

/** Kysely's write builders, whose first argument names the table. */
const WRITE_BUILDERS = new Set(['insertInto', 'updateTable', 'deleteFrom', 'mergeInto', 'replaceInto']);

/**
 * A write in SQL text and the table it names (empty when the text ends there: the table comes from an
 * interpolation). `update` after `for`, `do` or `key` is a row lock or an upsert's action, not a write of a table.
 */
const SQL_WRITE =
  /\b(?:insert\s+into|(?<!\b(?:for|do|key)\s+)update|delete\s+from|truncate(?:\s+table)?|merge\s+into)\s+(?:only\s+)?([^\s(]*)/gi;

/**
 * The folder under src/ a file belongs to: `modules/<name>` for a module, else the first folder.
 * @param {string} filename
 */
function ownerOf(filename) {
  const match = /(?:^|[\\/])src[\\/](modules[\\/][^\\/]+|[^\\/]+)[\\/]/.exec(filename);
  return match ? match[1].replace('\\', '/') : undefined;
}

/**
 * A table name as written, without its alias, schema or quotes.
 * @param {string} written
 */
const tableName = (written) =>
  written
    .split(/\s/)[0]
    .replace(/^public\./i, '')
    .replaceAll('"', '')
    .toLowerCase();

/** @type {import('eslint').Rule.RuleModule} */
const writesOwnTables = {
  meta: {
    type: 'problem',
    docs: {
      description: "Writes only the tables of the file's own module (docs/ARCHITECTURE.md#modules-and-their-tables).",
    },
    schema: [],
    messages: {
      foreign:
        "`{{table}}` belongs to src/{{owner}}: write it through that module's repository or service, not from src/{{self}}.",
      unowned:
        '`{{table}}` has no owner in TABLE_OWNERS (eslint.table-owners.js): give it one, as docs/ARCHITECTURE.md does.',
      unnamed: 'Name the table a write reaches literally, so that its owner can be checked.',
    },
  },
  create(context) {
    const self = ownerOf(context.filename);
    if (!self) return {};
    /** @type {(node: import('estree').Node, written: string) => void} */
    const check = (node, written) => {
      const table = tableName(written);
      if (table === '') return context.report({ node, messageId: 'unnamed' });
      const owner = TABLE_OWNERS[table];
      if (!owner) context.report({ node, messageId: 'unowned', data: { table } });
      else if (owner !== self) context.report({ node, messageId: 'foreign', data: { table, owner, self } });
    };
    /** @type {(node: import('estree').Node, text: string) => void} */
    const checkText = (node, text) => {
      for (const match of text.matchAll(SQL_WRITE)) check(node, match[1]);
    };
    /** @type {(tag: import('estree').Expression) => boolean} */
    const isSqlTag = (tag) =>
      (tag.type === 'Identifier' && tag.name === 'sql') ||
      (tag.type === 'MemberExpression' && tag.object.type === 'Identifier' && tag.object.name === 'sql');
    return {
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.property.type !== 'Identifier') return;
        const [first] = node.arguments;
        if (WRITE_BUILDERS.has(callee.property.name)) {
          if (first?.type === 'Literal' && typeof first.value === 'string') check(first, first.value);
          else context.report({ node, messageId: 'unnamed' });
        } else if (['raw', 'query'].includes(callee.property.name)) {
          // SQL text handed to sql.raw() or a client's query().
          if (first?.type === 'Literal' && typeof first.value === 'string') checkText(first, first.value);
          else if (first?.type === 'TemplateLiteral') for (const q of first.quasis) checkText(q, q.value.cooked ?? '');
        }
      },
      TaggedTemplateExpression(node) {
        if (isSqlTag(node.tag)) for (const q of node.quasi.quasis) checkText(q, q.value.cooked ?? '');
      },
    };
  },
};

export const tableOwners = { rules: { 'writes-own-tables': writesOwnTables } };
