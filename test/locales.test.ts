import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { canonicalLocale, localeChain, negotiateLocale } from '../src/config/locales.ts';

describe('canonicalLocale', () => {
  it('takes a language with an optional script and region, in canonical case', () => {
    assert.equal(canonicalLocale('de'), 'de');
    assert.equal(canonicalLocale('DE-at'), 'de-AT');
    assert.equal(canonicalLocale('zh-hant-tw'), 'zh-Hant-TW');
    assert.equal(canonicalLocale('es-419'), 'es-419');
  });

  it('refuses anything else, and anything long', () => {
    for (const tag of ['', 'd', 'de_DE', 'de-', 'deutsch', 'en-US-x-private', 'de-DE-1996', 'x'.repeat(1000), '<script>', 'de\nAT']) {
      assert.equal(canonicalLocale(tag), null, tag.slice(0, 20));
    }
  });

  it('falls from a region to its language', () => {
    assert.deepEqual(localeChain('de-AT'), ['de-AT', 'de']);
    assert.deepEqual(localeChain('de'), ['de']);
    assert.deepEqual(localeChain(null), []);
  });
});

describe('negotiateLocale', () => {
  const available = ['en', 'de', 'pt-BR'];
  it('picks the best-quality tag that the templates have, a region falling back to its language', () => {
    assert.equal(negotiateLocale('fr;q=0.9, de-CH;q=0.8, en;q=0.1', available), 'de');
    assert.equal(negotiateLocale('pt-br', available), 'pt-BR');
    assert.equal(negotiateLocale('en;q=0.5, de', available), 'de');
    assert.equal(negotiateLocale('pt-PT', available), null, 'a language alone does not reach another region');
  });

  it('is null without a match, without a header, and for a malformed one; it reads a bounded part', () => {
    assert.equal(negotiateLocale(undefined, available), null);
    assert.equal(negotiateLocale('fr, it', available), null);
    assert.equal(negotiateLocale('de;q=0, *', available), null);
    assert.equal(negotiateLocale(';;;,,,q=,de;q=abc', available), null);
    assert.equal(negotiateLocale(`${'fr, '.repeat(200)}de`, available), null, 'past the bound');
  });
});
