/**
 * Read and write concerns. Every write Ferry makes waits for a majority: a checkpoint, a resume
 * token or a commit stage must never cover a write that a failover of the destination could roll
 * back. Metadata is read at majority for the same reason.
 */
import { ReadConcern, type WriteConcernSettings } from 'mongodb';

export const MAJORITY: WriteConcernSettings = Object.freeze({ w: 'majority' });

export const MAJORITY_READ = new ReadConcern('majority');
