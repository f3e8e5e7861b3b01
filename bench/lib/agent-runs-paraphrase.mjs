// Seeded synthetic agent runs with hard paraphrases: a second tuning generator for the learning benchmark, with the
// interface and semantics of agent-runs.mjs but its own task families and pitfalls. Each pitfall has several wordings
// (3, or 4) that share almost no words: another log format and prefix (ISO timestamps with levels, glog, logfmt, JSON
// lines, tracebacks, exit codes, [WARN]), synonyms, often another symptom of the same failure, other hosts, ports, ids
// and paths through slots, and a task that names the situation differently. The fix describes the same remedy in every
// wording, in its own words. Same seed and index, same run; no Math.random.
//
// The k-th occurrence of a pitfall in `generateRuns` uses wording (k-1) mod n; `pitfallRun` uses wording index mod n;
// a run records the wording it used in `wording`. The first symptom item of a pitfall run is always the wording's first
// symptom line (what the benchmark queries memory with); `overlapReport` measures how much those lines share. Every
// wording brings its own symptom key and fix key; keys of a pitfall appear in no text outside it (`checkVocabulary`
// proves it), so `classify` tells which pitfall a lesson or trace is about whatever wording it came from.
import { rng } from "./corpus.mjs";
import { fill, int, keyPattern, pick, pitfallIndex, playSteps } from "./agent-run-kit.mjs";

const NAMES = ["ana", "ben", "chloe", "dmitri", "eve", "farid", "gus", "hana"];

const two = (n) => String(n).padStart(2, "0");

/** Slots every family may use; each is drawn once per run. */
const GENERIC_SLOTS = {
  ver: (r) => `${1 + int(r, 5)}.${int(r, 30)}.${int(r, 10)}`,
  k: (r) => String(100 + int(r, 9000)),
  date: (r) => `2024-${two(1 + int(r, 12))}-${two(1 + int(r, 28))}`,
  ts: (r) => `2024-${two(1 + int(r, 12))}-${two(1 + int(r, 28))}T${two(int(r, 24))}:${two(int(r, 60))}:${two(int(r, 60))}.${String(int(r, 1000)).padStart(3, "0")}Z`,
  glog: (r) => `E${two(1 + int(r, 12))}${two(1 + int(r, 28))} ${two(int(r, 24))}:${two(int(r, 60))}:${two(int(r, 60))}.${String(int(r, 1e6)).padStart(6, "0")} ${1000 + int(r, 9000)}`,
  ip: (r) => `10.${int(r, 256)}.${int(r, 256)}.${2 + int(r, 250)}`,
  port: (r) => String(20000 + int(r, 40000)),
  pid: (r) => String(300 + int(r, 60000)),
  ticket: (r) => `CHG-${1000 + int(r, 9000)}`,
  user: (r) => NAMES[int(r, NAMES.length)],
  min: (r) => String(2 + int(r, 50)),
  gb: (r) => String(3 + int(r, 60)),
};

const GENERIC_CHATTER = [
  "note: queued behind two other jobs on the shared runner",
  "note: the incident channel is quiet today",
  "note: double-checked the ticket {ticket} for the exact scope",
  "note: {min} minutes spent on this so far",
  "note: {user} pinged for an update; answered that it is underway",
  "note: scratch files kept in /tmp/scratch-{k}",
  "note: the change calendar shows no conflicting work",
];

const arr = (v) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * One wording of a pitfall: t task(s), s symptom lines (the first is the one a run always shows first), why the
 * diagnosis, hint, fix, ok the retry's result, bad what a failed fix looks like, sk its symptom keys, fk its fix keys.
 */
const w = (o) => ({
  tasks: arr(o.t),
  symptoms: arr(o.s),
  rationale: arr(o.why),
  hints: arr(o.hint),
  fixes: arr(o.fix),
  results: arr(o.ok),
  failedFix: arr(o.bad),
  symptomKeys: arr(o.sk),
  fixKeys: arr(o.fk),
});

const FIELDS = ["tasks", "symptoms", "rationale", "hints", "fixes", "results", "failedFix"];

/** A pitfall: its wordings plus the original generator's fields, each all wordings' texts combined. */
function pitfall(id, at, wordings) {
  const combined = Object.fromEntries(FIELDS.map((field) => [field, wordings.flatMap((x) => x[field])]));
  const union = (field) => [...new Set(wordings.flatMap((x) => x[field]))];
  return { id, at, ...combined, symptomKeys: union("symptomKeys"), fixKeys: union("fixKeys"), wordings };
}

/**
 * The task families. `{slot}` is replaced by the run's value. A step is [name, call templates, observation templates];
 * a pitfall strikes at the step named `at`.
 */
