import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect, it } from 'vitest';
import { ALL_SEARCH_ATTRIBUTES } from '../../src/workflows/search-attributes';

it('registers with the dev server exactly the search attributes the code uses', () => {
  const file = readFileSync(path.join(__dirname, '../../temporal/search-attributes.txt'), 'utf8');
  const registered = file.split('\n').filter((l) => l.trim() && !l.startsWith('#'));
  const typeName = { KEYWORD: 'Keyword', INT: 'Int', TEXT: 'Text', DOUBLE: 'Double', BOOL: 'Bool', DATETIME: 'Datetime', KEYWORD_LIST: 'KeywordList' } as const;
  expect(registered.sort()).toEqual(ALL_SEARCH_ATTRIBUTES.map((k) => `${k.name}=${typeName[k.type]}`).sort());
});
