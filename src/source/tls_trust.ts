/**
 * A server's TLS certificate that the client did not trust, as Node, Bun and Deno name it
 * (OpenSSL's verification codes; Bun's BoringSSL and Deno's rustls give the same codes through
 * node:tls): one table for the HTTP source and the Cassandra client, which both explain it.
 */

/** Verification failures of the server's certificate. */
export const UNTRUSTED_CERT_CODES: ReadonlySet<string> = new Set([
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "UNABLE_TO_GET_ISSUER_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "CERT_UNTRUSTED",
  "CERT_HAS_EXPIRED",
  "CERT_NOT_YET_VALID",
  "ERR_TLS_CERT_ALTNAME_INVALID",
]);

/** Whether giving a CA (`ca=`) can fix the failure: not for an expired certificate, or one for another host. */
export function caWouldHelp(code: unknown): boolean {
  return code !== "CERT_HAS_EXPIRED" && code !== "CERT_NOT_YET_VALID" && code !== "ERR_TLS_CERT_ALTNAME_INVALID";
}