export const FAMILIES = [
  {
    id: "dns",
    name: "managing internal DNS",
    slots: { zone: ["corp.lan", "int.example.org"], resolver: ["10.0.0.53", "10.8.0.2"], rec: ["api", "billing", "auth-gw", "ledger"] },
    tasks: ["Point {rec}.{zone} at the new load balancer", "Add a CNAME for {rec}.{zone}", "Check that {rec}.{zone} answers the same from every site"],
    steps: [
      ["edit_zone", ["nsupdate -k /etc/bind/ddns.key < /tmp/{rec}.nsupdate"], ["update accepted for {rec}.{zone}", "zone {zone} serial bumped"]],
      ["reload", ["rndc reload {zone}"], ["zone reload queued", "server reload successful"]],
      ["query", ["dig +short {rec}.{zone} @{resolver}"], ["10.20.4.11", "{rec}-lb.{zone}. 10.20.4.12"]],
      ["propagate", ["for r in site-a site-b site-c; do dig @$r {rec}.{zone}; done"], ["all three sites answer with the new address"]],
    ],
    chatter: ["note: the {zone} zone holds about 400 records", "note: {user} looks after the internal name servers", "note: the TTL on {rec}.{zone} is 300 s"],
    pitfalls: [
      pitfall("dns-negative-cache", "query", [
        w({
          t: "Create the new {rec}.{zone} record that the monitoring probe has been polling for since the morning",
          s: ["{ts} ERROR probe: lookup {rec}.{zone} failed with NXDOMAIN although the record is published", "{ts} ERROR probe: {resolver} keeps answering NXDOMAIN after the serial change"],
          why: "The resolver cached the NXDOMAIN from before the record existed and serves it until the SOA minimum expires",
          hint: "After adding a name clients already asked for, run rndc flushname on the resolvers and keep the SOA negative TTL short",
          fix: "Ran rndc flushname {rec}.{zone} on every resolver and lowered the SOA negative TTL of {zone} to 60 seconds",
          ok: "{rec}.{zone} resolves from {resolver} now",
          bad: "still no answer for {rec}.{zone} after rndc flushname; the name is missing from the zone file itself",
          sk: ["nxdomain"],
          fk: ["flushname", "negative ttl"],
        }),
        w({
          t: "Publish {rec}.{zone}, which the deploy pipeline began querying before the DNS change landed",
          s: ["{glog} resolver.go:212] upstream connect error: dial tcp: lookup {rec}.{zone} on {resolver}:53: no such host"],
          why: "A cached miss: {resolver} remembers that the name did not exist (negative caching) and answers from that entry",
          hint: "Purge cached misses with unbound-control flush after creating names that clients already tried",
          fix: "Executed unbound-control flush {rec}.{zone} on {resolver} and set cache-max-negative-ttl to 60",
          ok: "the pipeline reached {rec}.{zone} on its next attempt",
          bad: "unbound-control flush ran but the clients still get no such host; they use another resolver",
          sk: ["no such host", "negative caching", "cached miss"],
          fk: ["unbound-control flush", "cache-max-negative-ttl"],
        }),
        w({
          t: "Bring up the fresh hostname {rec}.{zone} for a Java client that was started before it existed",
          s: ["Exception in thread \"main\" java.net.UnknownHostException: {rec}.{zone}: Name or service not known"],
          why: "The JVM address cache and the site resolver both remember the earlier UnknownHostException for the negative TTL",
          hint: "Set networkaddress.cache.negative.ttl=0 for JVM clients and flush the resolver entry when publishing a name late",
          fix: "Set networkaddress.cache.negative.ttl=0 in java.security, ran rndc flushname on the resolver and restarted the client",
          ok: "the client connected to {rec}.{zone}",
          bad: "UnknownHostException persists with networkaddress.cache.negative.ttl=0; the name is truly absent",
          sk: ["unknownhostexception", "name or service not known"],
          fk: ["networkaddress.cache.negative.ttl", "flushname"],
        }),
      ]),
      pitfall("dns-dnssec-expired", "query", [
        w({
          t: "Change {rec}.{zone} in the signed zone whose keys were rolled by hand last quarter",
          s: ["{ts} ERROR dig: status SERVFAIL for {rec}.{zone} from the validating resolver {resolver}"],
          why: "Validation fails: the RRSIG records of {zone} expired, so validating resolvers answer SERVFAIL",
          hint: "Let BIND keep a signed zone fresh with a dnssec-policy and inline-signing instead of signing by hand",
          fix: "Re-signed {zone} with rndc sign {zone} and turned on inline-signing with a dnssec-policy so signatures renew",
          ok: "dig +dnssec shows fresh signatures and the ad flag",
          bad: "rndc sign finished but the resolvers still reject {zone}; the DS record at the parent is wrong",
          sk: ["servfail", "rrsig"],
          fk: ["rndc sign", "dnssec-policy", "inline-signing"],
        }),
        w({
          t: "Edit an entry of the DNSSEC-protected {zone} domain that nobody touched since spring",
          s: ["level=error msg=\"dnssec check failed\" name={rec}.{zone} reason=\"signature expired\" upstream=site-b"],
          why: "Every signature in the zone is past its expiry date, so resolvers treat the answers as bogus",
          hint: "Move hand-signed zones to dnssec-policy default so signatures are refreshed automatically",
          fix: "Moved {zone} to dnssec-policy default with inline-signing yes, which re-signed every record set",
          ok: "validation passes for {rec}.{zone}",
          bad: "still bogus after the switch to dnssec-policy; the key files are missing on the primary",
          sk: ["signature expired", "bogus"],
          fk: ["dnssec-policy", "inline-signing"],
        }),
        w({
          t: "Add a record under {zone}, the zone that is DNSSEC-signed with manually rotated keys",
          s: ["unbound[{pid}:0] error: validation failure <{rec}.{zone}. A IN>: RRSIG outside its validity period (signer {ip})"],
          why: "Unbound rejects the answers because the zone's signatures are outside their validity period",
          hint: "Re-sign with rndc sign and have a dnssec-policy refresh signatures before they lapse",
          fix: "Ran rndc sign {zone} on the primary and put the zone under a dnssec-policy that refreshes signatures",
          ok: "unbound validates {rec}.{zone} again",
          bad: "unbound still logs validation failure after rndc sign; the clock on the primary is a year off",
          sk: ["validation failure", "validity period"],
          fk: ["rndc sign", "dnssec-policy"],
        }),
      ]),
      pitfall("dns-zone-transfer", "propagate", [
        w({
          t: "Add {rec}.{zone} and make sure the new secondaries at site-b and site-c serve it",
          s: ["{ts} ERROR named[{pid}]: client {ip}#{port} ({zone}): zone transfer '{zone}/AXFR/IN' denied"],
          why: "The primary refuses zone transfers to the new secondary because its address is not in allow-transfer",
          hint: "When a secondary is added, list it in allow-transfer and also-notify on the primary",
          fix: "Added {ip} to allow-transfer and also-notify for {zone} on the primary and ran rndc reload",
          ok: "site-b and site-c serve the new serial",
          bad: "allow-transfer updated but the transfer still fails; the TSIG key differs",
          sk: ["zone transfer", "axfr"],
          fk: ["allow-transfer", "also-notify"],
        }),
        w({
          t: "Publish {rec}.{zone} across sites now that site-c got a replacement name server",
          s: ["[WARN] site-c name server: copy of {zone} behind the primary, xfrin refused (error 5)"],
          why: "The replacement secondary cannot pull the zone: the primary answers REFUSED to its xfrin request",
          hint: "Admit the secondaries in the primary's transfer ACL before adding names",
          fix: "Put the site-c address into the primary's transfer ACL (allow-transfer) and pushed a NOTIFY with rndc notify {zone}",
          ok: "site-c caught up within a minute",
          bad: "the transfer ACL is fixed but site-c still lags; it is firewalled from the primary",
          sk: ["xfrin"],
          fk: ["allow-transfer", "transfer acl", "rndc notify"],
        }),
        w({
          t: "Roll out {rec} in {zone} to all sites, including the re-addressed site-b server",
          s: ["check-secondary.sh: site-b returned the old answer for {rec}.{zone}; exit code 3 (serial mismatch)"],
          why: "site-b keeps the stale copy: the serial mismatch means its transfer requests from the new address are rejected",
          hint: "Check allow-transfer on the primary whenever a secondary changes its address",
          fix: "Granted the new site-b address in allow-transfer on the primary and triggered rndc notify {zone}",
          ok: "all three sites report the same serial",
          bad: "still a serial mismatch after the allow-transfer change; site-b's named is not running",
          sk: ["serial mismatch"],
          fk: ["allow-transfer", "rndc notify"],
        }),
      ]),
      pitfall("dns-tcp-blocked", "query", [
        w({
          t: "Publish the long DKIM TXT record for mail signing in {zone}",
          s: ["{ts} ERROR resolver: answer truncated, retrying in TCP mode; connection timed out, no servers could be reached"],
          why: "The TXT answer exceeds the UDP size, the truncation bit forces TCP, and the firewall drops TCP port 53",
          hint: "Large records need DNS over TCP: open TCP port 53 from clients to resolvers",
          fix: "Opened TCP port 53 from the client subnets to the resolvers and set edns-udp-size 1232",
          ok: "the TXT record resolves over TCP",
          bad: "TCP port 53 is open but lookups still fail; the resolver itself is down",
          sk: ["retrying in tcp", "no servers could be reached"],
          fk: ["tcp port 53", "edns-udp-size"],
        }),
        w({
          t: "Add the 4096-bit domain key entry to {zone} for outbound mail",
          s: ["level=error msg=\"dns exchange failed\" err=\"read udp {ip}:{port}: message too long\" qtype=TXT"],
          why: "The reply does not fit one datagram (TC flag set) and the fallback over TCP is blocked",
          hint: "Allow tcp/53 through the firewall and cap the EDNS buffer with edns-udp-size 1232",
          fix: "Allowed tcp/53 between the app subnet and the resolvers and set edns-udp-size 1232 on them",
          ok: "the key record now comes back complete",
          bad: "still message too long with tcp/53 allowed; the client library has no TCP support",
          sk: ["message too long", "tc flag"],
          fk: ["tcp/53", "edns-udp-size"],
        }),
        w({
          t: "Roll out the new SPF and domain-key text records of {zone} that list all mail senders",
          s: ["{\"severity\":\"ERROR\",\"component\":\"mta\",\"event\":\"dkim lookup failed\",\"detail\":\"reply of 2410 bytes exceeds 512, tcp connect refused\"}"],
          why: "Mail verification fails: the answer exceeds 512 bytes and DNS over TCP is refused by the firewall",
          hint: "Records above 512 bytes need TCP port 53 open to the resolvers",
          fix: "Opened TCP port 53 in the firewall between mail hosts and resolvers and lowered edns-udp-size to 1232",
          ok: "dkim lookups succeed for every sender",
          bad: "the firewall change is live but the lookup still fails; the record has a syntax error",
          sk: ["exceeds 512"],
          fk: ["tcp port 53", "edns-udp-size"],
        }),
      ]),
    ],
  },
  {
    id: "haproxy",
    name: "balancing traffic with HAProxy",
    slots: { backend: ["be_api", "be_checkout", "be_static"], frontend: ["fe_https", "fe_internal"], node: ["lb-01", "lb-02"] },
    tasks: ["Add a server to {backend} on {node}", "Change the balance algorithm of {backend} to leastconn", "Rotate the servers of {backend} behind {frontend}"],
    steps: [
      ["validate_config", ["haproxy -c -f /etc/haproxy/haproxy.cfg on {node}"], ["Configuration file is valid"]],
      ["reload", ["systemctl reload haproxy on {node}"], ["reloaded, new workers started", "reload done, old workers draining"]],
      ["check_stats", ["echo 'show stat' | socat stdio /run/haproxy/admin.sock"], ["{backend}: all servers UP", "{backend}: 4/4 servers UP"]],
      ["probe", ["curl -sI https://{node}.edge.lan/"], ["HTTP/2 200", "HTTP/2 200 in 23 ms"]],
    ],
    chatter: ["note: the {node} stats page looks normal", "note: {user} drains {node} every Tuesday for patching", "note: {frontend} carries about 2k requests per second"],
    pitfalls: [
      pitfall("haproxy-health-check", "check_stats", [
        w({
          t: "Put the new {backend} app servers, which only answer on their virtual host names, behind {node}",
          s: ["{ts} [WARNING] Server {backend}/app3 is DOWN, reason: Layer7 wrong status, code: 400, info: \"Bad Request\", check failed"],
          why: "The servers reject the HTTP check because it carries no Host header, so HAProxy marks them down",
          hint: "Give option httpchk an explicit request with http-check send including a Host header",
          fix: "Configured http-check send meth GET uri /healthz ver HTTP/1.1 hdr Host {backend}.internal under option httpchk",
          ok: "{backend}: 3/3 servers UP",
          bad: "the check with http-check send still fails; the app returns 500 on /healthz",
          sk: ["layer7 wrong status"],
          fk: ["http-check send", "option httpchk"],
        }),
        w({
          t: "Move {backend} onto the new application build that serves its health page at /healthz",
          s: ["{glog} lbwatch.go:51] alert: {backend} has no usable member, 503 No server is available to handle this request"],
          why: "The old health probe path is gone in the new build, so every member fails its check and traffic gets 503",
          hint: "Point the HAProxy probe (option httpchk) at the page the build really serves",
          fix: "Pointed the health probe at /healthz with an explicit Host header (option httpchk plus http-check send)",
          ok: "members back in rotation, no more 503",
          bad: "option httpchk now targets /healthz but members stay out; the port is wrong",
          sk: ["no server is available", "no usable member"],
          fk: ["option httpchk", "http-check send"],
        }),
        w({
          t: "Switch {backend} to the containerised app that lives behind name-based routing",
          s: ["{\"level\":\"error\",\"src\":\"haproxy-exporter\",\"proxy\":\"{backend}\",\"check_status\":\"L7STS\",\"check_code\":404,\"servers_down\":3}"],
          why: "The check hits the router without a host name and gets 404 (L7STS), so all servers count as down",
          hint: "Send the health request with the right Host header via option httpchk",
          fix: "Rewrote the backend check as option httpchk GET /healthz HTTP/1.1 with a Host header",
          ok: "L4/L7 checks pass on all three servers",
          bad: "option httpchk sends the Host header but checks still fail; the router is down",
          sk: ["l7sts"],
          fk: ["option httpchk"],
        }),
      ]),
      pitfall("haproxy-maxconn", "probe", [
        w({
          t: "Send the marketing campaign spike for {frontend} through {node}",
          s: ["{ts} {frontend} {backend}/app1 0/30001/-1/-1/30001 503 217 - - sQ-- 4096/4096/4000/1000/0 queue timeout error"],
          why: "Requests wait in the server queue (termination flags sQ) because the connection limits are far below the spike",
          hint: "Size maxconn for peak traffic and bound the wait with timeout queue",
          fix: "Raised the global maxconn to 20000 and the per-server maxconn to 500, and set timeout queue 5s",
          ok: "the spike passed with no queued requests",
          bad: "maxconn raised but still 503; the app servers themselves are saturated",
          sk: ["sq--"],
          fk: ["maxconn", "timeout queue"],
        }),
        w({
          t: "Carry the Black Friday load test of {frontend} on {node}",
          s: ["level=error msg=\"connection limit reached\" proxy={frontend} curr_conn=4096 limit=4096 node={node}"],
          why: "The proxy hit its connection ceiling and stopped accepting new clients",
          hint: "Raise maxconn globally and per server before load tests",
          fix: "Set global maxconn 20000, server maxconn 500 and timeout queue 5s, then reloaded",
          ok: "the load test ran at full rate",
          bad: "maxconn is higher but the limit is still reached; ulimit -n caps the process",
          sk: ["connection limit reached"],
          fk: ["maxconn", "timeout queue"],
        }),
        w({
          t: "Absorb the flash-sale traffic that {backend} will see at noon",
          s: ["[WARN] load-test: 38% of requests failed with HTTP 503 after sitting 30 s in the backend queue"],
          why: "Too few concurrent connections are allowed, so requests pile up in the backend queue until they expire",
          hint: "Budget maxconn for the flash-sale peak",
          fix: "Lifted maxconn (global 20000, per server 500) and capped waiting at timeout queue 5s",
          ok: "under 0.1% errors at the noon peak",
          bad: "with the new maxconn still 38% failures; the database is the bottleneck",
          sk: ["backend queue"],
          fk: ["maxconn", "timeout queue"],
        }),
      ]),
      pitfall("haproxy-pem-bundle", "validate_config", [
        w({
          t: "Install the renewed wildcard certificate for {frontend} on {node}",
          s: ["{ts} [ALERT] parsing [/etc/haproxy/haproxy.cfg:42] : 'bind *:443' : unable to load SSL private key from '/etc/haproxy/certs/wildcard.pem'; fatal errors found"],
          why: "HAProxy wants certificate and private key in one file, and the renewed site.pem holds only the certificate",
          hint: "Build HAProxy certificate files as one combined PEM: certificate, chain, key",
          fix: "Rebuilt site.pem as one combined PEM (certificate, intermediate chain, then the matching private key) and reloaded",
          ok: "configuration valid, {frontend} serves the new certificate",
          bad: "the combined PEM loads but browsers still warn; the chain is incomplete",
          sk: ["unable to load ssl private key"],
          fk: ["combined pem"],
        }),
        w({
          t: "Replace the expiring TLS material of {frontend} with the files issued by the new CA",
          s: ["{glog} certsync.go:77] reload of {node} failed: exit status 1: no private key found in the new bundle"],
          why: "The new CA delivered key and certificate as separate files, but the bind line expects both in one file",
          hint: "Concatenate certificate, chain and key into a single combined PEM for each bind line",
          fix: "Concatenated the certificate, the chain and its private key into a single combined PEM file for the bind line",
          ok: "reload of {node} succeeded",
          bad: "the combined PEM is in place but the reload still fails; the file mode is 600 for root only",
          sk: ["no private key found"],
          fk: ["combined pem"],
        }),
        w({
          t: "Roll the certificate of {frontend} on {node} to the reissued one from the security team",
          s: ["haproxy[{pid}]: [ALERT] error: X509_check_private_key: key values mismatch in site.pem; exit code 1"],
          why: "The bundle pairs the reissued certificate with the old key, so they do not belong together",
          hint: "Rebuild the combined PEM from the certificate and the key it was issued for",
          fix: "Re-exported the matching private key and wrote certificate, chain and key into one combined PEM",
          ok: "haproxy -c passes and {frontend} serves the new certificate",
          bad: "the rebuilt combined PEM still mismatches; the security team sent the wrong key",
          sk: ["key values mismatch", "x509_check_private_key"],
          fk: ["combined pem"],
        }),
      ]),
      pitfall("haproxy-tunnel-timeout", "probe", [
        w({
          t: "Put the live chat websocket endpoint behind {frontend} on {node}",
          s: ["{ts} ERROR chat-client: websocket closed abnormally after exactly 50 s without messages"],
          why: "Upgraded connections are cut at the 50 s client timeout because no tunnel timeout is set",
          hint: "Long-lived websocket backends need timeout tunnel set well above the idle time",
          fix: "Set timeout tunnel 1h and timeout client-fin 30s on {backend} so upgraded connections survive idle periods",
          ok: "chat sessions stay open for hours",
          bad: "timeout tunnel is 1h but connections still drop; a cloud load balancer in front cuts them",
          sk: ["closed abnormally"],
          fk: ["timeout tunnel"],
        }),
        w({
          t: "Serve the push notification streams of the mobile app through {node}",
          s: ["{frontend}~ {backend}/app2 0/0/1/2/50001 101 0 - - cD-- client idle timeout, stream failed"],
          why: "HAProxy applies the short client timeout to the idle upgraded streams (flags cD) and closes them",
          hint: "Give streaming backends a timeout tunnel of an hour",
          fix: "Added timeout tunnel 1h to {backend} and reloaded {node}",
          ok: "no more cD terminations in the log",
          bad: "timeout tunnel set, streams still close; the app sends no keepalives",
          sk: ["cd--"],
          fk: ["timeout tunnel"],
        }),
        w({
          t: "Move the socket.io notification service of {backend} onto {node}",
          s: ["level=error svc=notifications msg=\"reconnect storm\" reason=\"transport close\" reconnects_per_min=3400"],
          why: "Every socket is dropped by the proxy after its idle limit, so all clients reconnect at once",
          hint: "Set timeout tunnel so idle sockets are not closed by the proxy",
          fix: "Configured timeout tunnel 1h for the socket backend so idle sockets are kept",
          ok: "reconnects fell to a handful per minute",
          bad: "timeout tunnel did not help; the reconnects come from a client bug",
          sk: ["reconnect storm"],
          fk: ["timeout tunnel"],
        }),
      ]),
    ],
  },
  {
    id: "pg-replication",
    name: "running PostgreSQL replication",
    slots: { primary: ["pg-main-1", "pg-core-a"], replica: ["pg-replica-2", "pg-ro-3"], slot: ["replica_slot_2", "ro3_slot"] },
    tasks: ["Add {replica} as a streaming standby of {primary}", "Check the lag between {primary} and {replica}", "Resync {replica} from {primary} in staging"],
    steps: [
      ["basebackup", ["pg_basebackup -h {primary} -D /var/lib/postgresql/16/main -R -X stream"], ["base backup completed ({gb} GB)", "pg_basebackup: base backup completed"]],
      ["start_replica", ["pg_ctlcluster 16 main start on {replica}"], ["cluster started, entering standby mode"]],
      ["check_lag", ["psql -h {primary} -c 'select client_addr, replay_lag from pg_stat_replication'"], ["replay_lag 00:00:00.4 for {replica}"]],
      ["verify_reads", ["psql -h {replica} -c 'select count(*) from orders'"], ["count 1843211", "count 1843290 in 0.8 s"]],
    ],
    chatter: ["note: {primary} runs PostgreSQL 16.2", "note: {user} scheduled the next failover drill", "note: WAL archive bucket has {gb} GB free"],
    pitfalls: [
      pitfall("pg-wal-removed", "start_replica", [
        w({
          t: "Rebuild {replica} from a {gb} GB base backup that takes hours to copy",
          s: ["{ts} FATAL: could not receive data from WAL stream: ERROR: requested WAL segment 000000010000002A000000F3 has already been removed"],
          why: "The primary recycled the WAL the new standby needs before the long copy finished",
          hint: "Attach standbys through a physical replication slot so the primary keeps their WAL",
          fix: "Created a physical replication slot {slot} on {primary}, set primary_slot_name = '{slot}' on {replica} and re-ran the base backup",
          ok: "{replica} streams from {primary} with the slot",
          bad: "the replication slot exists but the standby still cannot start; the archive is corrupt",
          sk: ["has already been removed"],
          fk: ["replication slot", "primary_slot_name"],
        }),
        w({
          t: "Re-seed the standby {replica} after its weekend outage",
          s: ["level=error component=walreceiver msg=\"restart failed\" detail=\"segment no longer retained on upstream {primary}\""],
          why: "Nothing told {primary} to retain WAL for the absent standby, so the segments it asks for are gone",
          hint: "Use a replication slot or wal_keep_size so standbys can resume after an outage",
          fix: "Raised wal_keep_size to 64GB on {primary} and attached {replica} through a replication slot",
          ok: "walreceiver streaming, lag shrinking",
          bad: "wal_keep_size is raised and the replication slot exists, still a gap; a fresh base backup is needed",
          sk: ["no longer retained"],
          fk: ["wal_keep_size", "replication slot"],
        }),
        w({
          t: "Bring the long-stopped reporting standby {replica} back into the cluster",
          s: ["{\"level\":\"ERROR\",\"check\":\"replica_health\",\"host\":\"{replica}\",\"msg\":\"standby stuck: recycled WAL needed for recovery\"}"],
          why: "The standby needs WAL files that the primary already recycled",
          hint: "Create the standby with pg_basebackup --create-slot so WAL is retained for it",
          fix: "Took a fresh base backup with pg_basebackup --slot={slot} --create-slot so the primary retains the WAL",
          ok: "{replica} is in recovery and streaming",
          bad: "--create-slot failed: max_replication_slots is reached",
          sk: ["recycled wal"],
          fk: ["--create-slot"],
        }),
      ]),
      pitfall("pg-hba-replication", "basebackup", [
        w({
          t: "Attach the new {replica} from the other subnet to {primary}",
          s: ["pg_basebackup: error: FATAL: no pg_hba.conf entry for replication connection from host \"{ip}\", user \"replicator\", no encryption"],
          why: "Host-based authentication on {primary} has no line that admits replication from the new subnet",
          hint: "Before adding a standby, add a host replication replicator line for its address and reload",
          fix: "Added 'host replication replicator {ip}/32 scram-sha-256' to pg_hba.conf on {primary} and ran pg_reload_conf()",
          ok: "base backup copied, standby starting",
          bad: "the host replication replicator line is in place but login still fails; the password changed",
          sk: ["no pg_hba.conf entry"],
          fk: ["host replication replicator", "pg_reload_conf"],
        }),
        w({
          t: "Stand up a standby in the disaster recovery datacenter for {primary}",
          s: ["{glog} bootstrap.go:140] replica bootstrap failed: server at {primary} rejects replication login from {ip}"],
          why: "The primary's access rules reject replication logins from the recovery site",
          hint: "Admit the new standby's host for the replication pseudo-database, then pg_reload_conf()",
          fix: "Appended host replication replicator {ip}/32 scram-sha-256 to the access file and reloaded with pg_reload_conf()",
          ok: "bootstrap of the standby completed",
          bad: "the rule was added after a reject line, so pg_reload_conf() changed nothing",
          sk: ["rejects replication login"],
          fk: ["host replication replicator", "pg_reload_conf"],
        }),
        w({
          t: "Provision a read-only copy of {primary} on a host in the new VLAN",
          s: ["[WARN] provision-replica.sh: basebackup step exit code 1, authentication stage denied the streaming client {ip}"],
          why: "The primary's host-based authentication has no rule admitting the streaming client from {ip}",
          hint: "Add a host replication replicator line for the replica before provisioning",
          fix: "Allowed {ip} for the replication pseudo-database in pg_hba.conf (host replication replicator) and ran pg_reload_conf()",
          ok: "provisioning finished",
          bad: "pg_reload_conf() reported true but the client is still turned away; a firewall blocks 5432",
          sk: ["streaming client"],
          fk: ["host replication replicator", "pg_reload_conf"],
        }),
      ]),
      pitfall("pg-recovery-conflict", "verify_reads", [
        w({
          t: "Run the nightly analytics report of about {gb} GB against {replica}",
          s: ["{ts} ERROR: canceling statement due to conflict with recovery DETAIL: User query might have needed to see row versions that must be removed"],
          why: "Replay of cleanup on the primary removed rows the long report still needed, so the standby cancelled it",
          hint: "For long queries on standbys turn on hot_standby_feedback",
          fix: "Set hot_standby_feedback = on on {replica} and raised max_standby_streaming_delay to 15min",
          ok: "the report finished on {replica} in 22 minutes",
          bad: "hot_standby_feedback is on but the report is still cancelled; a lock conflict remains",
          sk: ["conflict with recovery"],
          fk: ["hot_standby_feedback", "max_standby_streaming_delay"],
        }),
        w({
          t: "Point the slow BI dashboards at the standby {replica} instead of the primary",
          s: ["psycopg2.errors.SerializationFailure: dashboard query on {replica} terminated after 31 s (SQLSTATE 40001)"],
          why: "The standby terminates queries whose snapshot blocks WAL replay",
          hint: "Let the standby report its oldest snapshot to the primary (hot_standby_feedback)",
          fix: "Enabled hot_standby_feedback on {replica} and gave replay a longer max_standby_streaming_delay",
          ok: "dashboards load from {replica}",
          bad: "hot_standby_feedback on, dashboards still cut off; they run for hours",
          sk: ["serializationfailure", "sqlstate 40001"],
          fk: ["hot_standby_feedback", "max_standby_streaming_delay"],
        }),
        w({
          t: "Move the hour-long finance extraction job onto the read-only copy {replica}",
          s: ["{\"level\":\"error\",\"job\":\"finance-extract\",\"db\":\"{replica}\",\"error\":\"query aborted: replay of vacuum cleanup removed rows it needed\"}"],
          why: "Vacuum cleanup replayed from the primary removed row versions the extraction still had to read",
          hint: "Turn on hot_standby_feedback so the primary holds back cleanup for standby queries",
          fix: "Turned hot_standby_feedback on for {replica} so the primary keeps the rows",
          ok: "the extraction finished on {replica}",
          bad: "the job still aborts with hot_standby_feedback; the standby restarts every night",
          sk: ["vacuum cleanup"],
          fk: ["hot_standby_feedback"],
        }),
      ]),
    ],
  },
  {
    id: "mongodb",
    name: "operating MongoDB",
    slots: { rs: ["rs0", "rs-orders"], coll: ["orders", "sessions", "events"], mongo: ["mongo-a1", "mongo-b2"] },
    tasks: ["Add an index on {coll}.customerId in {rs}", "Restore the {coll} collection into staging", "Check the health of the replica set {rs}"],
    steps: [
      ["connect", ["mongosh --host {mongo} --eval 'rs.status().ok'"], ["1", "{rs}: 3 members, 1 primary"]],
      ["run_op", ["mongosh app --eval 'db.{coll}.createIndex({customerId: 1})'"], ["index customerId_1 created", "ok: 1, numIndexesAfter: 5"]],
      ["verify", ["mongosh app --eval 'db.{coll}.getIndexes().length'"], ["5", "6"]],
      ["record", ["append the result to change {ticket}"], ["change record updated"]],
    ],
    chatter: ["note: {rs} runs MongoDB 7.0", "note: {user} owns the {coll} data model", "note: the oplog window on {rs} is 40 hours"],
    pitfalls: [
      pitfall("mongo-not-primary", "run_op", [
        w({
          t: "Create the index on {coll} through the direct host address {mongo} from the old runbook",
          s: ["MongoServerError: not primary (code 10107, NotWritablePrimary) while running createIndexes on {coll}"],
          why: "The runbook connects to one member directly, and that member is no longer the primary",
          hint: "Always connect with the replica-set URI (replicaSet=...) so writes find the primary",
          fix: "Connected through the replica-set URI mongodb://mongo-a1,mongo-b2,mongo-c3/app?replicaSet={rs} so writes go to the current primary",
          ok: "index built on {coll}",
          bad: "the replica-set URI is used but writes still fail; the set has no primary at all",
          sk: ["notwritableprimary", "not primary"],
          fk: ["replicaset=", "replica-set uri"],
        }),
        w({
          t: "Run the {coll} cleanup script against the member named in last year's notes",
          s: ["{ts} ERROR pymongo.errors.NotPrimaryError: {mongo}:27017: not master, cleanup of {coll} failed"],
          why: "The script is pinned to a single host that was demoted after an election",
          hint: "Give drivers the seed list and replicaSet={rs} instead of one host",
          fix: "Changed the connection string to the seed list with replicaSet={rs} so the driver discovers the primary",
          ok: "cleanup removed the expired documents",
          bad: "with replicaSet= the driver times out; the members advertise internal hostnames",
          sk: ["notprimaryerror", "not master"],
          fk: ["replicaset=", "seed list"],
        }),
        w({
          t: "Backfill {coll} from the migration container that was configured with one database host",
          s: ["[WARN] migrate-{coll}: write refused by a member in state SECONDARY (errCode 10107), batch {k} failed"],
          why: "The configured host is a secondary now, and secondaries do not take writes",
          hint: "Use a replica-set URI so the driver follows elections",
          fix: "Configured the container with the replica-set URI including replicaSet={rs}",
          ok: "backfill wrote every batch",
          bad: "still refused with the replica-set URI; the user lacks write rights",
          sk: ["state secondary", "errcode 10107"],
          fk: ["replica-set uri", "replicaset="],
        }),
      ]),
      pitfall("mongo-cursor-lost", "run_op", [
        w({
          t: "Backfill a computed field into every document of {coll}, processing each one slowly",
          s: ["{ts} ERROR backfill: MongoServerError: cursor id 8831207733 not found (CursorNotFound, code 43)"],
          why: "The per-document work took so long that the server dropped the idle cursor between batches",
          hint: "Walk big collections in _id range pages instead of one long-lived cursor",
          fix: "Rewrote the backfill to walk {coll} in _id range pages of 500 documents, each a fresh short query",
          ok: "backfill touched every document",
          bad: "the _id range pages still fail; the session itself expires",
          sk: ["cursornotfound"],
          fk: ["_id range"],
        }),
        w({
          t: "Re-tag all {coll} records with the new tenant id in a Python job",
          s: ["pymongo.errors.OperationFailure: Cursor not valid at server, error code 43 while re-tagging {coll}"],
          why: "Iteration paused longer than the server keeps an inactive cursor",
          hint: "Page by _id range with short queries so no cursor idles",
          fix: "Split the job into _id range queries of 500 documents each and processed each page before fetching the next",
          ok: "all records re-tagged",
          bad: "_id range paging is in, still failing; the collection has no _id index",
          sk: ["cursor not valid at server"],
          fk: ["_id range"],
        }),
        w({
          t: "Recompute the search keywords of the whole {coll} collection with the slow tokenizer",
          s: ["{glog} backfill.go:203] getMore failed after 11 min: server reaped the idle cursor on {mongo}"],
          why: "The driver asked for the next batch after the server had reaped the cursor",
          hint: "Query in _id range chunks so each cursor lives only seconds",
          fix: "Iterated over _id range chunks (find with $gt the last _id, limit 500) instead of a single cursor",
          ok: "keywords recomputed for the collection",
          bad: "still reaped with _id range chunks; the tokenizer blocks for minutes per document",
          sk: ["reaped the idle cursor", "getmore failed"],
          fk: ["_id range"],
        }),
      ]),
      pitfall("mongo-doc-too-large", "run_op", [
        w({
          t: "Append every {coll} event of the biggest tenant into its single aggregate document",
          s: ["MongoServerError: BSONObjectTooLarge: document to insert is larger than the maximum size 16777216"],
          why: "One document per tenant keeps growing and passed the 16 MB document limit",
          hint: "Store growing lists with the bucket pattern instead of one ever-growing document",
          fix: "Moved the growing array into a {coll}_buckets collection (bucket pattern, 1000 entries per bucket document)",
          ok: "appends succeed in the new buckets",
          bad: "the bucket pattern is in, still too large; a single entry is 20 MB",
          sk: ["bsonobjecttoolarge", "16777216"],
          fk: ["bucket pattern", "bucket per"],
        }),
        w({
          t: "Keep pushing audit entries onto the per-account history array in {coll}",
          s: ["{ts} [ERROR] WriteError code 10334: resulting document after update is larger than 16 MiB"],
          why: "The history array made the account document exceed the hard per-document size",
          hint: "Split unbounded arrays with the bucket pattern",
          fix: "Split the entries into bucket documents of 1000 entries (bucket pattern) instead of one growing array",
          ok: "history writes go to the latest bucket",
          bad: "after the bucket pattern change the reads are too slow",
          sk: ["larger than 16 mib"],
          fk: ["bucket pattern"],
        }),
        w({
          t: "Record each sensor reading inside the one device document in {coll}",
          s: ["{\"level\":\"error\",\"svc\":\"ingest\",\"msg\":\"update exceeded the per-document limit\",\"doc\":\"device-{k}\",\"size_mb\":16.2}"],
          why: "Readings accumulate in one device document until it hits the size cap",
          hint: "Use a separate collection with one bucket per batch of readings",
          fix: "Stored the readings in a {coll}_buckets collection, one bucket per 1000 entries",
          ok: "ingest stable, no size failures",
          bad: "the _buckets collection fills but some buckets still overflow; readings carry images",
          sk: ["per-document limit"],
          fk: ["bucket per"],
        }),
      ]),
    ],
  },
  {
    id: "rabbitmq",
    name: "running RabbitMQ queues",
    slots: { vhost: ["/orders", "/billing"], queue: ["invoice.created", "email.outbound", "thumbnail.jobs"], broker: ["rmq-1", "rmq-2"] },
    tasks: ["Declare the {queue} queue on {vhost}", "Move the {queue} consumers to the new worker pool", "Check the message rates on {queue}"],
    steps: [
      ["declare", ["rabbitmqadmin -V {vhost} declare queue name={queue} durable=true"], ["queue declared"]],
      ["publish", ["publish 1000 test messages to {queue} through the producer API"], ["1000 messages confirmed by {broker}"]],
      ["consume", ["start 4 workers consuming {queue}"], ["workers acked 1000 messages", "queue drained in 14 s"]],
      ["inspect", ["rabbitmqctl list_queues -p {vhost} name messages consumers"], ["{queue} 0 4"]],
    ],
    chatter: ["note: {broker} runs RabbitMQ 3.13", "note: {user} owns the {queue} consumers", "note: the management UI shows steady rates"],
    pitfalls: [
      pitfall("rmq-queue-args", "declare", [
        w({
          t: "Switch {queue} on {vhost} to a quorum queue",
          s: ["{ts} ERROR amqp: channel closed by server: 406 (PRECONDITION-FAILED) with message \"inequivalent arg 'x-queue-type' for queue '{queue}'\""],
          why: "A queue cannot change its type in place; redeclaring {queue} with other arguments is rejected",
          hint: "Change queue arguments by creating the queue under a new queue name and moving consumers over",
          fix: "Declared the quorum variant under a new queue name ({queue}.q), moved the consumers, then deleted the old classic queue",
          ok: "consumers read from the quorum queue",
          bad: "the new queue name works but publishers still send to the old queue",
          sk: ["precondition-failed", "inequivalent arg"],
          fk: ["new queue name"],
        }),
        w({
          t: "Make {queue} durable so its messages survive a broker restart",
          s: ["{glog} consumer.go:64] amqp declare failed: Exception (406) Reason: existing queue {queue} declared with different durable flag"],
          why: "The live queue was declared transient; a declaration with other flags is refused",
          hint: "Drain and remove the queue with delete_queue, then redeclare it with the new flags",
          fix: "Drained {queue}, removed it with rabbitmqctl delete_queue and redeclared it durable",
          ok: "{queue} is durable now",
          bad: "delete_queue ran but an old client redeclared the queue transient first",
          sk: ["declared with different"],
          fk: ["delete_queue"],
        }),
        w({
          t: "Add a dead-letter exchange and message TTL to the existing {queue}",
          s: ["{\"level\":\"error\",\"logger\":\"kombu\",\"event\":\"queue redeclare failed\",\"queue\":\"{queue}\",\"reason\":\"arguments mismatch with the live queue\"}"],
          why: "Optional arguments are fixed at creation; the new arguments clash with the existing queue",
          hint: "Create a replacement queue and shovel the backlog over instead of redeclaring",
          fix: "Created a replacement queue with the new arguments, shovelled the backlog over and deleted the old one",
          ok: "messages dead-letter as expected",
          bad: "the shovel stalled half-way through the backlog",
          sk: ["arguments mismatch"],
          fk: ["shovel"],
        }),
      ]),
      pitfall("rmq-memory-alarm", "publish", [
        w({
          t: "Replay the {k} thousand message backlog into {queue} in one go",
          s: ["{ts} [error] memory resource limit alarm set on node rabbit@{broker}; all publishers blocked"],
          why: "The replay filled the broker's memory past its watermark and it blocked every publisher",
          hint: "Cap big queues with a max-length policy and give the broker a sane vm_memory_high_watermark",
          fix: "Raised vm_memory_high_watermark.relative to 0.6 and set a max-length policy on {queue}",
          ok: "replay done, the alarm stayed clear",
          bad: "vm_memory_high_watermark raised, the alarm fires again; the node has too little RAM",
          sk: ["resource limit alarm"],
          fk: ["vm_memory_high_watermark", "max-length"],
        }),
        w({
          t: "Bulk-load last month's invoices as messages into {queue}",
          s: ["{glog} producer.go:120] publish failed: connection.blocked received from {broker} (low on memory)"],
          why: "The broker crossed its memory threshold and blocked publishing connections",
          hint: "Bound queues with max-length and tune vm_memory_high_watermark before bulk loads",
          fix: "Set a max-length policy with overflow reject-publish and lifted vm_memory_high_watermark to 0.6",
          ok: "bulk load completed without blocking",
          bad: "still blocked with max-length; a different queue holds the memory",
          sk: ["connection.blocked"],
          fk: ["max-length", "vm_memory_high_watermark"],
        }),
        w({
          t: "Push the whole image reprocessing batch into {queue} before the workers start",
          s: ["{\"level\":\"error\",\"service\":\"producer\",\"msg\":\"publish timeout after 30s\",\"broker\":\"{broker}\",\"state\":\"flow blocked by broker\"}"],
          why: "Publishing outran consumption until the broker throttled all producers",
          hint: "Put a max-length policy on batch queues",
          fix: "Added a max-length policy to {queue} and raised vm_memory_high_watermark on {broker}",
          ok: "producer finished, workers caught up",
          bad: "the max-length policy rejects most of the batch now",
          sk: ["flow blocked"],
          fk: ["max-length", "vm_memory_high_watermark"],
        }),
      ]),
      pitfall("rmq-prefetch", "consume", [
        w({
          t: "Consume {queue} with the slow PDF rendering worker",
          s: ["{ts} ERROR channel error: PRECONDITION_FAILED - delivery acknowledgement on channel 1 timed out after 1800000 ms"],
          why: "Without a prefetch limit the worker took thousands of messages and could not ack them within the consumer timeout",
          hint: "Set a small prefetch (basic.qos) on slow consumers",
          fix: "Set basic.qos prefetch_count=20 on the consumer channel and acked each message after rendering",
          ok: "renders flow steadily, no channel errors",
          bad: "prefetch 20 and still timing out; one render takes 40 minutes",
          sk: ["delivery acknowledgement"],
          fk: ["prefetch", "basic.qos"],
        }),
        w({
          t: "Scale the {queue} workers out to the new pool of small containers",
          s: ["[WARN] worker-3 was killed by the kernel after buffering 48000 unacked deliveries from {queue} (exit code 137)"],
          why: "The worker accepted the whole backlog into memory because nothing limited in-flight messages",
          hint: "Limit in-flight messages per consumer with a prefetch count",
          fix: "Configured a prefetch count of 20 per worker so each holds only a few messages",
          ok: "memory per worker stays flat",
          bad: "with prefetch set the worker still grows; it leaks memory per message",
          sk: ["unacked deliveries"],
          fk: ["prefetch"],
        }),
        w({
          t: "Add three more consumers to {queue} to speed up thumbnails",
          s: ["{glog} dispatch.go:33] dispatch error, deadline exceeded: consumer worker-1 holds all 9000 messages of {queue}, others idle"],
          why: "The first consumer grabbed every message at once, so the added consumers got nothing to do",
          hint: "Use basic.qos to spread messages across consumers",
          fix: "Applied basic.qos with prefetch_count 20 so messages spread evenly over the consumers",
          ok: "all four consumers busy, throughput tripled",
          bad: "basic.qos applied, still uneven; the consumers use autoAck",
          sk: ["others idle"],
          fk: ["basic.qos", "prefetch"],
        }),
      ]),
    ],
  },
  {
    id: "systemd",
    name: "managing systemd services",
    slots: { unit: ["report-worker", "metrics-agent", "sync-daemon"], host: ["app-07", "batch-02"] },
    tasks: ["Install the {unit} service on {host}", "Upgrade {unit} on {host} to {ver}", "Restart {unit} on {host} after the config change"],
    steps: [
      ["install_unit", ["install -m 644 {unit}.service /etc/systemd/system/ on {host}"], ["unit file copied"]],
      ["daemon_reload", ["systemctl daemon-reload"], ["(no output)"]],
      ["start", ["systemctl enable --now {unit}"], ["Created symlink for {unit}.service"]],
      ["status", ["systemctl is-active {unit}"], ["active", "active (running) since 2 s"]],
    ],
    chatter: ["note: {host} was patched last week", "note: {user} asked to keep {unit} logs for 14 days", "note: journald disk usage on {host} is 1.2 GB"],
    pitfalls: [
      pitfall("systemd-forking", "start", [
        w({
          t: "Install the legacy {unit} daemon, which backgrounds itself, on {host}",
          s: ["{ts} ERROR systemd[1]: {unit}.service: start operation timed out. Terminating."],
          why: "The unit says the service stays in the foreground, but the binary forks away, so systemd waits and then stops it",
          hint: "Describe self-backgrounding daemons with Type=forking and a PIDFile=",
          fix: "Set Type=forking with PIDFile=/run/{unit}.pid in the unit so systemd follows the child",
          ok: "{unit} active (running)",
          bad: "Type=forking set, still stopped; the daemon writes its pid file elsewhere",
          sk: ["start operation timed out"],
          fk: ["type=forking", "pidfile="],
        }),
        w({
          t: "Run the vendor's old {unit} init script as a proper service on {host}",
          s: ["Job for {unit}.service failed because a timeout was exceeded. See \"systemctl status {unit}.service\" for details."],
          why: "The vendor script detaches the real process, which the unit's default type does not expect",
          hint: "Declare Type=forking for scripts that detach and point PIDFile= at their pid file",
          fix: "Declared the service as Type=forking and pointed PIDFile= at the pid file the script writes",
          ok: "service starts and stays up",
          bad: "Type=forking and PIDFile= in place, the job still fails; the script needs a TTY",
          sk: ["a timeout was exceeded"],
          fk: ["type=forking", "pidfile="],
        }),
        w({
          t: "Move {unit} from the rc.local hack on {host} to a managed unit",
          s: ["level=error unit={unit}.service result=timeout msg=\"main process left right after daemonizing, never reported ready\""],
          why: "The program daemonizes itself, so the service manager loses track of it and gives up",
          hint: "Tell systemd the process forks: Type=forking plus PIDFile=",
          fix: "Told systemd the process forks: Type=forking plus PIDFile=/run/{unit}.pid",
          ok: "{unit} supervised and restarting on failure",
          bad: "Type=forking makes no difference; the program double-forks and writes no pid file",
          sk: ["daemoniz"],
          fk: ["type=forking", "pidfile="],
        }),
      ]),
      pitfall("systemd-environment", "start", [
        w({
          t: "Run {unit} as a service on {host} instead of from the admin's login shell",
          s: ["{unit}[{pid}]: KeyError: 'DATABASE_URL' raised in settings.py, startup error"],
          why: "A unit does not inherit the login shell's environment; DATABASE_URL from the admin profile is missing",
          hint: "Put service settings in an env file and load it with EnvironmentFile=",
          fix: "Moved the variables into /etc/{unit}.env and referenced it with EnvironmentFile=/etc/{unit}.env in the unit",
          ok: "{unit} started with its settings",
          bad: "EnvironmentFile= is set but the value is still missing; the file uses export statements",
          sk: ["database_url"],
          fk: ["environmentfile="],
        }),
        w({
          t: "Turn the {unit} cron wrapper on {host} into a long-running unit",
          s: ["{glog} config.go:31] fatal error: required variable SERVICE_TOKEN is unset; {unit} exits"],
          why: "The cron wrapper sourced a profile that set SERVICE_TOKEN; the unit starts with a bare environment",
          hint: "Give units their variables through EnvironmentFile= rather than shell profiles",
          fix: "Wrote SERVICE_TOKEN and the other settings to /etc/{unit}.env and added EnvironmentFile= to the unit",
          ok: "the unit runs with the token",
          bad: "EnvironmentFile= points at the file but SELinux blocks reading it",
          sk: ["service_token"],
          fk: ["environmentfile="],
        }),
        w({
          t: "Enable {unit} at boot on {host}; today someone starts it by hand after logging in",
          s: ["{host} systemd[1]: {unit}.service: Main process exited, code=exited, status=78/CONFIG; Failed with result 'exit-code'"],
          why: "Started by the manager, the program misses configuration variables it only ever got from an interactive login",
          hint: "Load the settings file through EnvironmentFile= in the unit",
          fix: "Added EnvironmentFile=/etc/{unit}.env holding the variables that used to come from the login shell",
          ok: "{unit} comes up at boot",
          bad: "EnvironmentFile= loaded, still status 78; a config path is wrong",
          sk: ["78/config"],
          fk: ["environmentfile="],
        }),
      ]),
      pitfall("systemd-state-dir", "status", [
        w({
          t: "Run {unit} on {host} under its own unprivileged service user",
          s: ["{ts} ERROR {unit}: cannot create /var/lib/{unit}/state.db: EACCES (Permission denied)"],
          why: "The new service user cannot write the data directory, which root created",
          hint: "Let systemd create the data directory for the service user with StateDirectory=",
          fix: "Added StateDirectory={unit} to the unit so systemd creates /var/lib/{unit} owned by the service user",
          ok: "{unit} writes its state",
          bad: "StateDirectory= set but the old root-owned files inside remain unwritable",
          sk: ["eacces"],
          fk: ["statedirectory="],
        }),
        w({
          t: "Harden {unit} on {host} with DynamicUser=yes",
          s: ["{unit}[{pid}]: PermissionError: [Errno 13] writing /var/lib/{unit}/cache/index failed"],
          why: "With a dynamic user the service has no writable home for its cache",
          hint: "With DynamicUser=yes declare StateDirectory= for anything the service writes",
          fix: "Declared StateDirectory={unit} so the dynamic user gets a writable /var/lib/{unit}",
          ok: "cache index written",
          bad: "StateDirectory= is in place but the code writes to /opt instead",
          sk: ["errno 13"],
          fk: ["statedirectory="],
        }),
        w({
          t: "Drop root privileges from {unit} on {host} as the security review asked",
          s: ["{\"level\":\"fatal\",\"unit\":\"{unit}\",\"error\":\"mkdir /var/lib/{unit}: operation not permitted\",\"uid\":991}"],
          why: "Without root the program may not create its own directory under /var/lib",
          hint: "Have the unit provide the directory: StateDirectory=",
          fix: "Used StateDirectory={unit} in the unit so the directory exists with the right owner",
          ok: "{unit} runs as uid 991",
          bad: "StateDirectory= created the directory but ProtectSystem=strict still hides it",
          sk: ["operation not permitted"],
          fk: ["statedirectory="],
        }),
      ]),
    ],
  },
  {
    id: "jvm",
    name: "running JVM services",
    slots: { app: ["order-service", "pricing-engine", "catalog-sync"], pod: ["jvm-node-1", "jvm-node-4"] },
    tasks: ["Upgrade {app} to {ver} on {pod}", "Tune the request handling of {app}", "Run the nightly batch of {app} on {pod}"],
    steps: [
      ["build", ["./gradlew :{app}:bootJar"], ["BUILD SUCCESSFUL in 48s"]],
      ["start", ["java -jar {app}.jar on {pod}"], ["Started {app} in 12.4 seconds"]],
      ["workload", ["run the load profile of {k} requests against {app}"], ["p99 84 ms, no errors", "throughput 1900 rps"]],
      ["check_metrics", ["curl {pod}:8080/actuator/metrics/jvm.memory.used"], ["jvm.memory.used 1.2 GB"]],
    ],
    chatter: ["note: {app} runs on Temurin 21", "note: {user} owns the {app} dashboards", "note: {pod} has 8 cores"],
    pitfalls: [
      pitfall("jvm-heap-space", "workload", [
        w({
          t: "Process the full {gb} GB catalogue import in {app}",
          s: ["Exception in thread \"import-worker-7\" java.lang.OutOfMemoryError: Java heap space"],
          why: "The import holds more objects than the heap limit allows",
          hint: "Give heavy imports a larger heap with -Xmx sized to the container",
          fix: "Raised the heap to -Xmx6g on the 8 GiB pod and streamed the import in chunks",
          ok: "import finished with 3.9 GB peak heap",
          bad: "still out of heap with -Xmx6g; a cache grows without bound",
          sk: ["java heap space"],
          fk: ["-xmx"],
        }),
        w({
          t: "Let {app} load the whole price history into memory for the yearly recalculation",
          s: ["{ts} ERROR [gc] GC overhead limit exceeded; {app} spent 98% of its time collecting"],
          why: "The heap is nearly full, so the collector runs constantly and frees almost nothing",
          hint: "Size -Xmx for the data set the job loads",
          fix: "Started {app} with -Xmx6g so the price history fits with headroom",
          ok: "recalculation done in 14 minutes",
          bad: "the overhead limit persists with -Xmx6g; the data set is larger than expected",
          sk: ["gc overhead limit"],
          fk: ["-xmx"],
        }),
        w({
          t: "Rebuild all product documents of {app} at once for the search reindex",
          s: ["{\"level\":\"ERROR\",\"logger\":\"batch\",\"msg\":\"job aborted\",\"cause\":\"heap exhausted: old gen 99.8% after full collection\"}"],
          why: "The reindex keeps every document alive until the end and fills the old generation",
          hint: "Raise -Xmx for reindex jobs",
          fix: "Increased the maximum heap (-Xmx6g) for the reindex job",
          ok: "reindex completed",
          bad: "-Xmx6g did not help; the job keeps references in a static list",
          sk: ["heap exhausted"],
          fk: ["-xmx"],
        }),
      ]),
      pitfall("jvm-container-limit", "start", [
        w({
          t: "Move {app} into a 2 GiB container on {pod}",
          s: ["{ts} ERROR kubelet: container {app} terminated: OOMKilled (exit code 137) while heap usage was only 61%"],
          why: "The JVM sizes itself beyond the container: heap plus metaspace, threads and buffers exceed 2 GiB",
          hint: "Size the heap relative to the container with -XX:MaxRAMPercentage",
          fix: "Dropped the hard-coded heap flag and set -XX:MaxRAMPercentage=70 so heap plus native memory fit the container",
          ok: "{app} stable in 2 GiB",
          bad: "MaxRAMPercentage=70 and still killed; direct buffers grow unbounded",
          sk: ["oomkilled"],
          fk: ["maxrampercentage"],
        }),
        w({
          t: "Squeeze {app} onto the smaller instances of the new node pool",
          s: ["dmesg: Memory cgroup out of memory: Killed process {pid} (java) total-vm:5.1GB anon-rss:2.0GB"],
          why: "The kernel killed the JVM because its total footprint passed the cgroup limit",
          hint: "Let the JVM derive its heap from the cgroup limit (MaxRAMPercentage)",
          fix: "Replaced the fixed heap size with -XX:MaxRAMPercentage=70",
          ok: "no more kernel kills",
          bad: "with MaxRAMPercentage still killed by the kernel; a native library leaks",
          sk: ["memory cgroup out of memory"],
          fk: ["maxrampercentage"],
        }),
        w({
          t: "Cut the memory request of {app} on {pod} to save cost",
          s: ["[WARN] {app} restarted 6 times: exit status 137, last line 'Started {app}', no heap error logged"],
          why: "Something outside the heap pushes the process over the smaller limit and it is killed without a Java error",
          hint: "Budget the heap as a share of the container: -XX:MaxRAMPercentage=70",
          fix: "Set -XX:MaxRAMPercentage=70 for {app} to leave room for non-heap memory",
          ok: "{app} up for three days",
          bad: "MaxRAMPercentage lowered, still restarting; the limit is simply too small",
          sk: ["exit status 137"],
          fk: ["maxrampercentage"],
        }),
      ]),
      pitfall("jvm-thread-explosion", "workload", [
        w({
          t: "Let {app} fan out one task per incoming order line during the sale",
          s: ["java.lang.OutOfMemoryError: unable to create native thread: possibly out of memory or process/resource limits reached"],
          why: "An unbounded executor starts a new thread for every task until the process limit is reached",
          hint: "Use a bounded thread pool instead of a cached executor",
          fix: "Replaced the cached executor with a bounded thread pool (newFixedThreadPool(64) behind a 1000-slot queue)",
          ok: "thread count stays at 64",
          bad: "the bounded thread pool rejects tasks now; the queue is too small",
          sk: ["unable to create native thread"],
          fk: ["bounded thread pool", "newfixedthreadpool"],
        }),
        w({
          t: "Have {app} call the slow tax service in parallel for each item",
          s: ["{ts} ERROR jstack: {app} has 31874 live threads (pool-3-thread-*), requests failing"],
          why: "Every slow call parks another pool thread, and the pool grows without a cap",
          hint: "Cap concurrency with newFixedThreadPool",
          fix: "Switched to newFixedThreadPool(64) with a bounded queue for the tax calls",
          ok: "live threads under 200",
          bad: "newFixedThreadPool in place, calls time out; the tax service is down",
          sk: ["live threads"],
          fk: ["newfixedthreadpool"],
        }),
        w({
          t: "Parallelise the {app} image fetches per product on {pod}",
          s: ["level=error app={app} msg=\"task rejected\" err=\"pthread_create failed (EAGAIN)\""],
          why: "The process ran out of thread slots because every fetch got its own thread",
          hint: "Run fetches on a bounded thread pool",
          fix: "Ran the fetches on a bounded thread pool of 64 threads",
          ok: "fetches complete, no rejected tasks",
          bad: "the bounded thread pool queues up; fetches take too long",
          sk: ["pthread_create"],
          fk: ["bounded thread pool"],
        }),
      ]),
      pitfall("jvm-gc-pause", "check_metrics", [
        w({
          t: "Serve the 24 GB in-memory price cache of {app} with tight latency",
          s: ["{ts} ERROR gateway: upstream {app} timeout after 3000 ms during [Full GC (Allocation Failure) 7.9G->7.1G, 4.21 secs]"],
          why: "The throughput collector stops the application for seconds on the big heap",
          hint: "Use ZGC for large heaps with latency targets",
          fix: "Switched {app} to ZGC (-XX:+UseZGC) so collection pauses stay in the millisecond range",
          ok: "max pause 1.2 ms",
          bad: "ZGC on, still timeouts; the slowness is in the database",
          sk: ["full gc"],
          fk: ["-xx:+usezgc", "zgc"],
        }),
        w({
          t: "Keep {app} responsive while it holds the session cache for all users",
          s: ["{glog} health.go:40] liveness check failed: {app} stopped the world for 6.8 s at a safepoint"],
          why: "Long stop-the-world pauses freeze the service long enough to fail its liveness check",
          hint: "Replace the parallel collector with ZGC",
          fix: "Replaced the collector with ZGC (-XX:+UseZGC) on {pod}",
          ok: "liveness checks pass",
          bad: "ZGC enabled but the pauses remain; they come from a safepoint bias revocation",
          sk: ["stopped the world", "safepoint"],
          fk: ["zgc", "-xx:+usezgc"],
        }),
        w({
          t: "Raise the cache size of {app} to 20 GB on {pod}",
          s: ["{\"level\":\"error\",\"svc\":\"{app}\",\"msg\":\"p99 latency breach 5400 ms\",\"gc\":\"ParallelGC\",\"pause_ms\":5120}"],
          why: "ParallelGC pauses grow with the heap and blow the latency budget",
          hint: "Pick a low-pause collector (-XX:+UseZGC) for big caches",
          fix: "Moved {app} from ParallelGC to -XX:+UseZGC",
          ok: "p99 back to 90 ms",
          bad: "-XX:+UseZGC did not change p99; the cache lookups lock",
          sk: ["pause_ms", "parallelgc"],
          fk: ["-xx:+usezgc"],
        }),
      ]),
    ],
  },
  {
    id: "frontend",
    name: "bundling the frontend",
    slots: { appname: ["storefront", "admin-ui", "docs-site"] },
    tasks: ["Build {appname} for production", "Upgrade the bundler config of {appname}", "Add the new account page to {appname}"],
    steps: [
      ["install", ["npm ci in {appname}"], ["added 1412 packages in 38s"]],
      ["build", ["npm run build -w {appname}"], ["dist/ written, 14 chunks", "built in 41.2s"]],
      ["size_check", ["npx size-limit in {appname}"], ["main chunk 182 kB, within budget"]],
      ["publish", ["rclone sync dist/ cdn:{appname}/"], ["uploaded 42 files"]],
    ],
    chatter: ["note: {appname} uses React 18", "note: {user} reviews bundler changes", "note: Lighthouse score for {appname} is 91"],
    pitfalls: [
      pitfall("fe-node-heap", "build", [
        w({
          t: "Build {appname} after the icon library with 6000 modules was added",
          s: ["FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory"],
          why: "Node's default old-space limit is too small for the grown module graph",
          hint: "Raise Node's heap for big builds with NODE_OPTIONS=--max-old-space-size",
          fix: "Ran the build with NODE_OPTIONS=--max-old-space-size=6144",
          ok: "build finished in 2m10s",
          bad: "max-old-space-size=6144 and still crashing; the runner has 4 GB",
          sk: ["javascript heap out of memory"],
          fk: ["max-old-space-size"],
        }),
        w({
          t: "Produce the production bundle of {appname} with source maps for every chunk",
          s: ["<--- Last few GCs ---> [{pid}:0x5d3] 91200 ms: Mark-Compact 2046.1 -> 2044.9 MB, allocation failure; scavenge might not succeed"],
          why: "The bundler's process hits the V8 old-space ceiling while generating source maps",
          hint: "Give the bundler more V8 old space via --max-old-space-size",
          fix: "Set NODE_OPTIONS=--max-old-space-size=6144 for the build step",
          ok: "bundle and maps written",
          bad: "the larger max-old-space-size only delays the crash",
          sk: ["mark-compact", "scavenge might not succeed"],
          fk: ["max-old-space-size"],
        }),
        w({
          t: "Compile {appname} with the new design system package on the CI runner",
          s: ["npm ERR! {appname}@{ver} build: `vite build` process killed by signal SIGABRT (exit code 134)"],
          why: "The build aborts when V8 runs out of its default heap",
          hint: "Export NODE_OPTIONS with a larger max-old-space-size in CI",
          fix: "Exported NODE_OPTIONS=--max-old-space-size=6144 in the CI job",
          ok: "vite build completed",
          bad: "max-old-space-size is set but the job still aborts; a plugin loops",
          sk: ["sigabrt", "exit code 134"],
          fk: ["max-old-space-size"],
        }),
      ]),
      pitfall("fe-import-casing", "build", [
        w({
          t: "Build {appname} on the Linux CI runners for the first time (the developers use macOS)",
          s: ["Module not found: Error: Can't resolve './components/Button' in '/build/{appname}/src'"],
          why: "The file is button.tsx; macOS ignores letter case in paths, the Linux runner does not",
          hint: "Add case-sensitive-paths-webpack-plugin so wrong casing fails on every machine",
          fix: "Renamed the imports to the exact on-disk casing and added case-sensitive-paths-webpack-plugin",
          ok: "the Linux build resolves every module",
          bad: "case-sensitive-paths reports nothing; the file is missing from git",
          sk: ["can't resolve"],
          fk: ["case-sensitive-paths"],
        }),
        w({
          t: "Move the {appname} build into the Debian-based container",
          s: ["[vite]: Rollup failed to resolve import \"./Components/header\" from \"src/App.tsx\""],
          why: "The directory is components/ in lower case; the container's file system is case-sensitive",
          hint: "Turn on forceConsistentCasingInFileNames so casing mistakes surface early",
          fix: "Fixed the import casing to match the files and turned on forceConsistentCasingInFileNames in tsconfig",
          ok: "container build green",
          bad: "forceConsistentCasingInFileNames on, still failing; git tracks both spellings",
          sk: ["failed to resolve import"],
          fk: ["forceconsistentcasinginfilenames"],
        }),
        w({
          t: "Type-check {appname} in the pipeline after the utils folder was reorganised",
          s: ["error TS1261: Already included file name 'utils/Format.ts' differs from file name 'utils/format.ts' only in casing"],
          why: "Two imports spell the same file with different letter case",
          hint: "Keep forceConsistentCasingInFileNames on and fix the import spellings",
          fix: "Unified the import spelling and kept forceConsistentCasingInFileNames enabled",
          ok: "tsc passes",
          bad: "with forceConsistentCasingInFileNames still two spellings in generated code",
          sk: ["only in casing", "ts1261"],
          fk: ["forceconsistentcasinginfilenames"],
        }),
      ]),
      pitfall("fe-stale-chunks", "publish", [
        w({
          t: "Release {appname} {ver} while customers keep the app open in tabs all day",
          s: ["ChunkLoadError: Loading chunk 742 failed. (error: https://cdn.example.net/{appname}/742.3f9a1c.js)"],
          why: "The deploy deleted the previous build's hashed chunks that open tabs still reference",
          hint: "Keep old hashed assets on deploy and serve index.html with Cache-Control: no-cache",
          fix: "Stopped deleting old hashed assets (sync without --delete) and served index.html with Cache-Control: no-cache",
          ok: "open tabs keep working across releases",
          bad: "without --delete old chunks stay, but a CDN purge removes them anyway",
          sk: ["chunkloaderror"],
          fk: ["without --delete", "cache-control: no-cache"],
        }),
        w({
          t: "Ship the {appname} update that splits the checkout route into its own chunk",
          s: ["{ts} ERROR sentry: TypeError: Failed to fetch dynamically imported module: /assets/Checkout-9b1e.js"],
          why: "Browsers with the previous HTML ask for a chunk file name that no longer exists on the CDN",
          hint: "Keep the previous release's assets (sync without --delete); never cache index.html",
          fix: "Kept the previous release's assets by syncing without --delete and marked index.html Cache-Control: no-cache",
          ok: "no more import errors in Sentry",
          bad: "assets kept, but a service worker still serves the old HTML",
          sk: ["dynamically imported module"],
          fk: ["without --delete", "cache-control: no-cache"],
        }),
        w({
          t: "Redeploy {appname} twice in one afternoon for the hotfixes",
          s: ["{\"level\":\"error\",\"cdn\":\"edge\",\"status\":404,\"path\":\"/assets/index-2c81e0.js\",\"referer\":\"a cached index.html of the last deploy\"}"],
          why: "A cached index.html points at assets the redeploy removed",
          hint: "Serve index.html with Cache-Control: no-cache and retain old assets",
          fix: "Set Cache-Control: no-cache on index.html and stopped pruning old assets on deploy",
          ok: "404s on assets dropped to zero",
          bad: "index.html no-cache set, still 404s; the CDN ignores origin headers",
          sk: ["cached index.html"],
          fk: ["cache-control: no-cache"],
        }),
      ]),
    ],
  },
  {
    id: "ansible",
    name: "running Ansible playbooks",
    slots: { play: ["site.yml", "db.yml", "web.yml"], group: ["webservers", "dbservers", "edge"], inv: ["inventories/prod", "inventories/stage"] },
    tasks: ["Run {play} against {group}", "Apply the new sysctl role to {group}", "Dry-run {play} on {inv}"],
    steps: [
      ["syntax", ["ansible-playbook {play} --syntax-check"], ["playbook: {play}"]],
      ["ping", ["ansible {group} -i {inv} -m ping"], ["all hosts SUCCESS => pong"]],
      ["run", ["ansible-playbook -i {inv} {play} --limit {group}"], ["PLAY RECAP ok=34 changed=3 unreachable=0", "PLAY RECAP ok=41 changed=0"]],
      ["verify", ["ansible {group} -i {inv} -a 'nginx -t'"], ["syntax is ok on every host"]],
    ],
    chatter: ["note: {inv} lists 38 hosts", "note: {user} maintains the common role", "note: the last {play} run was on {date}"],
    pitfalls: [
      pitfall("ansible-become", "run", [
        w({
          t: "Run {play} on the {group} hosts that were re-imaged without passwordless sudo",
          s: ["fatal: [web-03]: FAILED! => {\"msg\": \"Missing sudo password\"}"],
          why: "The fresh images require a password for sudo and the play supplies none",
          hint: "Store the become password as ansible_become_password in an encrypted group_vars file",
          fix: "Stored the become password in group_vars/{group}/secrets.yml as ansible_become_password and ran with --ask-vault-pass",
          ok: "PLAY RECAP failed=0",
          bad: "ansible_become_password is set but wrong for half of the hosts",
          sk: ["missing sudo password"],
          fk: ["ansible_become_password"],
        }),
        w({
          t: "Apply {play} to the {group} machines handed over by the other team",
          s: ["{ts} ERROR ansible: Timeout (12s) waiting for privilege escalation prompt on db-02"],
          why: "These hosts prompt for a sudo password that the run never sends",
          hint: "Pass --ask-become-pass or set ansible_become_password for such hosts",
          fix: "Ran the play with --ask-become-pass and then saved the value as ansible_become_password for the group",
          ok: "all tasks applied on the handed-over hosts",
          bad: "--ask-become-pass given, still hanging; requiretty is set in sudoers",
          sk: ["privilege escalation prompt"],
          fk: ["--ask-become-pass", "ansible_become_password"],
        }),
        w({
          t: "Push the sysctl role from {play} to {group} after the sudoers hardening",
          s: ["[WARN] edge-1: become step rc=1, stderr 'sudo: a password is required', task failed"],
          why: "The hardening removed NOPASSWD, so every become step now needs a password",
          hint: "Provide ansible_become_password from an encrypted vars file",
          fix: "Added ansible_become_password to the encrypted vars of {group}",
          ok: "role applied everywhere",
          bad: "the password is accepted but the user is not in sudoers at all",
          sk: ["a password is required"],
          fk: ["ansible_become_password"],
        }),
      ]),
      pitfall("ansible-interpreter", "ping", [
        w({
          t: "Manage the freshly installed {group} hosts of the new OS release with {play}",
          s: ["web-07 | FAILED! => {\"changed\": false, \"module_stderr\": \"/bin/sh: 1: /usr/bin/python: not found\", \"rc\": 127}"],
          why: "The new release ships only python3, and the inventory still points at /usr/bin/python",
          hint: "Set ansible_python_interpreter=/usr/bin/python3 for new OS releases",
          fix: "Set ansible_python_interpreter=/usr/bin/python3 for {group} in group_vars",
          ok: "all hosts SUCCESS",
          bad: "ansible_python_interpreter set, still failing; python3 is missing on minimal images",
          sk: ["/usr/bin/python: not found"],
          fk: ["ansible_python_interpreter"],
        }),
        w({
          t: "Add the minimal cloud images of {group} to {inv}",
          s: ["{ts} [ERROR]: module failure on db-05: interpreter discovery found no usable Python (rc 127)"],
          why: "Automatic discovery finds no interpreter at the old default path",
          hint: "Pin ansible_python_interpreter in the inventory",
          fix: "Pinned ansible_python_interpreter=/usr/bin/python3 for the group in {inv}",
          ok: "facts gathered on all images",
          bad: "ansible_python_interpreter pinned but the image has no Python at all",
          sk: ["interpreter discovery"],
          fk: ["ansible_python_interpreter"],
        }),
        w({
          t: "Run {play} against the {group} boxes rebuilt from the slim base image",
          s: ["fatal: [edge-4]: FAILED! => MODULE FAILURE: env: 'python': No such file or directory"],
          why: "The slim image has python3 but no plain python command",
          hint: "Point ansible_python_interpreter at python3",
          fix: "Pointed ansible_python_interpreter at /usr/bin/python3 in host_vars",
          ok: "play ran on the slim boxes",
          bad: "ansible_python_interpreter fixed, now a missing python3-apt module fails",
          sk: ["'python': no such file"],
          fk: ["ansible_python_interpreter"],
        }),
      ]),
      pitfall("ansible-host-keys", "ping", [
        w({
          t: "Run {play} on the {group} hosts that were rebuilt from scratch over the weekend",
          s: ["web-02 | UNREACHABLE! => {\"msg\": \"Failed to connect to the host via ssh: Host key verification failed.\"}"],
          why: "The rebuilt hosts have new SSH host keys that do not match the ones remembered",
          hint: "After rebuilds remove old keys with ssh-keygen -R and collect new ones with ssh-keyscan",
          fix: "Removed the stale known_hosts entries with ssh-keygen -R and added the new host keys with ssh-keyscan",
          ok: "all rebuilt hosts reachable",
          bad: "ssh-keyscan added keys but connections still fail; the hosts got new IPs",
          sk: ["host key verification failed"],
          fk: ["ssh-keygen -r", "ssh-keyscan"],
        }),
        w({
          t: "Configure the {group} servers that got new disks and a reinstall",
          s: ["{ts} ERROR ssh: @@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@ for db-01 ({ip})"],
          why: "The reinstall generated fresh host keys, so SSH refuses the known fingerprint",
          hint: "Clear old fingerprints (ssh-keygen -R) after reinstalls",
          fix: "Ran ssh-keygen -R db-01 and ssh-keyscan db-01 >> known_hosts for each reinstalled server",
          ok: "ssh to every server works",
          bad: "ssh-keygen -R done but the warning returns; a second known_hosts file exists",
          sk: ["remote host identification has changed"],
          fk: ["ssh-keygen -r", "ssh-keyscan"],
        }),
        w({
          t: "Apply {play} to the {group} VMs recreated by the autoscaler",
          s: ["level=error task=gather_facts host=edge-3 err=\"ssh: handshake failed: knownhosts: key mismatch\""],
          why: "Recreated VMs present host keys that differ from the recorded ones",
          hint: "Refresh known hosts with ssh-keyscan when VMs are recreated",
          fix: "Refreshed known hosts with ssh-keyscan for the recreated VMs after dropping the old entries",
          ok: "facts gathered",
          bad: "ssh-keyscan ran against the wrong inventory",
          sk: ["knownhosts: key mismatch"],
          fk: ["ssh-keyscan"],
        }),
      ]),
    ],
  },
  {
    id: "vault",
    name: "reading secrets from HashiCorp Vault",
    slots: { path: ["secret/data/payments", "secret/data/crm", "kv/app/reporting"], role: ["payments-app", "crm-sync"] },
    tasks: ["Read the database credentials for {role} from {path}", "Rotate the API key stored at {path}", "Give {role} read access to {path}"],
    steps: [
      ["login", ["vault login -method=kubernetes role={role}"], ["Success! You are now authenticated"]],
      ["read", ["vault kv get {path}"], ["== Data == password ******"]],
      ["render", ["consul-template renders /etc/{role}/app.env"], ["rendered 6 variables"]],
      ["restart_app", ["kubectl rollout restart deploy/{role}"], ["deployment restarted"]],
    ],
    chatter: ["note: Vault runs 3 nodes", "note: {user} administers the {role} policies", "note: audit log shipping is healthy"],
    pitfalls: [
      pitfall("vault-kv2-policy", "read", [
        w({
          t: "Let {role} read {path} with its existing policy written for the old KV v1 mount",
          s: ["Error reading {path}: Error making API request. Code: 403. Errors: * 1 error occurred: * permission denied"],
          why: "KV v2 serves secrets under data/; the policy still grants the v1 path without it",
          hint: "Write KV v2 policies with the data/ prefix: secret/data/*",
          fix: "Rewrote the {role} policy to grant read on secret/data/* (the KV v2 data/ prefix) and list on secret/metadata/*",
          ok: "{role} reads its secret",
          bad: "policy with secret/data/* attached, still 403; the token has the old policy cached",
          sk: ["code: 403"],
          fk: ["data/ prefix", "secret/data/*"],
        }),
        w({
          t: "Grant {role} access to the secrets after the mount was upgraded to version 2",
          s: ["{glog} secrets.go:57] vault read failed: http 403, policy '{role}' lacks capability read"],
          why: "After the upgrade the real API path includes data/, which the policy does not cover",
          hint: "Add the data/ prefix to every path in KV v2 policies",
          fix: "Added the data/ prefix to the policy paths (secret/data/*) for {role}",
          ok: "reads succeed after the policy update",
          bad: "data/ prefix added, still failing; the mount is named kv, not secret",
          sk: ["lacks capability"],
          fk: ["data/ prefix", "secret/data/*"],
        }),
        w({
          t: "Wire {role} to the versioned secrets engine for its credentials",
          s: ["{\"level\":\"error\",\"component\":\"agent\",\"error\":\"template rendering failed: access denied at the kv read for {role}\"}"],
          why: "The agent's token policy names the logical path, but versioned secrets live under data/",
          hint: "Grant secret/data/* in the policy, plus secret/metadata/* for listing",
          fix: "Granted read on secret/data/* and list on secret/metadata/* to the {role} policy",
          ok: "template rendered",
          bad: "secret/data/* granted, still denied; the agent uses a different role",
          sk: ["access denied at"],
          fk: ["secret/data/*", "secret/metadata/*"],
        }),
      ]),
      pitfall("vault-token-ttl", "render", [
        w({
          t: "Keep {role} reading secrets across a 40-day uptime",
          s: ["{ts} ERROR {role}: vault lookup failed: invalid token, its TTL of 768h was reached"],
          why: "The app logs in once and its token dies at the maximum TTL; nothing renews it",
          hint: "Run Vault Agent with auto_auth so tokens are renewed and re-issued",
          fix: "Ran Vault Agent as a sidecar with auto_auth (kubernetes method) so the token is renewed and re-issued automatically",
          ok: "secrets still readable on day 41",
          bad: "auto_auth configured but the agent cannot reach Vault",
          sk: ["invalid token", "ttl of 768h"],
          fk: ["auto_auth"],
        }),
        w({
          t: "Run the {role} batch daemon for months without restarts",
          s: ["{glog} renew.go:90] token renewal failed: lease is not renewable, max TTL exceeded"],
          why: "Renewals cannot extend a token past its max TTL; the daemon needs a fresh login",
          hint: "Let auto_auth in Vault Agent handle re-authentication",
          fix: "Moved the daemon's login into Vault Agent auto_auth, which re-authenticates before the max TTL",
          ok: "daemon kept its access through the renewal window",
          bad: "auto_auth re-authenticates but the role's token policy is gone",
          sk: ["max ttl exceeded"],
          fk: ["auto_auth"],
        }),
        w({
          t: "Leave the long-lived {role} worker reading its credentials for the whole quarter",
          s: ["[WARN] {role}: secrets refresh returned 403 after 32 days; the credential cache went stale"],
          why: "The worker's single token aged out and every read since then is refused",
          hint: "Use a periodic token renewed by Vault Agent (auto_auth)",
          fix: "Configured Vault Agent auto_auth with a periodic token for the worker",
          ok: "credentials refreshed on schedule",
          bad: "periodic token issued, but the worker ignores the agent's token file",
          sk: ["credential cache"],
          fk: ["auto_auth", "periodic token"],
        }),
      ]),
      pitfall("vault-sealed", "login", [
        w({
          t: "Log {role} in right after the Vault cluster was restarted for patching",
          s: ["Error authenticating: Error making API request. Code: 503. Errors: * Vault is sealed"],
          why: "A restarted Vault node starts sealed and serves nothing until it is unsealed",
          hint: "Configure auto-unseal so restarts do not leave Vault sealed",
          fix: "Unsealed the nodes with three key shares and configured auto-unseal through an awskms seal stanza",
          ok: "login succeeded",
          bad: "auto-unseal configured but the KMS key is in another account",
          sk: ["vault is sealed"],
          fk: ["auto-unseal", "awskms"],
        }),
        w({
          t: "Authenticate {role} after the Vault pods were rescheduled onto new nodes",
          s: ["{\"level\":\"error\",\"@module\":\"core\",\"@message\":\"security barrier not initialized\",\"node\":\"vault-2\"}"],
          why: "The rescheduled pods came up without their master key and cannot open the barrier",
          hint: "Use auto-unseal with a cloud KMS (awskms) for pods that move",
          fix: "Set up auto-unseal with the awskms seal and unsealed the running pods once",
          ok: "pods ready, logins work",
          bad: "auto-unseal migration failed half-way through",
          sk: ["security barrier not initialized"],
          fk: ["auto-unseal", "awskms"],
        }),
        w({
          t: "Fetch {path} for {role} after last night's power cut in the datacenter",
          s: ["{ts} [WARN] kube: readiness probe of vault-0 failing, sys/health returned 503 (sealed=true)"],
          why: "After the power cut every node came back sealed",
          hint: "Configure auto-unseal so a power cut does not need manual key shares",
          fix: "Unsealed with the key shares and enabled auto-unseal (awskms) for the cluster",
          ok: "sys/health 200",
          bad: "auto-unseal needs network access the datacenter lacks",
          sk: ["sealed=true"],
          fk: ["auto-unseal"],
        }),
      ]),
    ],
  },
  {
    id: "prometheus",
    name: "running Prometheus alerting",
    slots: { job: ["node-exporter", "api-gateway", "kafka-exporter"], rule: ["HighErrorRate", "DiskAlmostFull", "InstanceDown"] },
    tasks: ["Add the {rule} alert for {job}", "Add a scrape job for {job}", "Route the {rule} alert to the on-call pager"],
    steps: [
      ["edit_rules", ["edit rules/{job}.yml"], ["1 group, 4 rules"]],
      ["check_rules", ["promtool check rules rules/{job}.yml"], ["SUCCESS: 4 rules found"]],
      ["reload", ["curl -X POST http://prometheus:9090/-/reload"], ["200 OK"]],
      ["verify", ["query up for {job} in the Prometheus UI"], ["12 series, all 1", "targets healthy"]],
    ],
    chatter: ["note: Prometheus retention is 15 days", "note: {user} is on call this week", "note: Grafana shows the {job} panel green"],
    pitfalls: [
      pitfall("prom-cardinality", "verify", [
        w({
          t: "Scrape the new per-customer request metrics of {job}",
          s: ["{ts} ERROR scrape: target {job} rejected, sample_limit of 50000 exceeded (scraped 412000 samples)"],
          why: "A label carrying the customer id multiplies the series far beyond the sample limit",
          hint: "Drop high-cardinality labels with metric_relabel_configs (action labeldrop)",
          fix: "Added metric_relabel_configs with action labeldrop for the customer label on {job}",
          ok: "scrape accepted, 3100 samples",
          bad: "labeldrop configured but series collide; the label was needed",
          sk: ["sample_limit"],
          fk: ["labeldrop", "metric_relabel_configs"],
        }),
        w({
          t: "Add {job} metrics that tag every request with the user_id",
          s: ["level=error component=tsdb msg=\"head series limit\" series=9.2M err=\"out of memory: too many active series from label user_id\""],
          why: "user_id is unbounded, so each user creates new series and the head block explodes",
          hint: "Remove per-user labels at scrape time with labeldrop",
          fix: "Configured metric_relabel_configs to labeldrop user_id before ingestion",
          ok: "active series back to 1.1M",
          bad: "the labeldrop rule matches nothing; the label is renamed upstream",
          sk: ["active series", "user_id"],
          fk: ["labeldrop", "metric_relabel_configs"],
        }),
        w({
          t: "Build the {rule} dashboard over the per-session latency histogram of {job}",
          s: ["{\"status\":\"error\",\"errorType\":\"execution\",\"error\":\"query processing would load too many samples into memory\"}"],
          why: "A session label makes the histogram so wide that queries exceed the sample budget",
          hint: "Drop the session label at ingestion with metric_relabel_configs",
          fix: "Dropped the session label in metric_relabel_configs (labeldrop) and re-created the recording rule",
          ok: "dashboard loads in 1.4 s",
          bad: "labeldrop in place, old series remain until retention passes",
          sk: ["too many samples"],
          fk: ["metric_relabel_configs", "labeldrop"],
        }),
      ]),
      pitfall("prom-scrape-ca", "verify", [
        w({
          t: "Scrape {job} now that its metrics endpoint is served over TLS by the internal CA",
          s: ["{ts} ERROR scrape of {job} failed: Get \"https://{ip}:{port}/metrics\": x509: certificate signed by unknown authority"],
          why: "Prometheus does not trust the internal CA that signed the exporter's certificate",
          hint: "Give TLS scrape jobs a tls_config with the internal ca_file",
          fix: "Added tls_config with ca_file: /etc/prometheus/internal-ca.pem to the {job} scrape job",
          ok: "target UP",
          bad: "ca_file set, still failing; the certificate lacks the IP in its SAN",
          sk: ["unknown authority"],
          fk: ["ca_file", "tls_config"],
        }),
        w({
          t: "Switch the {job} scrape to HTTPS after the platform team enabled encryption",
          s: ["level=error msg=\"target health down\" job={job} lastError=\"tls: failed to verify certificate\""],
          why: "The scraper cannot verify the exporter's certificate because the issuing CA is not in its trust store",
          hint: "Point tls_config.ca_file at the platform CA",
          fix: "Set tls_config.ca_file to the platform CA bundle in the {job} job and reloaded",
          ok: "scrapes succeed over HTTPS",
          bad: "ca_file points at a bundle that lacks the intermediate",
          sk: ["failed to verify certificate"],
          fk: ["ca_file", "tls_config"],
        }),
        w({
          t: "Monitor {job}, whose endpoint now uses a certificate from the company PKI",
          s: ["{\"severity\":\"ERROR\",\"probe\":\"blackbox\",\"target\":\"{job}\",\"reason\":\"issuer of the serving cert is not trusted\"}"],
          why: "The company PKI is not trusted by the scraper, so every scrape is rejected",
          hint: "Configure tls_config with the PKI root for scrapes",
          fix: "Configured tls_config (ca_file with the company PKI root) for {job}",
          ok: "health up for all targets",
          bad: "tls_config loaded but the server_name does not match",
          sk: ["not trusted"],
          fk: ["tls_config", "ca_file"],
        }),
      ]),
      pitfall("prom-alert-template", "check_rules", [
        w({
          t: "Write a descriptive summary annotation for the {rule} alert of {job}",
          s: ["{ts} ERROR promtool: rules/{job}.yml: rule 2 \"{rule}\": template: __alert_{rule}:1: undefined variable \"$instance\""],
          why: "The annotation uses $instance directly; alert templates only know $labels and $value",
          hint: "Reference labels in annotations as {{ $labels.instance }} and test with promtool test rules",
          fix: "Rewrote the annotation with {{ $labels.instance }} and {{ $value }} and validated it with promtool test rules",
          ok: "promtool check rules passes",
          bad: "$labels used, but the label is called host on this job",
          sk: ["undefined variable"],
          fk: ["$labels", "promtool test rules"],
        }),
        w({
          t: "Include the host name in the {rule} notification text for {job}",
          s: ["level=warn component=\"rule manager\" msg=\"Expanding alert template failed\" err=\"error executing template __alert_{rule}: map has no entry for key host\""],
          why: "The template reads a key that does not exist in the alert's data",
          hint: "Use $labels to reach alert labels in templates",
          fix: "Changed the template to {{ $labels.instance }} and added a promtool test rules case",
          ok: "notification shows the host",
          bad: "$labels template renders, but the pager strips the field",
          sk: ["map has no entry"],
          fk: ["$labels", "promtool test rules"],
        }),
        w({
          t: "Make the {rule} page of {job} say which machine is affected",
          s: ["[WARN] pager got '{rule} on <no value>': summary rendered empty, 3 notification reviews failed"],
          why: "The summary references a variable that is empty at evaluation time",
          hint: "Pull machine names from $labels and cover annotations with promtool test rules",
          fix: "Used {{ $labels.instance }} in the summary and checked the output with promtool test rules",
          ok: "page reads '{rule} on 10.4.2.7:9100'",
          bad: "promtool test rules passes but the receiver template overrides the summary",
          sk: ["<no value>"],
          fk: ["$labels", "promtool test rules"],
        }),
      ]),
    ],
  },
  {
    id: "video",
    name: "transcoding video with ffmpeg",
    slots: { clip: ["launch-keynote.mov", "tutorial-07.mkv", "webinar-q3.mp4"], preset: ["1080p", "720p", "480p"], bucket: ["media-raw", "media-out"] },
    tasks: ["Transcode {clip} to {preset} H.264", "Generate the HLS ladder for {clip}", "Make a {preset} preview of {clip}"],
    steps: [
      ["probe", ["ffprobe -show_streams {clip}"], ["2 streams: h264 video, aac audio", "duration 00:42:10"]],
      ["transcode", ["ffmpeg -i {clip} -c:v libx264 -crf 21 out/{preset}.mp4"], ["frame= 9120 fps=88 video:412MB audio:18MB", "encoding done in 3m02s"]],
      ["package", ["ffmpeg -i out/{preset}.mp4 -f hls -hls_time 6 out/{preset}.m3u8"], ["wrote 312 segments"]],
      ["upload", ["rclone copy out/ s3:{bucket}/"], ["Transferred: 313 / 313, 100%"]],
    ],
    chatter: ["note: the encode farm has 6 idle GPUs", "note: {user} reviews the {preset} renditions", "note: {bucket} has lifecycle rules for 90 days"],
    pitfalls: [
      pitfall("ffmpeg-odd-size", "transcode", [
        w({
          t: "Transcode the portrait phone recording {clip} for the web player",
          s: ["[libx264 @ 0x55d0c] height not divisible by 2 (1280x721); Error initializing output stream 0:0"],
          why: "libx264 with yuv420p needs even width and height, and the recording is 721 pixels high",
          hint: "Scale with -vf scale=-2:720 so both dimensions stay even",
          fix: "Added -vf scale=-2:720 (and padding to even sizes) so width and height are even dimensions",
          ok: "encode finished",
          bad: "scale=-2 applied, still rejected; a later crop makes it odd",
          sk: ["not divisible by 2"],
          fk: ["scale=-2", "even dimensions"],
        }),
        w({
          t: "Convert the cropped screen capture {clip} to {preset}",
          s: ["{ts} ERROR transcoder: ffmpeg exit code 1, odd frame dimensions in the cropped capture {clip}"],
          why: "The crop left an odd pixel count, which the 4:2:0 encoder refuses",
          hint: "Force even dimensions in the filter chain",
          fix: "Appended scale=trunc(iw/2)*2:trunc(ih/2)*2 to the filter chain to force even dimensions",
          ok: "{preset} rendition written",
          bad: "even dimensions forced, still failing; the pixel format is yuv444p",
          sk: ["odd frame dimensions"],
          fk: ["even dimensions", "trunc(iw/2)*2"],
        }),
        w({
          t: "Render thumbnails and a preview of the rotated upload {clip}",
          s: ["{\"level\":\"error\",\"job\":\"preview-{k}\",\"stderr\":\"Error while opening encoder for output stream #0:0 - maybe incorrect parameters such as bit_rate, rate, width or height\"}"],
          why: "After rotation the frame has an odd width that the encoder cannot open with",
          hint: "Use scale=-2 for the free dimension",
          fix: "Used -vf scale=-2:480 so the computed width is always even",
          ok: "preview and thumbnails rendered",
          bad: "scale=-2 did not help; the rotation metadata is applied after scaling",
          sk: ["maybe incorrect parameters"],
          fk: ["scale=-2"],
        }),
      ]),
      pitfall("ffmpeg-audio-codec", "package", [
        w({
          t: "Package the studio master {clip} with its uncompressed audio for streaming",
          s: ["[mp4 @ 0x5617] Could not find tag for codec pcm_s16le in stream #1, codec not currently supported in container; muxer error"],
          why: "Raw PCM audio cannot be muxed into MP4 or HLS; it needs an AAC track",
          hint: "Re-encode studio audio with -c:a aac when packaging",
          fix: "Re-encoded the audio with -c:a aac -b:a 192k while copying the video stream",
          ok: "HLS package written",
          bad: "-c:a aac runs, but the audio has 8 channels the player rejects",
          sk: ["codec not currently supported"],
          fk: ["-c:a aac"],
        }),
        w({
          t: "Turn the broadcast export {clip} into HLS segments",
          s: ["{ts} ERROR packager: HLS muxing failed for {clip}: audio stream pcm_s24le cannot go into MPEG-TS segments"],
          why: "The broadcast export carries 24-bit PCM, which transport stream segments do not take",
          hint: "Transcode the audio to AAC during packaging",
          fix: "Transcoded the broadcast audio to AAC (-c:a aac at 192k) before segmenting",
          ok: "segments play in Safari",
          bad: "AAC conversion done, still failing; a timecode track trips the muxer",
          sk: ["pcm_s24le"],
          fk: ["-c:a aac", "to aac"],
        }),
        w({
          t: "Build the streaming package of {clip} straight from the editor's lossless export",
          s: ["{glog} mux.go:77] segmenter exited with exit code 234: invalid argument while muxing audio track 1"],
          why: "The lossless export's audio format is not allowed in the segment container",
          hint: "Convert the soundtrack to AAC first",
          fix: "Converted the soundtrack to AAC with -c:a aac and kept the video as is",
          ok: "package complete",
          bad: "-c:a aac worked but the video codec is ProRes and also unsupported",
          sk: ["exit code 234"],
          fk: ["-c:a aac", "to aac"],
        }),
      ]),
      pitfall("ffmpeg-vfr-drift", "transcode", [
        w({
          t: "Transcode the screen-recorded demo {clip} captured with a variable frame rate",
          s: ["[mp4 @ 0x55ab] Application provided invalid, non monotonically increasing dts to muxer in stream 0: error muxing packet"],
          why: "Variable frame rate input produces timestamps the muxer cannot order",
          hint: "Convert variable frame rate sources with -fps_mode cfr",
          fix: "Converted to constant frame rate with -fps_mode cfr -r 30 and resampled audio with aresample=async=1",
          ok: "timestamps monotonic, file plays",
          bad: "-fps_mode cfr set but the source timestamps jump back",
          sk: ["non monotonically increasing dts"],
          fk: ["-fps_mode cfr", "aresample=async"],
        }),
        w({
          t: "Encode the Zoom recording {clip} for the course platform",
          s: ["{ts} ERROR qa-check: audio out of sync by 2.4 s at the end of {clip} (variable frame rate source)"],
          why: "The conference tool records at a variable frame rate and the audio drifts",
          hint: "Normalise to a constant frame rate and resample audio (aresample=async=1)",
          fix: "Re-encoded at a constant frame rate (-fps_mode cfr -r 30) with aresample=async=1",
          ok: "QA sync check passed",
          bad: "constant frame rate applied, drift remains; the audio clock is off",
          sk: ["out of sync"],
          fk: ["constant frame rate", "-fps_mode cfr", "aresample=async"],
        }),
        w({
          t: "Convert the phone-captured talk {clip} for the archive",
          s: ["[WARN] ffmpeg: Past duration 0.998 too large, repeated 3120 times while encoding {clip}; player test failed the lip-sync check"],
          why: "The phone varies the frame rate, which shows up as duplicated or dropped frames and lip-sync errors",
          hint: "Force a constant frame rate when encoding phone footage",
          fix: "Forced a constant frame rate (-fps_mode cfr at 30 fps) during the encode",
          ok: "lip-sync check passed",
          bad: "constant frame rate forced, the warning persists on the audio track",
          sk: ["past duration"],
          fk: ["constant frame rate", "-fps_mode cfr"],
        }),
      ]),
    ],
  },
];

