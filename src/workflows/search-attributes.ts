/**
 * rollflow's custom search attributes, so the UI can list every workflow of
 * one run or one kind. temporal/search-attributes.txt registers the same
 * names with the dev server; a unit test keeps the two lists equal.
 */
import { defineSearchAttributeKey } from '@temporalio/common';

export const RUN_ID = defineSearchAttributeKey('RollflowRunId', 'KEYWORD');
export const KIND = defineSearchAttributeKey('RollflowKind', 'KEYWORD');
export const STEP = defineSearchAttributeKey('RollflowStep', 'INT');
export const POLICY_VERSION = defineSearchAttributeKey('RollflowPolicyVersion', 'INT');

export const ALL_SEARCH_ATTRIBUTES = [RUN_ID, KIND, STEP, POLICY_VERSION];
