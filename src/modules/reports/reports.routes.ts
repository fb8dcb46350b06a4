import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { create as contentDisposition } from 'content-disposition';
import { Type } from 'typebox';
import type { FastifyReply } from 'fastify';
import { responses } from '../../http/common.schemas.ts';
import type { ReportsService } from './reports.service.ts';
import { BusinessReportParams, ReportBody, ReportQuery, reportsDescription } from './reports.schemas.ts';

/** Sends the report's JSON, or its one table as a CSV file. */
export function sendReport(reply: FastifyReply, answer: Awaited<ReturnType<ReportsService['answer']>>) {
  if ('json' in answer) return answer.json;
  return reply
    .type('text/csv; charset=utf-8')
    .header('content-disposition', contentDisposition(answer.filename))
    .send(answer.csv);
}

/** The 200 answers of a report: its JSON, or one table as CSV. */
export const reportResponses = responses(
  {
    200: {
      description: 'the report, or with format=csv one of its tables',
      content: {
        'application/json': { schema: ReportBody },
        'text/csv': { schema: Type.String({ description: 'one table: a header row of column keys, then its rows' }) },
      },
    },
  },
  400,
  401,
  404,
);

/** Operator route of the reports of a business. */
export const reportsAdminRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    '/businesses/:bid/reports/:report',
    {
      schema: {
        tags: ['operator'],
        security: [{ adminToken: [] }],
        summary: "A report of a business's conversations, team and AI",
        description: reportsDescription,
        params: BusinessReportParams,
        querystring: ReportQuery,
        response: reportResponses,
      },
    },
    async (request, reply) =>
      sendReport(reply, await app.services.reports.answer(request.params.bid, request.params.report, request.query)),
  );
};
