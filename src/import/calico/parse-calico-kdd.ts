/**
 * Calico's Kubernetes datastore (KDD) as `kubectl get ippools.crd.projectcalico.org,
 * ipamblocks.crd.projectcalico.org,blockaffinities.crd.projectcalico.org,
 * ipamhandles.crd.projectcalico.org -o json` prints it: a `List` whose items are IPPool,
 * IPAMBlock, BlockAffinity and IPAMHandle objects (apiVersion crd.projectcalico.org/v1, or
 * projectcalico.org/v3 where Calico serves its v3 API as CRDs). Pure: text → CalicoState →
 * ImportPlan (calico-plan.ts). Object names encode CIDRs lossily (`10-244-0-0-26`); only the
 * specs are read. A record that cannot be decoded, or an item of another kind, is one 'invalid'
 * conflict naming it; a text that is not such a List throws CalicoSourceError.
 */
import type { ImportPlan } from '../import-plan.js';
import { type CalicoPlanOptions, planCalicoImport } from './calico-plan.js';
import {
  type CalicoAffinity,
  type CalicoBlock,
  type CalicoHandle,
  type CalicoPool,
  CalicoRecordError,
  type CalicoState,
  asObject,
  decodeCalicoAffinitySpec,
  decodeCalicoBlock,
  decodeCalicoHandle,
  decodeCalicoPool,
} from './calico-records.js';

/** The source as a whole is not what the importer reads (not JSON, not a List). */
export class CalicoSourceError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'CalicoSourceError';
  }
}

const PLURAL: Readonly<Record<string, string>> = { IPPool: 'ippools', IPAMBlock: 'ipamblocks', BlockAffinity: 'blockaffinities', IPAMHandle: 'ipamhandles' };

/** Decodes the List's items; `what` names the input in errors (a file name, "stdin"). */
export function readCalicoKdd(text: string, what: string): CalicoState {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new CalicoSourceError(
      `${what} is not JSON (${(e as Error).message}); give the output of kubectl get ippools.crd.projectcalico.org,ipamblocks.crd.projectcalico.org,blockaffinities.crd.projectcalico.org,ipamhandles.crd.projectcalico.org -o json`,
      { cause: e },
    );
  }
  const items = doc !== null && typeof doc === 'object' && !Array.isArray(doc) ? (doc as Record<string, unknown>).items : undefined;
  if (!Array.isArray(items)) {
    throw new CalicoSourceError(`${what} is not a Kubernetes List (no "items" array); give the output of kubectl get … -o json`);
  }
  const pools: CalicoPool[] = [];
  const blocks: CalicoBlock[] = [];
  const affinities: CalicoAffinity[] = [];
  const handles: CalicoHandle[] = [];
  const malformed: CalicoRecordError[] = [];
  items.forEach((item: unknown, i) => {
    let source = `items[${i}]`;
    try {
      const o = asObject(source, 'the item', item);
      const kind = typeof o.kind === 'string' ? o.kind : '';
      const apiVersion = typeof o.apiVersion === 'string' ? o.apiVersion : '';
      const meta = o.metadata !== null && typeof o.metadata === 'object' ? (o.metadata as Record<string, unknown>) : {};
      const name = typeof meta.name === 'string' ? meta.name : '';
      const group = apiVersion.split('/')[0] ?? '';
      if (PLURAL[kind] === undefined || (group !== 'crd.projectcalico.org' && group !== 'projectcalico.org')) {
        throw new CalicoRecordError(
          source,
          `kind ${JSON.stringify(kind)} of apiVersion ${JSON.stringify(apiVersion)} is not a Calico IPPool, IPAMBlock, BlockAffinity or IPAMHandle`,
        );
      }
      source = `${PLURAL[kind]}.${group} ${name || `items[${i}]`}`;
      if (name === '') throw new CalicoRecordError(source, 'metadata.name is absent');
      const spec = asObject(source, 'spec', o.spec);
      switch (kind) {
        case 'IPPool':
          pools.push(decodeCalicoPool(source, name, spec));
          break;
        case 'IPAMBlock':
          blocks.push(decodeCalicoBlock(source, spec, 'spec.'));
          break;
        case 'BlockAffinity':
          affinities.push(decodeCalicoAffinitySpec(source, spec));
          break;
        case 'IPAMHandle': {
          const id = spec.handleID;
          if (typeof id !== 'string' || id === '') throw new CalicoRecordError(source, `spec.handleID is ${JSON.stringify(id)}, not a non-empty string`);
          handles.push(decodeCalicoHandle(source, id, spec, 'spec.'));
          break;
        }
      }
    } catch (e) {
      if (!(e instanceof CalicoRecordError)) throw e;
      malformed.push(e);
    }
  });
  return { pools, blocks, affinities, handles, malformed };
}

/** The plan of a KDD List (see readCalicoKdd and planCalicoImport). */
export function parseCalicoKdd(text: string, what: string, options?: CalicoPlanOptions): ImportPlan {
  return planCalicoImport('calico-kdd', readCalicoKdd(text, what), options);
}
