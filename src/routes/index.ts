import type { Route } from '../http/router.ts';
import { activateAccount } from './activate-account.ts';
import { changePassword } from './change-password.ts';
import { getAccount } from './get-account.ts';
import { checkHealth, checkReadiness } from './health.ts';
import { issueToken } from './issue-token.ts';
import { requestRegistrationCode } from './request-registration-code.ts';

export const routes: readonly Route[] = [
  { method: 'POST', path: '/acc/reg/code', handler: requestRegistrationCode, rateLimited: true },
  { method: 'POST', path: '/acc/reg', handler: activateAccount, rateLimited: true },
  { method: 'PUT', path: '/acc/me/pwd', handler: changePassword },
  { method: 'GET', path: '/acc/me', handler: getAccount },
  { method: 'POST', path: '/auth/token', handler: issueToken, rateLimited: true, errorFormat: 'oauth' },
  { method: 'GET', path: '/healthz', handler: checkHealth },
  { method: 'GET', path: '/readyz', handler: checkReadiness },
];