export const PITFALLS = FAMILIES.flatMap((family) => family.pitfalls.map((p) => ({ ...p, family: family.id })));
export const { pitfallById, classify } = pitfallIndex(PITFALLS);

/** A run's own seed from the bench seed and its index (own mixing constants, not those of agent-runs.mjs). */
function runSeed(seed, index) {
  let h = (seed ^ Math.imul(index + 1, 0x7feb352d)) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0x846ca68b) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** Draws the run's slot values: the generic ones, then the family's. */
function drawSlots(random, family) {
  const slots = {};
  for (const [name, make] of Object.entries(GENERIC_SLOTS)) slots[name] = make(random);
  for (const [name, values] of Object.entries(family.slots)) slots[name] = pick(random, values);
  return slots;
}

/**
 * Builds one run. `pitfall` is a pitfall id or null, `wordingIndex` picks its wording (mod their number); `fixFails`
 * makes the fix not work (the run then fails at that step); `hints` false blanks every directive hint (the random
 * draws stay the same, so the run is otherwise identical). Items: { text, step_id, kind } with kind task | plan | call
 * | observation | chatter | symptom | diagnosis | fix | retry | fix_result | failed_fix | summary. Steps: the step
 * outcomes to record, in order. The first symptom item is always the wording's first symptom line.
 */
