import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emailChangeAttemptMail, emailChangeRequestedMail, maskAddress, type UnaddressedMail } from '../../src/mail/messages.ts';
import { createMailRenderer } from '../../src/mail/templates.ts';

const render = (mail: UnaddressedMail) => createMailRenderer().render(mail);

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
  const bob = { email: 'a@example.com', name: 'bob', locale: null };

  it('tell the current address the same whatever the new address holds: they name only the masked address', () => {
    const at = new Date('2026-11-21T10:00:00Z');
    const to = { email: 'old@example.com', name: 'alice', locale: null };
    const expiresAt = new Date(at.getTime() + 30 * 60_000);
    const mail = emailChangeRequestedMail(to, 'new@example.org', 'ABCD-EFGH-JKLM-NPQR', expiresAt, at, '192.0.2.7');
    assert.equal(mail.to, 'old@example.com');
    const content = render(mail);
    assert.match(content.text, /at 2026-11-21T10:00:00Z, from the address 192\.0\.2\.7, .* to n\*\*\*@e\*\*\*\.org\./);
    assert.match(content.text, /ABCD-EFGH-JKLM-NPQR/, 'the code that confirms the change from the current mailbox');
    assert.equal(content.text.includes('new@example.org'), false);
    assert.match(content.html, /account&#39;s/, 'HTML escaped');
  });

  it('greet a pending registration differently from an account', () => {
    assert.match(render(emailChangeAttemptMail(bob, false)).text, /belongs to your account "bob"\./);
    assert.match(render(emailChangeAttemptMail(bob, true)).text, /a registration of the account "bob" that waits for its code\./);
  });
});
