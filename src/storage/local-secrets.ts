import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * A random secret kept in `dir/name` (mode 0600), made on first use. Only for the embedded
 * development mode: production passes its secrets in the environment.
 */
export async function loadOrCreateSecret(
  dir: string, name: string, make = () => randomBytes(48).toString('base64url'),
): Promise<string> {
  const path = join(dir, name);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const secret = make();
  // `wx` fails if another process created the file first; its value then wins. No newline after
  // the value: a tool that reads the file as the secret (docs/design.md's jose recipe) gets it as is.
  try {
    await writeFile(path, secret, { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    return (await readFile(path, 'utf8')).trim();
  }
}
