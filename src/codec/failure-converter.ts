/**
 * The failure converter of encrypted runs (temporal.encryption). By default an
 * error's message and stack trace stay in the clear in the failure Temporal
 * stores, and they can carry what an engine or env said about a sample. With
 * encodeCommonAttributes they go into a payload, which the payload codec then
 * seals; Temporal keeps "Encoded failure" in their place. The worker loads it
 * by path (workflow code runs in a bundle that must import it); clients take
 * the object, so they read the messages back.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
