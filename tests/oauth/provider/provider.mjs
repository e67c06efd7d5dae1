// Loopback OAuth 2.1 authorization server for clawmcp's integration tests, built on the
// npm package oidc-provider (see README.md beside this file).
//
//   node provider.mjs --port P [--keys FILE] [--rotate] [--issuer URL] [--downscope]
//                     [--scopes "S1 S2 ..."]
//
// --port P      port on 127.0.0.1 (0 = pick a free one; the READY line names it)
// --keys FILE   private JWKS (JSON). Created with a fresh RS256 key if missing.
// --rotate      replace the key in FILE with a new one (new kid) before starting
// --issuer URL  issuer identifier (default http://127.0.0.1:P, no trailing slash); `{port}`
//               in it becomes the listening port. A path component is honoured: every
//               endpoint is then served under that path.
// --downscope   scopes a client may not have are silently dropped from its token instead
//               of the token request failing with invalid_scope
// --scopes "S1 S2 ..."  the scopes tokens may carry (default "mcp files:write"): every
//               client may get them all, but mcp-reader only the first
//
// stdout carries exactly one line, `READY <issuer>`, once the server is listening.
// Everything else (endpoints, oidc-provider notices, errors) goes to stderr.

import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync, renameSync } from 'node:fs';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';

// oidc-provider prints its notices with console.info (stdout); keep stdout for READY only.
console.info = console.error;
console.log = console.error;

const { values: args } = parseArgs({
  options: {
    port: { type: 'string' },
    keys: { type: 'string' },
    rotate: { type: 'boolean', default: false },
    issuer: { type: 'string' },
    downscope: { type: 'boolean', default: false },
    scopes: { type: 'string', default: 'mcp files:write' },
  },
  strict: true,
});

if (args.port === undefined || !/^\d+$/.test(args.port)) {
  console.error('usage: node provider.mjs --port P [--keys FILE] [--rotate] [--issuer URL] [--downscope] [--scopes "S1 S2 ..."]');
  process.exit(2);
}
// A scope is a token of RFC 6749 §3.3: visible ASCII but space, `"` and `\`.
const RESOURCE_SCOPES = args.scopes.split(' ').filter((s) => s !== '');
if (RESOURCE_SCOPES.length === 0 || !RESOURCE_SCOPES.every((s) => /^[\x21\x23-\x5b\x5d-\x7e]+$/.test(s))) {
  console.error(`--scopes ${JSON.stringify(args.scopes)}: one or more scope tokens, separated by spaces`);
  process.exit(2);
}
if (args.rotate && !args.keys) {
  console.error('--rotate needs --keys FILE');
  process.exit(2);
}

// ---------------------------------------------------------------- signing keys

function thumbprint(jwk) {
  // RFC 7638 JWK thumbprint of an RSA key: members e, kty, n in lexicographic order.
  const canonical = JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n });
  return createHash('sha256').update(canonical).digest('base64url');
}

function newSigningKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  return { ...jwk, kid: thumbprint(jwk), alg: 'RS256', use: 'sig' };
}

