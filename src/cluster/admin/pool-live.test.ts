import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { openStore } from '../../store/index.js';
import { clusterPoolLiveSuite } from '../../../test/suites/cluster-pool-live-suite.js';

clusterPoolLiveSuite('memory:', () => openStore('memory:'));
const dir = mkdtempSync(join(tmpdir(), 'podipam-pool-live-'));
let n = 0;
clusterPoolLiveSuite('sqlite:', () => openStore(`sqlite:${join(dir, `t${++n}.db`)}`));
after(() => rmSync(dir, { recursive: true, force: true }));