function buildRun(random, family, pitfallId, wordingIndex, { fixFails = false, hints = true } = {}) {
  const pitfall = pitfallId ? family.pitfalls.find((p) => p.id === pitfallId) : null;
  const wordingNo = pitfall ? wordingIndex % pitfall.wordings.length : null;
  const wording = pitfall ? pitfall.wordings[wordingNo] : null;
  const template = pick(random, wording ? wording.tasks : family.tasks);
  const slots = drawSlots(random, family);
  const f = (t) => fill(t, slots);
  const task = f(template);
  const items = [];
  const steps = [];
  const chatter = () => f(random() < 0.5 ? pick(random, GENERIC_CHATTER) : pick(random, family.chatter));
  const push = (kind, text, stepId) => items.push({ kind, text, step_id: stepId });
  push("task", `task: ${task}`, "s0");
  push("plan", `plan: ${family.steps.map(([name]) => name.replaceAll("_", " ")).join(", then ")}`, "s0");
  if (random() < 0.5) push("chatter", chatter(), "s0");
  playSteps({
    random,
    family,
    task,
    pitfall,
    source: wording,
    symptomsOf: () => {
      const [first, ...more] = wording.symptoms;
      return random() < 0.4 && more.length > 0 ? [first, pick(random, more)] : [first];
    },
    f,
    push,
    steps,
    chatter,
    fixFails, hints,
  });
  return { family: family.id, pitfall: pitfall ? pitfall.id : null, wording: wordingNo, task, items, steps };
}

