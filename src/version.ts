import { readFileSync } from 'node:fs';

/** The package version; package.json ships beside `src/` and `dist/` alike. */
export const version = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
