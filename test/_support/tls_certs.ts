/**
 * A throwaway certificate authority and a server certificate it signs, made with the
 * `openssl` command at test time (nothing checked in expires): the CA is self-signed, the
 * server certificate names 127.0.0.1 and localhost in its subjectAltName (rustls, in Deno,
 * reads no CN). EC P-256 keys, valid for two days.
 *
 *   const certs = makeTestCerts(dir);   // dir/ca.pem, dir/server.pem, dir/server.key
 *   https.createServer({ key: certs.key, cert: certs.cert }, …)
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const OPENSSL = ["/usr/bin/openssl", "/usr/local/bin/openssl"].find((p) => existsSync(p));
/** A skip reason when openssl is not installed. */
export const NO_OPENSSL: string | false = OPENSSL ? false : "openssl is not installed";

export interface TestCerts {
  /** Paths of the CA's certificate (PEM), and its text. */
  caFile: string;
  ca: string;
  /** The server's certificate and key (PEM text). */
  cert: string;
  key: string;
}

export function makeTestCerts(dir: string): TestCerts {
  const run = (...args: string[]) => {
    const r = spawnSync(OPENSSL!, args, { cwd: dir, encoding: "utf8" });
    if (r.status !== 0) throw new Error(`openssl ${args.join(" ")} failed: ${r.stderr}`);
  };
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  run("req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=cassette test CA",
    "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign");
  run("req", ...ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1");
  writeFileSync(join(dir, "server.ext"), "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n");
  run("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial", "-out", "server.pem", "-days", "2", "-extfile", "server.ext");
  const read = (f: string) => readFileSync(join(dir, f), "utf8");
  return { caFile: join(dir, "ca.pem"), ca: read("ca.pem"), cert: read("server.pem"), key: read("server.key") };
}