/**
 * `count` runs from `seed`: each picks a family uniformly, then, with probability `pitfallShare`, one of its pitfalls
 * uniformly (its task then shows the pitfall's situation), else a plain task. Family, pitfall and the random draws of
 * run i depend on (seed, i) only; its wording is (k-1) mod n when it is the k-th occurrence of its pitfall so far.
 */
export function generateRuns({ seed = 7, count = 120, pitfallShare = 0.7, hints = true } = {}) {
  const seen = new Map();
  return Array.from({ length: count }, (_, index) => {
    const random = rng(runSeed(seed, index));
    const family = pick(random, FAMILIES);
    const pitfall = random() < pitfallShare ? pick(random, family.pitfalls).id : null;
    const before = pitfall ? (seen.get(pitfall) ?? 0) : 0;
    if (pitfall) seen.set(pitfall, before + 1);
    return { index, id: `r${String(index).padStart(3, "0")}`, ...buildRun(random, family, pitfall, before, { hints }) };
  });
}

/** A run that meets `pitfallId` in wording `index` mod n (its index names a distinct stream of the seed). */
export function pitfallRun(seed, index, pitfallId, { fixFails = false, hints = true } = {}) {
  const random = rng(runSeed(seed ^ 0x3c6ef372, index));
  const pitfall = pitfallById(pitfallId);
  const family = FAMILIES.find((fam) => fam.id === pitfall.family);
  return { index, id: `${fixFails ? "fail" : "extra"}-${pitfallId}-${index}`, ...buildRun(random, family, pitfallId, index, { fixFails, hints }) };
}

