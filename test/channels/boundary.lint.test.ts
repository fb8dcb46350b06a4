import { ESLint, type Linter } from 'eslint';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';
import { describe, expect, it } from 'vitest';

// eslint.config.js keeps the core channel-neutral: outside src/channels/ nothing imports an adapter
// folder (only registry.ts does), and outside the adapter folders no string names a provider kind.
// Its boundary rules run here on their own (no type information needed), over the real sources.
const BOUNDARY_RULES = ['no-restricted-imports', 'no-restricted-syntax'];
// The config file is plain JavaScript: read as data here.
const { default: config } = (await import(new URL('../../eslint.config.js', import.meta.url).href)) as {
  default: Linter.Config[];
};
const boundary = config.filter((entry) => BOUNDARY_RULES.some((rule) => entry.rules?.[rule] !== undefined));
const root = fileURLToPath(new URL('../..', import.meta.url));
const eslint = new ESLint({
  cwd: root,
  overrideConfigFile: true,
  overrideConfig: [
    {
      files: ['**/*.ts'],
      languageOptions: { parser: tseslint.parser },
      // Directives about the rules left out here are not this check's business.
      linterOptions: { reportUnusedDisableDirectives: 'off' },
    },
    ...boundary,
  ],
});

const broken = (messages: Linter.LintMessage[]) =>
  messages.filter((m) => BOUNDARY_RULES.includes(m.ruleId ?? '')).map((m) => `${m.ruleId}:${m.line}`);

async function brokenAt(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: `${root}${path}` });
  return broken(result.messages);
}

const violating = [
  "import { WhatsAppCloudProvider } from '../../channels/whatsapp-cloud/whatsapp-cloud.provider.ts';",
  "export const kind = 'whatsapp_cloud';",
  'export const path = `/channels/whatsapp_cloud/webhook`;',
  'export const provider = WhatsAppCloudProvider;',
].join('\n');

const neutral = [
  "import { channelKind } from '../../channels/registry.ts';",
  "import type { ChannelRow } from '../channels/channels.service.ts';",
  "export const type = 'whatsapp';",
  'export const kindOf = (row: ChannelRow) => channelKind(row.provider_kind);',
].join('\n');

// The sources are the same on either engine: checked once, on the embedded engine's run.
describe.skipIf(process.env.TEST_ENGINE === 'postgres')('the channel boundary (eslint.config.js)', () => {
  it('holds for every source file', async () => {
    const results = await eslint.lintFiles(['src/**/*.ts']);
    expect(results.length).toBeGreaterThan(100);
    expect(results.flatMap((r) => broken(r.messages).map((m) => `${r.filePath.slice(root.length)} ${m}`))).toEqual([]);
  });

  it('refuses an adapter import and a provider kind in the core', async () => {
    expect(await brokenAt('src/modules/inbound/inbound.routes.ts', violating)).toEqual([
      'no-restricted-imports:1',
      'no-restricted-syntax:2',
      'no-restricted-syntax:3',
    ]);
    expect(await brokenAt('src/app.ts', violating.replace('../../channels/', './channels/'))).toEqual([
      'no-restricted-imports:1',
      'no-restricted-syntax:2',
      'no-restricted-syntax:3',
    ]);
  });

  it('lets the core use the registry, the channels module and contract channel types', async () => {
    expect(await brokenAt('src/modules/inbound/inbound.routes.ts', neutral)).toEqual([]);
  });

  it('lets an adapter folder name its kind, and the registry import it', async () => {
    const adapter = violating.replace('../../channels/whatsapp-cloud/', './');
    expect(await brokenAt('src/channels/whatsapp-cloud/whatsapp-cloud.kind.ts', adapter)).toEqual([]);
    const registry =
      "import { whatsAppCloudKind } from './whatsapp-cloud/whatsapp-cloud.kind.ts';\nexport const k = whatsAppCloudKind;";
    expect(await brokenAt('src/channels/registry.ts', registry)).toEqual([]);
  });
});
