// The lint rules that keep the floors of src/ (eslint.config.js): fixture files laid out like src/
// in a temporary directory, linted with the project's own configuration. A cycle, an import of a
// higher floor, an import between two phases and a driver import outside src/cluster/ each fail;
// an import of a lower floor passes.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ESLint } from 'eslint';

const FILES: Record<string, string> = {
  'tsconfig.json': JSON.stringify({
    compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true },
    include: ['src'],
  }),
  // A cycle within a folder.
  'src/domain/a.ts': "import { b } from './b.js';\nexport const a = (): number => b() + 1;\n",
  'src/domain/b.ts': "import { a } from './a.js';\nexport const b = (): number => (a.length > 0 ? 1 : 0);\n",
  // The ground floor importing a higher one.
  'src/cluster/connect.ts': 'export const connect = (): number => 1;\n',
  'src/domain/upward.ts': "import { connect } from '../cluster/connect.js';\nexport const upward = connect();\n",
  // One phase importing another.
  'src/cea/lanes.ts': 'export const lanes = 2;\n',
  'src/copy/sideways.ts': "import { lanes } from '../cea/lanes.js';\nexport const sideways = lanes;\n",
  // A phase importing the planning floor below it: allowed.
  'src/plan/namespaces.ts': 'export const selects = (): boolean => true;\n',
  'src/copy/downward.ts': "import { selects } from '../plan/namespaces.js';\nexport const downward = selects();\n",
  // The driver used outside the cluster layer (types alone are fine).
  'src/plan/driver.ts': "import { MongoClient } from 'mongodb';\nexport const client = new MongoClient('mongodb://h');\n",
  'src/plan/driver-types.ts': "import type { MongoClient } from 'mongodb';\nexport type Client = MongoClient;\n",
};

let root: string;
const results = new Map<string, string[]>();

before(async () => {
  root = mkdtempSync(join(tmpdir(), 'ferry-lint-'));
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), text);
  }
  const { ferryLintConfig } = (await import(new URL('../../../eslint.config.js', import.meta.url).href)) as {
    ferryLintConfig(root: string): unknown;
  };
  const eslint = new ESLint({ cwd: root, overrideConfigFile: true, overrideConfig: ferryLintConfig(root) as never });
  for (const result of await eslint.lintFiles(['src/**/*.ts'])) {
    results.set(
      result.filePath.slice(root.length + 1),
      result.messages.map((message) => `${message.ruleId}: ${message.message}`),
    );
  }
});

after(() => rmSync(root, { recursive: true, force: true }));

function rulesOf(path: string): string[] {
  return (results.get(path) ?? []).map((message) => message.split(':')[0]!);
}

describe('lint', () => {
  it('fails on an import cycle', () => {
    assert.ok(rulesOf('src/domain/a.ts').includes('import-x/no-cycle'), JSON.stringify(results.get('src/domain/a.ts')));
  });

  it('fails on an import of a higher floor, naming the floors', () => {
    assert.ok(rulesOf('src/domain/upward.ts').includes('import-x/no-restricted-paths'));
    assert.match(results.get('src/domain/upward.ts')!.join('\n'), /src\/domain is on floor 0/);
  });

  it('fails when one phase imports another', () => {
    assert.ok(rulesOf('src/copy/sideways.ts').includes('import-x/no-restricted-paths'));
  });

  it('fails on a value import of the driver outside src/cluster/, and lets its types through', () => {
    assert.ok(rulesOf('src/plan/driver.ts').includes('@typescript-eslint/no-restricted-imports'));
    assert.deepEqual(results.get('src/plan/driver-types.ts'), []);
  });

  it('passes an import of a lower floor', () => {
    assert.deepEqual(results.get('src/copy/downward.ts'), []);
    assert.deepEqual(results.get('src/plan/namespaces.ts'), []);
  });
});