/**
 * A long run of exactly `size` trace items for reflect latency: one family's steps repeated over batches (with
 * chatter), one pitfall (in wording `index` mod n) met half-way, step outcomes one per batch plus the failed and the
 * retried step.
 */
export function reflectRun(seed, index, size = 200) {
  const random = rng(runSeed(seed ^ 0x1b873593, index));
  const family = FAMILIES[index % FAMILIES.length];
  const pitfall = family.pitfalls[Math.floor(index / FAMILIES.length) % family.pitfalls.length];
  const core = buildRun(random, family, pitfall.id, index);
  const head = core.items.slice(0, 2);
  const block = core.items.filter((it) => ["symptom", "diagnosis", "fix", "retry", "fix_result"].includes(it.kind));
  const filler = [];
  const steps = [];
  const slots = drawSlots(random, family);
  for (let batch = 1; filler.length < size - head.length - block.length - 1; batch++) {
    for (const [name, calls, observations] of family.steps) {
      const stepId = `b${batch}-${name}`;
      filler.push({ kind: "call", text: `tool_call: ${fill(pick(random, calls), slots)} (batch ${batch})`, step_id: stepId });
      filler.push({ kind: "observation", text: `observation: ${fill(pick(random, observations), slots)}`, step_id: stepId });
      if (random() < 0.3) filler.push({ kind: "chatter", text: fill(pick(random, GENERIC_CHATTER), slots), step_id: stepId });
    }
    steps.push({ step_id: `b${batch}`, step_name: `batch_${batch}`, outcome: "success", signal: 1, rationale: `batch ${batch} completed`, directive_hint: "" });
  }
  filler.length = size - head.length - block.length - 1;
  const middle = Math.floor(filler.length / 2);
  const items = [...head, ...filler.slice(0, middle), ...block, ...filler.slice(middle), core.items.at(-1)];
  steps.splice(Math.floor(steps.length / 2), 0, ...core.steps.filter((s) => s.step_name.startsWith(pitfall.at)));
  return { index, id: `reflect-${index}`, family: family.id, pitfall: pitfall.id, wording: core.wording, task: core.task, items, steps };
}

