// The settings pages of admins and owners, one chunk for the four.
export { AgentsPage } from './agents-page';
export { ChannelsPage } from './channels-page';
export { TeamPage } from './team-page';
export { TemplatesPage } from './templates-page';
