// ESLint (flat config) with typescript-eslint's type-aware rules. `npm run lint` runs it;
// `npm test` runs it too (scripts/test.mjs). Every .ts file is linted with the type information
// of the tsconfig nearest to it (projectService: the root tsconfig.json, or the dashboard's own);
// the plain JavaScript of scripts/ and bin/ gets the rules that need no types.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'test-output/**', '.eslintcache', '.image/**'] },
  js.configs.recommended,
  {
    files: ['**/*.ts'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      // Promises: a forgotten one is a bug. `void p` marks a deliberate fire-and-forget.
      // node:test's test()/describe()/it() return promises the runner awaits itself.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { ignoreVoid: true, allowForKnownSafeCalls: [{ from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] }] },
      ],
      // A Node callback that returns a promise (server.on('request', async …)) is how the
      // http servers and timers here are written; an attribute/argument check would flag
      // every one. Conditionals and spreads of promises are still errors.
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      // TODO(lead, issue 19): make these six 'error' once the moves have landed. On the tree
      // before the refactor they report ~640 findings, ~540 of them in test/ (JSON.parse output
      // and `as any` probes read without a type): see the closing note for the counts.
      '@typescript-eslint/no-unsafe-assignment': 'warn',
      '@typescript-eslint/no-unsafe-call': 'warn',
      '@typescript-eslint/no-unsafe-member-access': 'warn',
      '@typescript-eslint/no-unsafe-return': 'warn',
      '@typescript-eslint/no-unsafe-argument': 'warn',
      '@typescript-eslint/no-explicit-any': 'warn',
      // An error thrown from a catch carries the caught one as `cause` (error classes take ErrorOptions).
      'preserve-caught-error': 'error',
      // An `async` implementation of a Promise-returning interface (the stores, fakes in tests)
      // need not await: `async` is what turns its throw into a rejection.
      '@typescript-eslint/require-await': 'off',
      // The cluster planner throws NeedRead/NeedList (not Errors) as its "read this and re-run"
      // signal, and the plugin rethrows the failure it caught (unknown) unchanged.
      '@typescript-eslint/only-throw-error': ['error', { allow: [{ from: 'file', name: ['NeedRead', 'NeedList'] }], allowThrowingUnknown: true }],
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
      // Arrays in messages (`left: ${cidrs}`) print as a, b, c: that is what the tests want.
      '@typescript-eslint/restrict-template-expressions': ['error', { allowArray: true, allowNumber: true, allowBoolean: true, allowNullish: true }],
      // String(x) of a value of unknown shape (an error body, a log field) is deliberate.
      '@typescript-eslint/no-base-to-string': 'off',
      // `import('…').T` in an annotation stays allowed: the lazily loaded modules are named where used.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports', disallowTypeAnnotations: false }],
      // `_name` is the mark of a parameter kept for its position (an interface's signature).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true }],
    },
  },
  {
    files: ['**/*.js', '**/*.mjs', 'bin/*'],
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: {
        process: 'readonly',
        console: 'readonly',
        URL: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        fetch: 'readonly',
        AbortController: 'readonly',
        TextDecoder: 'readonly',
        TextEncoder: 'readonly',
        structuredClone: 'readonly',
        queueMicrotask: 'readonly',
        setImmediate: 'readonly',
      },
    },
    rules: {
      'no-unused-vars': ['error', { argsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
);
