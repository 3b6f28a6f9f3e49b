import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { redactStoreUrl } from './redact-store-url.js';

describe('redactStoreUrl', () => {
  it('hides the password of etcd and etcds URLs, and nothing else', () => {
    assert.equal(redactStoreUrl('etcd://root:s3cret@10.0.0.5:2379,10.0.0.6:2379'), 'etcd://root:***@10.0.0.5:2379,10.0.0.6:2379');
    assert.equal(redactStoreUrl('ETCDS://u:p@ss/w?rd@h:1?ca=/ca.pem'), 'ETCDS://u:***@h:1?ca=/ca.pem');
    assert.equal(redactStoreUrl('etcd://user@h:1'), 'etcd://user@h:1');
    for (const url of ['etcd://h:1', 'etcds://h:1?ca=/x', 'sqlite:/var/lib/a@b:c.db', 'memory:x', 'nonsense']) {
      assert.equal(redactStoreUrl(url), url);
    }
  });
});
