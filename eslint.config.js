// Lint rules for the whole repository: typescript-eslint's type-aware recommended rules.
import js from '@eslint/js';
import reactHooks from 'eslint-plugin-react-hooks';
import { readdirSync, readFileSync } from 'node:fs';
import tseslint from 'typescript-eslint';
import { tableOwners } from './eslint.table-owners.js';

// The contract's channel values (src/channels/channel-types.ts, read as text: this file is plain JavaScript).
const CHANNEL_TYPES = new Set(
  [...readFileSync(`${import.meta.dirname}/src/channels/channel-types.ts`, 'utf8').matchAll(/^\s+'([a-z_]+)',$/gm)].map(
    (m) => m[1],
  ),
);

// Folders under src/channels/ that are a vendor's shared library, not a kind: meta/ holds what Meta's
// products (WhatsApp Cloud, Messenger, Instagram) share, twilio-common/ what Twilio's (SMS, voice) share;
// neither names a kind of its own.
const SHARED_VENDOR_FOLDERS = ['meta', 'twilio-common'];

// The provider kinds, read from their adapter folders: src/channels/<kind, hyphens for underscores>/. A kind
// named as a channel value of the contract (`email`, `messenger`, `instagram`) is the API's word too, which the
// core uses as one: it cannot be told apart from the kind in a string, so it is left out of the rule.
const PROVIDER_KINDS = `/\\b(${readdirSync(`${import.meta.dirname}/src/channels`, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !SHARED_VENDOR_FOLDERS.includes(entry.name))
  .map((entry) => entry.name.replaceAll('-', '_'))
  .filter((kind) => !CHANNEL_TYPES.has(kind))
  .join('|')})\\b/`;

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      '.server-bundle-*/**',
      'coverage/**',
      'web/dist/**',
      'web/src/api/schema.d.ts',
      'test-results/**',
      'playwright-report/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // The dashboard's pages (web/src) are checked with web/tsconfig.json, the nearest to them.
        projectService: { allowDefaultProject: ['*.js', 'bench/lib/*.mjs', 'scripts/*.mjs'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      // Fastify plugins and hooks are async by contract, whether or not they await.
      '@typescript-eslint/require-await': 'off',
      // Kysely's expression builders and the repositories (objects of functions that never use `this`) are
      // destructured by design.
      '@typescript-eslint/unbound-method': 'off',
      // A union narrowed to nothing still prints in an error message of an unreachable branch.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNever: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'max-len': [
        'error',
        { code: 120, ignoreUrls: true, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true },
      ],
    },
  },
  {
    // A channel kind is one adapter folder plus its line in src/channels/registry.ts: the core reaches an
    // adapter only through the registry, and names no provider kind.
    files: ['src/**/*.ts'],
    ignores: ['src/channels/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)channels/[^/]+/',
              message: 'Reach a channel adapter through src/channels/registry.ts (its ChannelKind entry).',
            },
          ],
        },
      ],
    },
  },
  {
    // Modules refuse with domain errors (src/lib/domain-errors.ts); only routes and the HTTP layer speak HTTP.
    files: ['src/modules/**/*.ts'],
    ignores: ['src/modules/**/*routes.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)channels/[^/]+/',
              message: 'Reach a channel adapter through src/channels/registry.ts (its ChannelKind entry).',
            },
            {
              regex: '(^|/)http/errors\\.ts$',
              message: 'Throw a DomainError (src/lib/domain-errors.ts); src/http/errors.ts maps it to a status.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**/*.ts'],
    ignores: ['src/channels/*/**'],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          // An import's path names no kind: registry.ts imports each adapter, and no-restricted-imports
          // keeps the rest of the core from doing so.
          selector: `:not(ImportDeclaration) > Literal[value=${PROVIDER_KINDS}]`,
          message:
            'Provider kinds are named in their adapter folder only: read what is needed from the registry entry.',
        },
        {
          selector: `TemplateElement[value.raw=${PROVIDER_KINDS}]`,
          message:
            'Provider kinds are named in their adapter folder only: read what is needed from the registry entry.',
        },
      ],
    },
  },
  {
    // Each table is written by the module that owns it (docs/ARCHITECTURE.md#modules-and-their-tables); other
    // modules call that module's repository or service.
    files: ['src/modules/**/*.ts', 'src/jobs/**/*.ts', 'src/http/**/*.ts'],
    plugins: { 'table-owners': tableOwners },
    rules: { 'table-owners/writes-own-tables': 'error' },
  },
  {
    // The dashboard's pages: React's rules of hooks.
    files: ['web/src/**/*.{ts,tsx}'],
    ...reactHooks.configs.flat.recommended,
  },
  {
    // Tests read answers' JSON bodies as untyped values and assert on them field by field.
    files: ['test/**/*.ts', 'bench/**/*.ts', 'e2e/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
