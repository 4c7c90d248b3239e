import { readFileSync } from 'node:fs';

/** The package version and licence; package.json ships beside `src/` and `dist/` alike. */
export const { version, license } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string; license: string };
