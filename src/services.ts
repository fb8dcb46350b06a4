import type { Config } from './config.ts';
import type { Db } from './db/database.ts';
import { dashboardLinks } from './lib/links.ts';
import { ApiKeysService } from './modules/api-keys/api-keys.service.ts';
import { BusinessesService } from './modules/businesses/businesses.service.ts';

/** Every service of the app, built once over one database; routes, CLI and seeding share them. */
export function createServices(db: Db, config: Config) {
  const links = dashboardLinks(config.publicUrl);
  void links;
  return {
    businesses: new BusinessesService(db),
    apiKeys: new ApiKeysService(db),
  };
}

export type Services = ReturnType<typeof createServices>;
