import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { openStore } from '../store/index.js';
import { clusterAdminSuite } from '../../test/suites/cluster-admin-suite.js';
import { clusterServiceSuite } from '../../test/suites/cluster-ipam-suite.js';

clusterServiceSuite('memory:', () => openStore('memory:'));
clusterAdminSuite('memory:', () => openStore('memory:'));

const dir = mkdtempSync(join(tmpdir(), 'podipam-cluster-sqlite-'));
let n = 0;
clusterServiceSuite('sqlite:', () => openStore(`sqlite:${join(dir, `t${++n}.db`)}`));
clusterAdminSuite('sqlite:', () => openStore(`sqlite:${join(dir, `t${++n}.db`)}`));
after(() => rmSync(dir, { recursive: true, force: true }));
