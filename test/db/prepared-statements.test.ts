import { describe, expect, it } from 'vitest';
import { statementName } from '../../src/db/prepared-statements.ts';

describe('statementName', () => {
  it('names a parameterised query by its text, the same name every time', () => {
    const text = 'select * from "contacts" where "business_id" = $1 and "phone_key" = $2';
    const name = statementName(text, 2);
    expect(name).toMatch(/^k_[0-9a-f]{32}$/);
    expect(statementName(text, 2)).toBe(name);
    expect(statementName(`${text} limit $3`, 3)).not.toBe(name);
  });

  it('leaves unnamed what varies with the input or may hold several statements', () => {
    expect(statementName('select 1', 0)).toBeNull();
    expect(statementName('create table t (id int); insert into t values (1)', 0)).toBeNull();
    expect(statementName('select * from "contacts" where "id" in ($1, $2, $3)', 3)).toBeNull();
    expect(statementName('insert into "tags" ("a", "b") values ($1, $2), ($3, $4)', 4)).toBeNull();
    expect(statementName(`select * from "contacts" where "id" = $1 ${' '.repeat(4000)}`, 1)).toBeNull();
    expect(statementName('select * from "contacts" where "id" = any($1)', 51)).toBeNull();
    expect(statementName('alter table "contacts" add column "x" int default $1', 1)).toBeNull();
  });

  it('names a single-row insert and a one-item IN-list, whose texts are stable', () => {
    expect(statementName('insert into "tags" ("a", "b") values ($1, $2)', 2)).not.toBeNull();
    expect(statementName('select * from "contacts" where "id" in ($1)', 1)).not.toBeNull();
  });
});
