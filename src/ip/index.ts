export * from './addr.js';
export * from './prefix.js';
export * from './range.js';
