import type { ErrorClassification, IncomingHeaders } from '../channel.types.ts';
import type { ProviderHttpOptions } from '../http-deps.ts';
import { GraphClient } from './graph.client.ts';
import { classifyGraphError } from './graph.errors.ts';
import { DEFAULT_GRAPH_API_BASE_URL } from './meta.config.ts';
import { answerHubChallenge, verifyMetaSignature } from './meta.signature.ts';

/** The fields every Meta app's channel config has (meta.config.ts's metaAppProperties). */
export interface MetaAppConfig {
  access_token: string;
  app_secret: string;
  verify_token: string;
  api_base_url?: string;
}

/**
 * What every Meta product's adapter does alike: Graph API calls with the channel's token, the
 * notifications' X-Hub-Signature-256 and hub.challenge, Graph error classification. The products'
 * adapters (WhatsApp Cloud, Messenger Platform) add their sends, media and profiles.
 */
export abstract class MetaAppProvider {
  protected readonly graph: GraphClient;

  constructor(
    private readonly app: MetaAppConfig,
    http: ProviderHttpOptions = {},
  ) {
    const baseUrl = (app.api_base_url ?? DEFAULT_GRAPH_API_BASE_URL).replace(/\/+$/, '');
    this.graph = new GraphClient(baseUrl, app.access_token, http);
  }

  verifySignature(rawBody: Buffer, headers: IncomingHeaders): boolean {
    return verifyMetaSignature(rawBody, headers, this.app.app_secret);
  }

  verifySubscription(query: Record<string, unknown>): string | null {
    return answerHubChallenge(query, this.app.verify_token);
  }

  classifyError(err: unknown): ErrorClassification {
    return classifyGraphError(err);
  }
}
