import type { Account } from './accounts.ts';
import { checkPasswordAndFactor } from './factor.ts';
import { consumeCodes, hashCode, type CodePurpose } from './one-time-codes.ts';
import { checkCallerPassword, type CallerCheck } from './password-check.ts';
import type { Client, UseCaseDeps } from './transaction.ts';
import type { Transaction } from '../storage/db.ts';

/**
 * What a signed-in caller must show for an act, beyond the live session that every act needs:
 * the password; the second factor too, when the account has one active; and the mailbox (a code
 * of `mailbox` that an earlier step mailed to the account's address, used up here). The rule:
 * what the owner's password reset cannot undo needs the mailbox, so that a password thief can
 * never make anything permanent.
 */
export type Proof = { password?: true; factor?: true; mailbox?: CodePurpose };

/**
 * Every act of a signed-in caller, one row each; each authenticated route names its act
 * (routes.ts), and a test holds the two together. An act with a mailbox takes two steps: the
 * first checks the password (and the factor) and mails the code, the second uses it up. What a
 * reset undoes (it sets a new password and ends every session): sessions, the locale, a
 * passkey's name, the password. What it does not: a second factor, a passkey, the address, the
 * account's existence.
 */
export const proofs = {
  'read-account': {},
  'list-events': {},
  'list-sessions': {},
  'end-session': {},
  'end-every-session': {},
  'set-locale': {},
  'list-passkeys': {},
  'rename-passkey': {},
  'change-password': { password: true },
  // A removed passkey or factor is added back by the owner with the mailbox; neither locks the owner out.
  'remove-passkey': { password: true },
  'disable-second-factor': { password: true, factor: true },
  // Enabling needs no factor: there is none while it is enabled. The confirmation also takes the new factor's code.
  'enable-second-factor': { password: true, mailbox: 'totp' },
  'add-passkey': { password: true, factor: true, mailbox: 'passkey' },
  // Confirmed without a session, by a code mailed to the new address and this one to the current address.
  'change-address': { password: true, factor: true, mailbox: 'email-change-current' },
  'delete-account': { password: true, factor: true, mailbox: 'deletion' },
  'list-identities': {},
  // An identity, like a passkey, signs in without the password and outlives a reset.
  'link-identity': { password: true, factor: true, mailbox: 'identity' },
  'unlink-identity': { password: true },
  // A copy cannot be taken back, but it holds only what a session reads and the owner is told of it.
  'export-account': { password: true, factor: true },
  // Notices off hides later sign-ins from the owner; a reset turns them on again.
  'set-notices': { password: true },
} as const satisfies Record<string, Proof>;

export type Act = keyof typeof proofs;

/**
 * Checks the password (and the factor) that `act` needs, under the throttle of the account itself;
 * an act that needs neither passes. The mailbox, where the act needs it, is used up in the act's
 * transaction (useMailbox).
 */
export function requireProof(
  deps: UseCaseDeps, caller: { account: Account; sessionId: string }, act: Act,
  evidence: { password: string; otp?: string | undefined }, client: Client,
): Promise<CallerCheck> {
  const proof: Proof = proofs[act];
  if (proof.password !== true) return Promise.resolve({ outcome: 'valid', proof: null });
  if (proof.factor === true) return checkPasswordAndFactor(deps, caller, evidence.password, evidence.otp, client);
  return checkCallerPassword(deps, caller, evidence.password, client);
}

/**
 * Uses up the code that `act` needs from the mailbox, with every other code of its purpose: false
 * when `code` was not among them alive, and the caller rolls back, so that a wrong code uses
 * nothing up (one-time-codes.ts consumeCodes).
 */
export function useMailbox(tx: Transaction, act: Act, accountId: string, code: string, now: Date): Promise<boolean> {
  const purpose = (proofs[act] as Proof).mailbox;
  if (purpose === undefined) throw new Error(`the act ${act} needs no mailbox`);
  return consumeCodes(tx, accountId, purpose, hashCode(code), now);
}
