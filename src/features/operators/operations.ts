import { disableAccount, enableAccount } from './disable.ts';
import {
  deleteAsOperator, endSessionsAsOperator, forceReset, removeSecondFactor, unlock, type Operator,
} from './actions.ts';
import {
  findAccount, listAccountEvents, listAccountsPage, listFailed, retryFailed, type Queue,
} from './reads.ts';
import type { UseCaseDeps } from '../../core/transaction.ts';
import {
  ArgumentError, date, noTarget, oneOf, onlyOptions, pageSize, reason, retryTarget, target, text, uuidPattern,
  type Args,
} from './arguments.ts';

/**
 * The operator's operations, written once for the command (command.ts) and the admin API
 * (api.ts, whose document is api-document.ts): each checks its arguments (arguments.ts), calls
 * one use case, and answers a result that both turn into their own form (exit code and JSON
 * line; status and JSON body).
 */
export type Result = { outcome: 'done'; body: unknown } | { outcome: 'not-found'; message: string };

export type Operation = {
  /** The words of the command: `admin disable`, `admin outbox retry`. */
  words: string[];
  /** The admin API's route; `{target}` is the operand. */
  method: 'GET' | 'POST' | 'DELETE';
  path: string;
  summary: string;
  /** The options it takes, and those of them it requires, for the help text and the API document. */
  options: string[];
  required?: string[];
  run(deps: UseCaseDeps, args: Args, from: string): Promise<Result>;
};

const notFound = (what: string): Result => ({ outcome: 'not-found', message: `no ${what}` });
const account = 'account (name, address or id)';

/** An action on one account: the operand, a reason (required or not), and the operator who acts. */
function accountAction(
  words: string[], path: string, summary: string, reasonRequired: boolean,
  act: (deps: UseCaseDeps, identifier: string, operator: Operator) => Promise<{ outcome: string }>,
  method: Operation['method'] = 'POST',
): Operation {
  return {
    words,
    method,
    path,
    summary,
    options: ['reason'],
    required: reasonRequired ? ['reason'] : [],
    async run(deps, args, from) {
      onlyOptions(args, ['reason']);
      const identifier = target(args, account);
      const result = await act(deps, identifier, { address: from, reason: reason(args, reasonRequired) });
      if (result.outcome === 'not-found') return notFound(`account ${identifier}`);
      const { outcome: _, ...body } = result;
      return { outcome: 'done', body: { account: identifier, ...body } };
    },
  };
}

function queueOperations(queue: Queue): Operation[] {
  return [
    {
      words: [queue, 'list-failed'],
      method: 'GET',
      path: `/admin/${queue}/failed`,
      summary: `The failed ${queue === 'outbox' ? 'messages' : 'webhook events'}, oldest first`,
      options: ['limit'],
      async run(deps, args) {
        noTarget(args);
        onlyOptions(args, ['limit']);
        return { outcome: 'done', body: { failed: await listFailed(deps, queue, pageSize(args)) } };
      },
    },
    {
      words: [queue, 'retry'],
      method: 'POST',
      path: `/admin/${queue}/retry`,
      summary: `Queues again one failed ${queue === 'outbox' ? 'message' : 'webhook event'} (target: its id), ` +
        'or every failed one (--all-failed)',
      options: ['all-failed'],
      async run(deps, args) {
        const id = retryTarget(args);
        const retried = await retryFailed(deps, queue, id);
        if (id !== null && retried.length === 0) {
          return notFound(`failed ${queue === 'outbox' ? 'message' : 'webhook event'} ${id}`);
        }
        return { outcome: 'done', body: { retried } };
      },
    },
  ];
}

export const operations: Operation[] = [
  {
    words: ['find'],
    method: 'GET',
    path: '/admin/accounts/{target}',
    summary: 'The account: status, created, last sign-in, second factor, live sessions, sign-in throttle',
    options: [],
    async run(deps, args) {
      onlyOptions(args, []);
      const identifier = target(args, account);
      const found = await findAccount(deps, identifier);
      return found === null ? notFound(`account ${identifier}`) : { outcome: 'done', body: found };
    },
  },
  {
    words: ['list'],
    method: 'GET',
    path: '/admin/accounts',
    summary: 'Accounts, newest first, a page at a time (--limit, at most 100; --cursor: the next of the previous page)',
    options: ['status', 'created-after', 'created-before', 'limit', 'cursor'],
    async run(deps, args) {
      noTarget(args);
      onlyOptions(args, ['status', 'created-after', 'created-before', 'limit', 'cursor']);
      const cursor = text(args, 'cursor');
      if (cursor !== null && !uuidPattern.test(cursor)) {
        throw new ArgumentError('--cursor must be the next of a previous page');
      }
      const filter = {
        status: oneOf(args, 'status', ['active', 'disabled'] as const),
        createdAfter: date(args, 'created-after'),
        createdBefore: date(args, 'created-before'),
        limit: pageSize(args),
        cursor,
      };
      return { outcome: 'done', body: await listAccountsPage(deps, filter) };
    },
  },
  accountAction(
    ['disable'], '/admin/accounts/{target}/disable',
    'Disables the account and ends its sessions; sign-in, refresh and bearer calls are refused', true,
    (deps, id, operator) => disableAccount(deps, id, { ...operator, reason: operator.reason! }),
  ),
  accountAction(['enable'], '/admin/accounts/{target}/enable', 'Enables a disabled account', false, enableAccount),
  accountAction(
    ['end-sessions'], '/admin/accounts/{target}/end-sessions', 'Ends every session of the account', false,
    endSessionsAsOperator,
  ),
  accountAction(
    ['reset'], '/admin/accounts/{target}/reset',
    'Cancels the password, ends every session, removes every passkey and mails a reset code',
    false, forceReset,
  ),
  accountAction(
    ['unlock'], '/admin/accounts/{target}/unlock', 'Clears the sign-in throttle of a name or address', false, unlock,
  ),
  accountAction(
    ['remove-second-factor'], '/admin/accounts/{target}/remove-second-factor',
    'Removes the second factor and its recovery codes', false, removeSecondFactor,
  ),
  accountAction(
    ['delete'], '/admin/accounts/{target}', 'Deletes the account, as its owner would', false, deleteAsOperator,
    'DELETE',
  ),
  {
    words: ['events'],
    method: 'GET',
    path: '/admin/accounts/{target}/events',
    summary: "The account's latest security events, with who acted and why",
    options: ['limit'],
    async run(deps, args) {
      onlyOptions(args, ['limit']);
      const identifier = target(args, account);
      const events = await listAccountEvents(deps, identifier, pageSize(args));
      return events === null ? notFound(`account ${identifier}`) : { outcome: 'done', body: { events } };
    },
  },
  ...queueOperations('outbox'),
  ...queueOperations('webhooks'),
];
