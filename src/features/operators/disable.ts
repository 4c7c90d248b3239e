import { markDisabled, markEnabled } from '../../core/disabling.ts';
import { deleteCodes } from '../../core/one-time-codes.ts';
import { recordOperatorEvent } from '../../core/security-events.ts';
import { endSessions } from '../../core/end-sessions.ts';
import { onAccount, operatorData, type Operator, type OperatorOutcome } from './actions.ts';
import type { UseCaseDeps } from '../../core/transaction.ts';

/**
 * Disables the account for the operator's reason, and ends every session in the same
 * transaction, under the account row (onAccount): every access token is refused at once (each
 * bearer request reads its session, core/sessions.ts findSessionAccount), no refresh token is left,
 * and startSession refuses a disabled account inside its statement. A sign-in or refresh that
 * took the row first commits before, and its session ends here; one that comes after finds the
 * account disabled. Its reset codes go, and none is issued while it stays disabled
 * (core/reset-codes.ts). `changed` is false when it was disabled already (nothing is written).
 */
export function disableAccount(
  deps: UseCaseDeps, identifier: string, operator: Operator & { reason: string },
): Promise<OperatorOutcome<{ changed: boolean; ended: number }>> {
  return onAccount(deps, identifier, async (tx, account, now) => {
    if (!(await markDisabled(tx, account.id, operator.reason, now))) return { changed: false, ended: 0 };
    const webhook = deps.webhooks.event('account.disabled', account.publicId, now, operatorData(operator));
    const event = { type: 'account-disabled' as const, clientAddress: operator.address, sessionId: null, operator };
    const accountId = account.id;
    const ended = await endSessions(tx, { accountId, sessionId: null, event, webhook, record: 'always', now });
    // A reset code mailed before goes too: no one sets the password the account will have when enabled.
    await deleteCodes(tx, accountId, 'reset');
    return { changed: true, ended: ended.length };
  });
}

/** Enables a disabled account again: its owner can sign in with the password it had. */
export function enableAccount(
  deps: UseCaseDeps, identifier: string, operator: Operator,
): Promise<OperatorOutcome<{ changed: boolean }>> {
  return onAccount(deps, identifier, async (tx, account, now) => {
    if (!(await markEnabled(tx, account.id))) return { changed: false };
    await recordOperatorEvent(tx, account.id, 'account-enabled', operator, now);
    await deps.webhooks.enqueue(tx, 'account.enabled', account.publicId, now, operatorData(operator));
    return { changed: true };
  });
}
