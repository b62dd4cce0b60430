import type { SampleStoreLocation } from '../core';
import { DirectorySampleStore } from './directory';
import { S3SampleStore } from './s3';
import type { SampleStore } from './store';

/** The sample store at `where` (derived.sample_store). */
export const openSampleStore = (where: SampleStoreLocation): SampleStore => (where.kind === 'dir' ? new DirectorySampleStore(where.path) : new S3SampleStore(where));
