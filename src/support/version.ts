import { readFileSync } from 'node:fs';

/** The package version and licence; package.json ships beside `src/` and `dist/` alike. */
const packageJson = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
export const { version, license } = JSON.parse(packageJson) as { version: string; license: string };
