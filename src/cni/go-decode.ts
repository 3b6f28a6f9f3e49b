/** Go's JSON decoding rules now live in src/model/go-decode.ts (the model's route parser reads with them); kept here for the importers of src/cni. */
export { goField, isObject, jsonTypeName } from '../model/go-decode.js';