/** Lowercased word set of a text, split on non-alphanumerics. */
const wordSet = (text) => new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean));

function jaccard(a, b) {
  let shared = 0;
  for (const word of a) if (b.has(word)) shared++;
  const union = a.size + b.size - shared;
  return union === 0 ? 0 : shared / union;
}

/** Slot values fixed for the overlap figures: one draw per pitfall, shared by all its wordings. */
const OVERLAP_SEED = 0x2545f491;

function overlapSlots(p) {
  const family = FAMILIES.find((fam) => fam.pitfalls.some((q) => q.id === p.id));
  return drawSlots(rng(OVERLAP_SEED ^ PITFALLS.indexOf(pitfallById(p.id))), family);
}

/** Jaccard of the first symptom lines of every pair of different wordings of one pitfall. */
function wordingPairs(p) {
  const slots = overlapSlots(p);
  const sets = p.wordings.map((x) => wordSet(fill(x.symptoms[0], slots)));
  const pairs = [];
  for (let a = 0; a < sets.length; a++) for (let b = a + 1; b < sets.length; b++) pairs.push({ pitfall: p.id, a, b, jaccard: jaccard(sets[a], sets[b]) });
  return pairs;
}

/**
 * How much the wordings of a pitfall share: the mean Jaccard of the lowercased word sets of the first symptom line of
 * every pair of different wordings of the same pitfall (slots filled with a fixed seed), the most similar pair, and
 * the number of pitfalls and wordings.
 */
