// The README's option and error tables are the option table and the error catalogue: a change to
// either that is not carried into the README (npm run readme:tables) fails here.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { generatedSection, README_TABLES } from '../../scripts/lib/readme-tables.js';
import { ERROR_CODES } from '../../src/errors/catalogue.js';
import { OPTION_NAMES, OPTIONS } from '../../src/config/options.js';

const README = readFileSync(fileURLToPath(new URL('../../../README.md', import.meta.url)), 'utf8');

describe('the README', () => {
  for (const [name, render] of Object.entries(README_TABLES)) {
    it(`has the ${name} table as src/ defines it`, () => {
      const section = generatedSection(README, name);
      assert.notEqual(section, undefined, `README lacks <!-- generated:${name} -->`);
      assert.equal(section, render(), `the README's ${name} table has drifted: run npm run readme:tables`);
    });
  }

  it('names every error code and every option in its tables', () => {
    const tables = Object.keys(README_TABLES)
      .map((name) => generatedSection(README, name) ?? '')
      .join('\n');
    for (const code of ERROR_CODES) assert.match(tables, new RegExp(`\`${code}\``), code);
    for (const name of OPTION_NAMES) {
      const env = (OPTIONS[name] as { env?: string }).env;
      assert.ok(tables.includes(`--${name}`) || (env !== undefined && tables.includes(env)), name);
    }
  });
});
