// Rewrites the README's generated tables (options, errors) from src/: see scripts/lib/readme-tables.ts.
// Usage: npm run readme:tables
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { renderReadme } from './lib/readme-tables.js';

const README = fileURLToPath(new URL('../../README.md', import.meta.url));
const before = readFileSync(README, 'utf8');
const after = renderReadme(before);
if (after !== before) writeFileSync(README, after);
console.log(after === before ? 'README tables are up to date' : 'README tables rewritten');
