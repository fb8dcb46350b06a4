import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { responses } from '../../http/common.schemas.ts';
import { requireRole } from '../../http/dashboard-session.ts';
import { ReportParams, ReportQuery, reportsDescription } from './reports.schemas.ts';
import { reportResponses, sendReport } from './reports.routes.ts';

/** The reports of the session's business, for admins and owners (the team's figures name each person). */
export const dashboardReportsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/reports/:report',
    {
      preHandler: requireRole('admin'),
      schema: {
        tags: ['dashboard'],
        security: [{ sessionCookie: [] }],
        summary: 'A report of the business',
        description: `${reportsDescription} Admins and owners only: an agent gets 403.`,
        params: ReportParams,
        querystring: ReportQuery,
        response: { ...reportResponses, ...responses({}, 403) },
      },
    },
    async (request, reply) =>
      sendReport(
        reply,
        await app.services.reports.answer(request.dashboard.businessId, request.params.report, request.query),
      ),
  );
};