export function overlapReport() {
  const pairs = PITFALLS.flatMap(wordingPairs);
  const mean = pairs.reduce((sum, x) => sum + x.jaccard, 0) / Math.max(1, pairs.length);
  const max = pairs.reduce((best, x) => (!best || x.jaccard > best.jaccard ? x : best), null);
  const round3 = (x) => Math.round(x * 1000) / 1000;
  return {
    mean_first_symptom_jaccard: round3(mean),
    max_pair: max ? { ...max, jaccard: round3(max.jaccard) } : null,
    pitfalls: PITFALLS.length,
    wordings: PITFALLS.reduce((sum, p) => sum + p.wordings.length, 0),
  };
}

/** What counts as error vocabulary in a symptom line (a 4xx/5xx code only next to an HTTP-ish word). */
const ERROR_VOCABULARY = [
  /error|fail|exception|refused|denied|timeout|timed out|killed|exit code|exit status/i,
  /\b(http|code|status|returned|got)\W{0,3}[45]\d\d\b/i,
  /\b[45]\d\d (no server|forbidden|unauthorized|too many|service unavailable|bad request|not found)/i,
];
const MAX_PAIR_OVERLAP = 0.2;
const MIN_WORDINGS = 3;

/**
 * Proves the pitfalls are distinguishable and their wordings hard: every key of a pitfall occurs in no text outside
 * that pitfall (templates of other pitfalls, plain tasks, steps, chatter, slot values); every wording has a symptom
 * key of its own that no other wording's symptoms contain, each of its symptom lines matches one of its symptom keys
 * and each fix one of its fix keys; `classify` maps every symptom and hint variant (as written and with slots filled) back to its pitfall, every fix variant
 * to it with fix=true, and no rationale to another pitfall; each symptom line carries error vocabulary; each pitfall has at least 3
 * wordings; no pair of wordings shares more than 0.2 (Jaccard) of its first symptom line's words. Returns a list of
 * problems (empty when sound).
 */
export function checkVocabulary() {
  const problems = [];
  const pitfallTexts = (p) => FIELDS.flatMap((field) => p[field]);
  const familyTexts = (fam) => [
    ...fam.tasks,
    ...fam.steps.flatMap(([name, calls, observations]) => [name, ...calls, ...observations]),
    ...fam.chatter,
    ...Object.values(fam.slots).flat(),
  ];
  const shared = [...GENERIC_CHATTER, ...NAMES, ...FAMILIES.flatMap(familyTexts)];
  const matchesAny = (keys, text) => keys.some((key) => keyPattern(key).test(text.toLowerCase()));
  for (const p of PITFALLS) {
    const others = [...shared, ...PITFALLS.filter((q) => q !== p).flatMap(pitfallTexts)];
    for (const key of [...p.symptomKeys, ...p.fixKeys]) {
      const re = keyPattern(key);
      const clash = others.find((text) => re.test(text.toLowerCase()));
      if (clash) problems.push(`${p.id}: key "${key}" also occurs in "${clash}"`);
    }
    if (p.wordings.length < MIN_WORDINGS) problems.push(`${p.id}: only ${p.wordings.length} wordings`);
    for (const [n, x] of p.wordings.entries()) {
      const otherSymptoms = p.wordings.filter((y) => y !== x).flatMap((y) => y.symptoms);
      if (!x.symptomKeys.some((key) => !otherSymptoms.some((text) => matchesAny([key], text)))) problems.push(`${p.id}: wording ${n} has no symptom key of its own`);
      if (x.fixKeys.length === 0) problems.push(`${p.id}: wording ${n} has no fix key`);
      for (const text of x.symptoms) if (!matchesAny(x.symptomKeys, text)) problems.push(`${p.id}: wording ${n} symptom "${text}" matches none of its symptom keys`);
      for (const text of x.fixes) if (!matchesAny(x.fixKeys, text)) problems.push(`${p.id}: wording ${n} fix "${text}" matches none of its fix keys`);
      for (const field of FIELDS) if (x[field].length === 0) problems.push(`${p.id}: wording ${n} has no ${field}`);
    }
    const slots = overlapSlots(p);
    const filled = (texts) => texts.flatMap((text) => [text, fill(text, slots)]);
    for (const text of filled(p.symptoms)) {
      if (classify(text).pitfall !== p.id) problems.push(`${p.id}: symptom "${text}" classified as ${classify(text).pitfall}`);
      if (!ERROR_VOCABULARY.some((re) => re.test(text))) problems.push(`${p.id}: symptom "${text}" has no error vocabulary`);
    }
    for (const text of filled(p.fixes)) {
      const c = classify(text);
      if (c.pitfall !== p.id || !c.fix) problems.push(`${p.id}: fix "${text}" classified as ${c.pitfall} (fix ${c.fix})`);
    }
    for (const text of filled(p.hints)) if (classify(text).pitfall !== p.id) problems.push(`${p.id}: hint "${text}" classified as ${classify(text).pitfall}`);
    for (const text of p.rationale) if (![null, p.id].includes(classify(text).pitfall)) problems.push(`${p.id}: rationale "${text}" classified as ${classify(text).pitfall}`);
    for (const pair of wordingPairs(p)) if (pair.jaccard > MAX_PAIR_OVERLAP) problems.push(`${p.id}: wordings ${pair.a} and ${pair.b} share ${pair.jaccard.toFixed(3)} of their first symptom words`);
  }
  return problems;
}
