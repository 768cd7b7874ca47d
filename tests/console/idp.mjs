// An OpenID provider for the console's sign-in (panva's oidc-provider, a certified
// implementation), with its development login page: any login name signs in as that
// subject. Usage: node idp.mjs <port> <redirect-uri> <client-id>
import Provider from 'oidc-provider';

const [port, redirectUri, clientId] = process.argv.slice(2);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: clientId,
    application_type: 'native', // loopback http redirect URIs are allowed for it
    token_endpoint_auth_method: 'none',
    redirect_uris: [redirectUri],
    grant_types: ['authorization_code'],
    response_types: ['code'],
  }],
  // The console asks for openid only and uses the ID token (audience: the console).
  claims: { openid: ['sub'] },
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: { devInteractions: { enabled: true } },
  pkce: { required: () => true },
  // The console exchanges its code from the browser: the token endpoint answers its origin.
  clientBasedCORS: (_ctx, origin) => origin.startsWith('http://127.0.0.1:'),
  ttl: { IdToken: 3600 },
});
provider.listen(Number(port), '127.0.0.1', () => console.log(`idp listening ${issuer}`));
