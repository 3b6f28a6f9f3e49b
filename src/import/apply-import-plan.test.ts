import { after } from 'node:test';
import { openStore } from '../store/index.js';
import { makeTempDir } from '../../test/helpers/tmp.js';
import { importApplySuite } from '../../test/suites/import-apply-suite.js';

importApplySuite('memory:', () => openStore('memory:'));
const dir = makeTempDir('import-apply');
let n = 0;
importApplySuite('sqlite:', () => openStore(`sqlite:${dir.path}/store-${++n}.db`));
after(() => dir.remove());
