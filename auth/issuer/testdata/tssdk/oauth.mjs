// Drives the embedded authorization server with the official MCP
// TypeScript SDK's OAuth helpers: metadata discovery, dynamic client
// registration with offline_access, the authorization code flow with PKCE
// and a resource, and a refresh. The user's part (login, consent) is done
// over plain HTTP with the page's cookie and form fields, as a browser
// would. Prints one JSON object for sdk_test.go.
//
//   node oauth.mjs ISSUER RESOURCE USER PASSWORD
import {
  discoverAuthorizationServerMetadata,
  registerClient,
  startAuthorization,
  exchangeAuthorization,
  refreshAuthorization,
} from '@modelcontextprotocol/sdk/client/auth.js';

const [issuer, resource, user, password] = process.argv.slice(2);
const redirectUrl = 'http://127.0.0.1:9/callback';
const scope = 'sandbox:exec sandbox:files:read offline_access';

// browser is a user agent with one cookie and manual redirects.
let cookie = '';
async function browse(url, form) {
  const init = { redirect: 'manual', headers: {} };
  if (cookie) init.headers.cookie = cookie;
  if (form) {
    init.method = 'POST';
    init.body = new URLSearchParams(form);
  }
  const res = await fetch(url, init);
  const set = res.headers.get('set-cookie');
  if (set) cookie = set.split(';')[0];
  return { status: res.status, location: res.headers.get('location'), body: await res.text() };
}

function field(page, name) {
  const m = page.match(new RegExp(`name="${name}" value="([^"]*)"`));
  if (!m) throw new Error(`no ${name} field in page: ${page}`);
  return m[1].replaceAll('&#43;', '+').replaceAll('&amp;', '&');
}

// signIn follows the authorization URL through login and consent and
// returns the redirect back to the client.
async function signIn(authorizationUrl) {
  let r = await browse(authorizationUrl);
  if (r.status !== 302) throw new Error(`authorize: ${r.status} ${r.body}`);
  r = await browse(r.location);
  r = await browse(new URL('/login', issuer), {
    id: field(r.body, 'id'), csrf: field(r.body, 'csrf'), username: user, password,
  });
  if (r.status !== 303) throw new Error(`login: ${r.status} ${r.body}`);
  r = await browse(r.location);
  r = await browse(new URL('/consent', issuer), {
    id: field(r.body, 'id'), csrf: field(r.body, 'csrf'), action: 'approve',
  });
  if (r.status !== 303) throw new Error(`consent: ${r.status} ${r.body}`);
  return new URL(r.location);
}

const metadata = await discoverAuthorizationServerMetadata(issuer);
const clientInformation = await registerClient(issuer, {
  metadata,
  clientMetadata: {
    client_name: 'TypeScript SDK',
    redirect_uris: [redirectUrl],
    grant_types: ['authorization_code', 'refresh_token'],
    response_types: ['code'],
    token_endpoint_auth_method: 'none',
  },
  scope,
});
const { authorizationUrl, codeVerifier } = await startAuthorization(issuer, {
  metadata, clientInformation, redirectUrl, scope, state: 'st-1', resource: new URL(resource),
});
const back = await signIn(authorizationUrl);
if (back.searchParams.get('error')) throw new Error(`authorization failed: ${back}`);
const tokens = await exchangeAuthorization(issuer, {
  metadata, clientInformation, authorizationCode: back.searchParams.get('code'),
  codeVerifier, redirectUri: redirectUrl, resource: new URL(resource),
});
const refreshed = await refreshAuthorization(issuer, {
  metadata, clientInformation, refreshToken: tokens.refresh_token, resource: new URL(resource),
});
console.log(JSON.stringify({
  registered_scope: clientInformation.scope,
  token_scope: tokens.scope,
  refresh_rotated: Boolean(refreshed.refresh_token) && refreshed.refresh_token !== tokens.refresh_token,
  access_token: refreshed.access_token,
}));
