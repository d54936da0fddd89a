/**
 * mingo, which evaluates the test cluster's filters, pipelines and expressions, through one module:
 * the build bundles this file (esbuild, `npm run build`) so that a test-cluster process loads one
 * file instead of mingo's ~300 CommonJS modules, which cost ~240 ms of CPU at every start (a third
 * of a node's start; a test run starts hundreds). Import mingo from here only: two copies of it
 * would not share their classes.
 */
export { Aggregator, Context, Query } from 'mingo';
/** The query class without mingo's default operators (a context is given: collation/query.ts). */
export { Query as QueryBase } from 'mingo/query';
export * as accumulatorOperators from 'mingo/operators/accumulator';
export * as expressionOperators from 'mingo/operators/expression';
export * as pipelineOperators from 'mingo/operators/pipeline';
export * as projectionOperators from 'mingo/operators/projection';
export * as queryOperators from 'mingo/operators/query';
export * as windowOperators from 'mingo/operators/window';
export { resolve } from 'mingo/util';
export type { CollationSpec } from 'mingo/types';
