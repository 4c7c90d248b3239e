/**
 * The round trips each path may send to PostgreSQL, BEGIN and COMMIT included: the table in
 * docs/performance.md ("Round trips"). test/e2e/round-trips.test.ts holds every path to it, and
 * the bench reports it next to each path's database CPU.
 */
export const roundTripBudgets: Record<string, number> = {
  'sign-in': 10,
  refresh: 1,
  activation: 2,
  'registration request': 6,
  'reset request': 4,
  'reset confirmation': 11,
  'password change': 13,
  'deletion request': 15,
  deletion: 16,
  'revoke one session': 2,
  'revoke every session': 5,
  'revoke a token (RFC 7009)': 2,
  /** Not a write, for comparison: authentication reads the account and the session in one statement. */
  'GET /acc/me': 1,
};
