import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, lookalikeWarnings, settingNames } from '../../src/config/config.ts';
import { parseOidcSettings } from '../../src/features/oidc/settings.ts';

const base = {
  OIDC_PROVIDERS: 'corp,my-idp', OIDC_REDIRECT_URIS: 'https://app.example.com/done, http://127.0.0.1:3000/cb',
  OIDC_CORP_ISSUER: 'https://login.corp.example', OIDC_CORP_CLIENT_ID: 'id-1', OIDC_CORP_CLIENT_SECRET: 's3cret value',
  OIDC_MY_IDP_ISSUER: 'http://localhost:9000/realms/x', OIDC_MY_IDP_CLIENT_ID: 'id-2', OIDC_MY_IDP_CLIENT_SECRET: 'other',
  OIDC_MY_IDP_TRUST_EMAIL: 'true',
};
const issuer = 'https://accounts.example.com/';

describe('OIDC_* settings', () => {
  it('are off without OIDC_PROVIDERS, and read every provider and the redirect URIs', () => {
    assert.equal(parseOidcSettings({}, 'account-service'), null);
    const settings = parseOidcSettings(base, issuer)!;
    assert.equal(settings.base, 'https://accounts.example.com');
    assert.deepEqual(settings.redirectUris, ['https://app.example.com/done', 'http://127.0.0.1:3000/cb']);
    assert.deepEqual(settings.providers, [
      { name: 'corp', issuer: 'https://login.corp.example', clientId: 'id-1', clientSecret: 's3cret value', trustEmail: false },
      { name: 'my-idp', issuer: 'http://localhost:9000/realms/x', clientId: 'id-2', clientSecret: 'other', trustEmail: true },
    ]);
  });

  it('refuse in one line naming the variable, never repeating a secret', () => {
    const cases: [Record<string, string>, string, RegExp][] = [
      [{ OIDC_PROVIDERS: '', OIDC_REDIRECT_URIS: 'https://a.example/' }, issuer, /^OIDC_REDIRECT_URIS is set but OIDC_PROVIDERS is not$/],
      [{ ...base, OIDC_PROVIDERS: 'Corp' }, issuer, /^OIDC_PROVIDERS must list distinct names/],
      [{ ...base, OIDC_PROVIDERS: 'corp,corp' }, issuer, /^OIDC_PROVIDERS must list distinct names/],
      [base, 'account-service', /^OIDC_PROVIDERS needs TOKEN_ISSUER/],
      [base, 'http://accounts.example.com', /^OIDC_PROVIDERS needs TOKEN_ISSUER/],
      [{ ...base, OIDC_CORP_ISSUER: 'http://login.corp.example' }, issuer, /^OIDC_CORP_ISSUER must be the provider's issuer URL/],
      [{ ...base, OIDC_CORP_ISSUER: 'https://login.corp.example/?x=1' }, issuer, /^OIDC_CORP_ISSUER must be/],
      [{ ...base, OIDC_CORP_ISSUER: 'https://user:pw@login.corp.example' }, issuer, /^OIDC_CORP_ISSUER must be/],
      [{ ...base, OIDC_CORP_CLIENT_ID: '' }, issuer, /^OIDC_CORP_CLIENT_ID must be/],
      [{ ...base, OIDC_CORP_CLIENT_SECRET: 'tab\there' }, issuer, /^OIDC_CORP_CLIENT_SECRET must be 1 to 512 printable characters$/],
      [{ ...base, OIDC_MY_IDP_TRUST_EMAIL: 'yes' }, issuer, /^OIDC_MY_IDP_TRUST_EMAIL must be true or false$/],
      [{ ...base, OIDC_REDIRECT_URIS: '' }, issuer, /^OIDC_REDIRECT_URIS must list/],
      [{ ...base, OIDC_REDIRECT_URIS: 'https://app.example.com/#x' }, issuer, /^OIDC_REDIRECT_URIS must list.*got "https:\/\/app/],
      [{ ...base, OIDC_REDIRECT_URIS: 'http://app.example.com/done' }, issuer, /^OIDC_REDIRECT_URIS must list/],
    ];
    for (const [env, tokenIssuer, message] of cases) {
      assert.throws(() => parseOidcSettings(env, tokenIssuer), (error: unknown) => error instanceof ConfigError && message.test(error.message) && !error.message.includes('\n') && !error.message.includes('tab\there'), JSON.stringify(env));
    }
  });

  it('are known variables: a provider\'s own draw no lookalike warning, a typo of the list does', () => {
    assert.ok(settingNames.includes('OIDC_PROVIDERS') && settingNames.includes('OIDC_REDIRECT_URIS'));
    assert.deepEqual(lookalikeWarnings(['OIDC_CORP_ISSUER', 'OIDC_MY_IDP_CLIENT_SECRET', 'OIDC_PROVIDER'], settingNames).map((line) => line.split(' ')[0]), ['OIDC_PROVIDER']);
  });
});
