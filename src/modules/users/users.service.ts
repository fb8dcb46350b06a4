import { randomBytes, scrypt, type ScryptOptions } from 'node:crypto';
import type { Db } from '../../db/database.ts';
import { isUniqueViolation } from '../../db/errors.ts';
import { conflict } from '../../lib/domain-errors.ts';
import { newId } from '../../lib/ids.ts';
import { usersRepository } from './users.repository.ts';

const SCRYPT = { N: 16384, r: 8, p: 1, keyLength: 64 };

function scryptAsync(password: string, salt: Buffer, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(password, salt, SCRYPT.keyLength, options, (err, key) => (err ? reject(err) : resolve(key))),
  );
}

/** `scrypt$N$r$p$salt$hash` (base64url parts), so the parameters can be raised later without a migration. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, { N: SCRYPT.N, r: SCRYPT.r, p: SCRYPT.p });
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

/** Team members of a business (assignees, dashboard users). */
export class UsersService {
  constructor(private readonly db: Db) {}

  async create(businessId: string, input: { email: string; name: string; password?: string }) {
    const passwordHash = input.password === undefined ? null : await hashPassword(input.password);
    try {
      return await usersRepository.insert(this.db, businessId, {
        id: newId(),
        email: input.email,
        name: input.name,
        password_hash: passwordHash,
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict('a user with this email already exists in the business', [{ field: 'email' }]);
      throw err;
    }
  }

  list(businessId: string, limit: number) {
    return usersRepository.list(this.db, businessId, limit);
  }
}
