import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { Webhook } from 'standardwebhooks';
import { newWebhookId, signWebhook, webhookHeaders } from '../../src/webhooks/signing.ts';
import { webhookBody } from '../../src/webhooks/events.ts';

const secretOf = (bytes: Buffer) => `whsec_${bytes.toString('base64')}`;

describe('signWebhook', () => {
  it('is v1, and the base64 HMAC-SHA256 of id.timestamp.body', () => {
    const key = randomBytes(32);
    const expected = createHmac('sha256', key).update('msg_1.1700000000.{"a":1}').digest('base64');
    assert.equal(signWebhook([key], 'msg_1', 1700000000, '{"a":1}'), `v1,${expected}`);
  });

  it('signs with every key, space-separated, for a rotation', () => {
    const signature = signWebhook([randomBytes(32), randomBytes(32)], 'msg_1', 1, '{}');
    assert.match(signature, /^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
  });

  it('verifies with the Standard Webhooks library, under either key of a rotation, and under no other', () => {
    const [current, previous] = [randomBytes(32), randomBytes(32)];
    const body = webhookBody('account.activated', '0b7c3f0e-0000-4000-8000-000000000000', new Date());
    const headers = webhookHeaders([current, previous], newWebhookId(), body, new Date());
    assert.deepEqual(new Webhook(secretOf(current)).verify(body, headers), JSON.parse(body));
    assert.deepEqual(new Webhook(secretOf(previous)).verify(body, headers), JSON.parse(body));
    assert.throws(() => new Webhook(secretOf(randomBytes(32))).verify(body, headers), /signature/i);
    assert.throws(() => new Webhook(secretOf(current)).verify(`${body} `, headers), /signature/i, 'a changed body');
  });
});

describe('newWebhookId', () => {
  it('is msg_ and 24 URL-safe characters, with no full stop, different each time', () => {
    const ids = new Set(Array.from({ length: 100 }, newWebhookId));
    assert.equal(ids.size, 100);
    for (const id of ids) assert.match(id, /^msg_[A-Za-z0-9_-]{24}$/);
  });
});

describe('webhookBody', () => {
  it('is the type, the time of the event and the account, with the given data', () => {
    const body = webhookBody('sessions.revoked', 'acc', new Date('2026-11-23T10:00:00.000Z'), { reason: 'signed_out_everywhere' });
    assert.equal(body, '{"type":"sessions.revoked","timestamp":"2026-11-23T10:00:00.000Z","data":{"reason":"signed_out_everywhere","account_id":"acc"}}');
  });

  it('keeps the account when the data names one of its own', () => {
    assert.equal(JSON.parse(webhookBody('account.deleted', 'acc', new Date(), { account_id: 'other' })).data.account_id, 'acc');
  });
});