function writeJwks(file, jwks) {
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(jwks, null, 2)}\n`, { mode: 0o600 });
  renameSync(tmp, file);
}

function loadJwks() {
  if (!args.keys) {
    return { keys: [newSigningKey()] };
  }
  if (args.rotate || !existsSync(args.keys)) {
    const jwks = { keys: [newSigningKey()] };
    writeJwks(args.keys, jwks);
    return jwks;
  }
  const jwks = JSON.parse(readFileSync(args.keys, 'utf8'));
  if (!Array.isArray(jwks.keys) || jwks.keys.length === 0) {
    throw new Error(`${args.keys}: not a JWKS with at least one key`);
  }
  return jwks;
}

// ---------------------------------------------------------------- clients

const ALL = RESOURCE_SCOPES.join(' ');

// client_id -> what it may get. Secrets are `<client_id>-secret`.
const CLIENTS = {
  'mcp-jwt': { scope: ALL, format: 'jwt' },
  'mcp-reader': { scope: RESOURCE_SCOPES[0], format: 'jwt' },
  'mcp-short': { scope: ALL, format: 'jwt', ttl: 2 },
  'mcp-other': { scope: ALL, format: 'jwt' },
  'mcp-opaque': { scope: ALL, format: 'opaque' },
  // the resource server's own credentials (introspection, revocation)
  'mcp-server': { scope: ALL, format: 'opaque' },
};

const DEFAULT_TTL = 3600;

const clients = Object.entries(CLIENTS).map(([clientId, c]) => ({
  client_id: clientId,
  client_secret: `${clientId}-secret`,
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  // client_secret_post is accepted too: oidc-provider treats the two secret methods as one.
  token_endpoint_auth_method: 'client_secret_basic',
  // With a scope allow-list oidc-provider rejects the request (invalid_scope) when a client
  // asks for a scope outside it; --downscope leaves it off and filters per resource instead.
  ...(args.downscope ? {} : { scope: c.scope }),
}));

// ---------------------------------------------------------------- provider

function isHttpUrl(value) {
  const url = URL.parse(value);
  return !!url && (url.protocol === 'http:' || url.protocol === 'https:') && !!url.host;
}

function configuration(jwks) {
  return {
    clients,
    jwks,
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES],
    // Not used (no browser flows), set so oidc-provider does not warn about defaults.
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    findAccount: async () => undefined,
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: {
        enabled: true,
        // mcp-server may introspect any token; any other client only its own.
        allowedPolicy: async (ctx, client, token) => (
          client.clientId === 'mcp-server' || client.clientId === token.clientId
        ),
      },
      revocation: {
        enabled: true,
        // The token's own client, or mcp-server, may revoke it.
        allowedPolicy: async (ctx, client, token) => {
          if (client.clientId === 'mcp-server' || client.clientId === token.clientId) return true;
          throw new errors.InvalidRequest('client is not authorized to revoke the presented token');
        },
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: async () => undefined,
        useGrantedResource: async () => false,
        getResourceServerInfo: async (ctx, resourceIndicator, client) => {
          if (!isHttpUrl(resourceIndicator)) {
            throw new errors.InvalidTarget('resource indicator must be an absolute http(s) URL');
          }
          const c = CLIENTS[client.clientId] ?? { scope: ALL, format: 'opaque' };
          return {
            scope: args.downscope ? c.scope : ALL,
            audience: resourceIndicator,
            accessTokenTTL: c.ttl ?? DEFAULT_TTL,
            accessTokenFormat: c.format,
            ...(c.format === 'jwt' ? { jwt: { sign: { alg: 'RS256' } } } : {}),
          };
        },
      },
    },
    // client_credentials tokens carry no end-user; put the client in `sub` (JWT access tokens
    // do this anyway, RFC 9068 needs a sub) so introspection of opaque tokens shows it too.
    extraTokenClaims: async (ctx, token) => (
      token.kind === 'ClientCredentials' && !token.accountId ? { sub: token.clientId } : undefined
    ),
    ttl: {
      ClientCredentials: (ctx, token) => token.resourceServer?.accessTokenTTL ?? DEFAULT_TTL,
      AccessToken: (ctx, token) => token.resourceServer?.accessTokenTTL ?? DEFAULT_TTL,
    },
    renderError: async (ctx, out) => {
      ctx.type = 'json';
      ctx.body = out;
    },
  };
}

// ---------------------------------------------------------------- server

const jwks = loadJwks();
let handler = (req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = createServer((req, res) => handler(req, res));

server.on('error', (err) => {
  console.error(`provider: ${err.stack || err}`);
  process.exit(1);
});

server.listen(Number(args.port), '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = (args.issuer ?? `http://127.0.0.1:${port}`).replaceAll('{port}', String(port)).replace(/\/+$/, '');
  const mount = new URL(issuer).pathname.replace(/\/+$/, ''); // '' for a root issuer

  const provider = new Provider(issuer, configuration(jwks));
  provider.on('server_error', (ctx, err) => console.error(`provider server_error: ${err.stack || err}`));
  provider.on('grant.error', (ctx, err) => console.error(`provider grant.error: ${err.message} ${err.error_description ?? ''}`));
  provider.on('introspection.error', (ctx, err) => console.error(`provider introspection.error: ${err.message} ${err.error_description ?? ''}`));
  provider.on('revocation.error', (ctx, err) => console.error(`provider revocation.error: ${err.message} ${err.error_description ?? ''}`));

  // RFC 8414: serve the discovery document at /.well-known/oauth-authorization-server{path}
  // as well (oidc-provider itself only serves {path}/.well-known/openid-configuration).
  // Requests are rewritten before oidc-provider sees them; it builds the endpoint URLs in the
  // document from the request's host and the issuer's path.
  const callback = provider.callback();
  const rfc8414 = `/.well-known/oauth-authorization-server${mount}`;
  const discovery = '/.well-known/openid-configuration';
  handler = (req, res) => {
    const q = req.url.indexOf('?');
    const path = q === -1 ? req.url : req.url.slice(0, q);
    const query = q === -1 ? '' : req.url.slice(q);
    // With an issuer path, oidc-provider finds the mount in req.originalUrl minus req.url.
    if (path === rfc8414 || path === `${mount}/.well-known/oauth-authorization-server`) {
      req.url = `${discovery}${query}`;
      if (mount) req.originalUrl = `${mount}${req.url}`;
      return callback(req, res);
    }
    if (mount === '') return callback(req, res);
    if (path === mount || path.startsWith(`${mount}/`)) {
      req.originalUrl = req.url;
      req.url = req.url.slice(mount.length) || '/';
      if (req.url.startsWith('?')) req.url = `/${req.url}`;
      return callback(req, res);
    }
    res.statusCode = 404;
    res.setHeader('content-type', 'application/json');
    res.end('{"error":"not_found"}');
  };

  const base = issuer;
  const origin = new URL(issuer).origin;
  console.error(`provider: issuer                 ${issuer} (listening on 127.0.0.1:${port})`);
  console.error(`provider: discovery              ${base}/.well-known/openid-configuration`);
  console.error(`provider: discovery (RFC 8414)   ${origin}${rfc8414}`);
  console.error(`provider: jwks_uri               ${base}/jwks`);
  console.error(`provider: token_endpoint         ${base}/token`);
  console.error(`provider: introspection_endpoint ${base}/token/introspection`);
  console.error(`provider: revocation_endpoint    ${base}/token/revocation`);
  console.error(`provider: signing kid            ${jwks.keys.map((k) => k.kid).join(', ')}`);
  console.error(`provider: scope policy           ${args.downscope ? 'downscope' : 'refuse (invalid_scope)'}`);
  process.stdout.write(`READY ${issuer}\n`);
});

function shutdown(signal) {
  console.error(`provider: ${signal}, shutting down`);
  server.close(() => process.exit(0));
  server.closeAllConnections?.();
  setTimeout(() => process.exit(0), 2000).unref();
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));
