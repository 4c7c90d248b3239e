import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emailChangeAttemptMail, emailChangeRequestedMail, maskAddress } from '../../src/mail/messages.ts';

describe('maskAddress', () => {
  it('keeps the first letter of the local part and of the domain, and the top-level domain', () => {
    assert.equal(maskAddress('jane.doe@example.com'), 'j***@e***.com');
    assert.equal(maskAddress('Moved@Example.org'), 'M***@E***.org');
    assert.equal(maskAddress('a@b.co.uk'), 'a***@b***.uk');
  });

  it('shows no part of a domain without a dot, or of an address literal', () => {
    assert.equal(maskAddress('root@localhost'), 'r***@l***');
    assert.equal(maskAddress('x@[192.0.2.1]'), 'x***@[***');
  });
});

describe('e-mail change messages', () => {
  it('tell the current address the same whatever the new address holds: they name only the masked address', () => {
    const at = new Date('2026-11-21T10:00:00Z');
    const mail = emailChangeRequestedMail('old@example.com', 'alice', 'new@example.org', at, '192.0.2.7');
    assert.equal(mail.to, 'old@example.com');
    assert.match(mail.content.text, /at 2026-11-21T10:00:00Z, from the address 192\.0\.2\.7, .* to n\*\*\*@e\*\*\*\.org\./);
    assert.equal(mail.content.text.includes('new@example.org'), false);
    assert.match(mail.content.html, /account&#39;s/, 'HTML escaped');
  });

  it('greet a pending registration differently from an account', () => {
    assert.match(emailChangeAttemptMail('a@example.com', 'bob', false).content.text, /belongs to your account "bob"/);
    assert.match(emailChangeAttemptMail('a@example.com', 'bob', true).content.text, /a registration of the account "bob" that waits for its code/);
  });
});
