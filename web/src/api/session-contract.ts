// The session API's operations as the dashboard's contract states them, in openapi-typescript's shape.
// They stand in only while the service's document does not describe the session API: as soon as the
// generated paths hold `/dashboard/api/session`, ApiPaths is the generated paths alone.
import type { components, paths } from './schema';

type ErrorBody = components['schemas']['ErrorBody'];
type NoParameters = { query?: never; header?: never; path?: never; cookie?: never };
type Json<T> = { headers: Record<string, unknown>; content: { 'application/json': T } };
type Refused = Json<ErrorBody>;

export type Role = 'owner' | 'admin' | 'agent';

interface SessionBody {
  user: { id: string; email: string; name: string; role: Role };
  business: { id: string; name: string };
  businesses: { id: string; name: string; role: Role }[];
  csrf_token: string;
}

interface Read<Answers> {
  parameters: NoParameters;
  requestBody?: never;
  responses: Answers;
}

interface Write<Body, Answers> {
  parameters: NoParameters;
  requestBody: { content: { 'application/json': Body } };
  responses: Answers;
}

type Methods = 'get' | 'put' | 'post' | 'delete' | 'options' | 'head' | 'patch' | 'trace';
type Unused = { [method in Methods]?: never };

interface ContractPaths {
  '/dashboard/api/session': Omit<Unused, 'get' | 'post' | 'delete'> & {
    parameters: NoParameters;
    get: Read<{ 200: Json<SessionBody>; 401: Refused }>;
    post: Write<
      { email: string; password: string },
      { 200: Json<SessionBody>; 400: Refused; 401: Refused; 429: Refused }
    >;
    delete: Read<{ 204: { headers: Record<string, unknown>; content?: never }; 401: Refused }>;
  };
  '/dashboard/api/session/business': Omit<Unused, 'put'> & {
    parameters: NoParameters;
    put: Write<{ business_id: string }, { 200: Json<SessionBody>; 400: Refused; 401: Refused; 403: Refused }>;
  };
}

export type ApiPaths = paths extends { '/dashboard/api/session': unknown } ? paths : paths & ContractPaths;
