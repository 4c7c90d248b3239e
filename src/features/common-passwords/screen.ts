import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readAtMost } from '../../support/bounded-body.ts';
import type { Logger } from '../../telemetry/log.ts';

/**
 * What a new password (registration, change, reset) is refused for, beyond the spec's pattern: a
 * reason in words, or null to accept it. It reads the password alone, never an account, and
 * costs no hash, so its answer tells nothing about any account.
 */
export type PasswordScreen = (password: string) => Promise<string | null>;

/** The list that ships with the service (data/README.md says where it comes from and how to make it again). */
export const commonPasswordsFile = new URL('../../../data/common-passwords.txt', import.meta.url);

/** A range service's answer is a few tens of KiB; a longer one is not read. */
const maxRangeBytes = 1024 * 1024;
const rangeTimeoutMs = 2_000;

/**
 * The common passwords of `file` (one a line) of 4 to 32 characters, in their comparable form:
 * `Password1` is refused as `password1` is. The shorter ones are words that a disguise hides.
 */
export function readCommonPasswords(file: URL | string = commonPasswordsFile): Set<string> {
  const lines = readFileSync(file, 'utf8').split('\n').map((line) => line.replace(/\r$/, ''));
  return new Set(lines.filter((line) => [...line].length >= 4 && [...line].length <= 32).map(comparable));
}

/**
 * The word under the commonest disguises, in three readings: digits and symbols at the end
 * dropped (`Summer2024!`), then digits and symbols read as the letters they stand for
 * (`P@ssw0rd`), `1` as an i or an l. Only a word of four letters or more is looked up.
 */
function disguisedWords(password: string): string[] {
  const base = password.replace(/[\d\W_]+$/u, '');
  const read = (one: string) => base.replace(/[@4]/g, 'a').replace(/3/g, 'e').replace(/0/g, 'o')
    .replace(/[$5]/g, 's').replace(/7/g, 't').replace(/[1!|]/g, one);
  return [base, read('i'), read('l')].filter((word) => word.length >= 4);
}

/** Cyrillic and Greek letters drawn like Latin ones, each to the Latin letter it passes for. */
const lookalikes = new Map([...'АВЕКМНОРСТХУІЈЅаеорсухіјѕһӏԁԛԝΑΒΕΖΗΙΚΜΝΟΡΤΥΧαιοκνρυχ']
  .map((char, index) => [char, 'ABEKMHOPCTXYIJSaeopcyxijshldqwABEZHIKMNOPTYXaiokvpux'[index]!]));

/**
 * A password as the list is compared with it: compatibility forms folded (full-width letters),
 * letters of other scripts that pass for Latin ones read as those, lower case, and without
 * spaces or invisible characters, so that `Pass Word` and a Cyrillic `раssword` are `password`.
 */
export function comparable(password: string): string {
  return password.normalize('NFKC').replace(/[\u0370-\u03ff\u0400-\u052f]/gu, (char) => lookalikes.get(char) ?? char)
    .toLowerCase().replace(/[\s\u00ad\u200b-\u200f\u2060\ufeff]/gu, '');
}

/**
 * Refuses the common passwords; with `breachedUrl`, also a password that a range service in the
 * form of the Pwned Passwords range API lists: only the first five hex digits of its SHA-1 leave
 * the service (k-anonymity), padded answers asked for. A range service that fails or is slow lets
 * the password through and is logged: registration stays available while it is away.
 */
export function createPasswordScreen(common: Set<string>, breachedUrl: string | null, log: Logger): PasswordScreen {
  return async (password) => {
    const folded = comparable(password);
    if (common.has(folded) || disguisedWords(folded).some((word) => common.has(word))) {
      return 'is one of the most common passwords, which are tried first: choose a less common one';
    }
    if (breachedUrl === null) return null;
    const breached = await isBreached(breachedUrl, password.normalize('NFC')).catch((error: unknown) => {
      log.warn('the breached-password check was skipped: the range service failed', { reason: String(error) });
      return false;
    });
    return breached ? 'has appeared in a data breach, so it is tried first: choose another' : null;
  };
}

/** Whether the range of the password's SHA-1 lists its suffix with a count above zero (padding counts 0). */
async function isBreached(breachedUrl: string, password: string): Promise<boolean> {
  const hash = createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
  const response = await fetch(`${breachedUrl}${hash.slice(0, 5)}`, {
    headers: { 'Add-Padding': 'true' }, redirect: 'error', signal: AbortSignal.timeout(rangeTimeoutMs),
  });
  if (!response.ok) throw new Error(`the range service answered ${response.status}`);
  const body = await readAtMost(response, maxRangeBytes);
  if (body === null) throw new Error(`the range service answered more than ${maxRangeBytes} bytes`);
  const suffix = hash.slice(5);
  return body.toString('utf8').split('\n').some((line) => {
    const [listed = '', count = '0'] = line.trim().split(':');
    return listed.toUpperCase() === suffix && Number(count) > 0;
  });
}
