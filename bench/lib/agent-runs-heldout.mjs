// Held-out synthetic agent runs for the learning benchmark: the same interface and run shapes as ./agent-runs.mjs, but
// written independently, with other task families and other pitfalls, so that a server tuned on agent-runs.mjs can be
// checked on runs it has never seen. Same seed and index, same run; no Math.random.
//
// A family (e.g. renewing TLS certificates) has plain tasks, routine steps (a tool call and its observation each),
// chatter and 3–4 pitfalls. Each pitfall has several *wordings*: a wording bundles the task text naming the situation,
// the symptom lines (in its own log format), the diagnosis, the hint, the fix, the result and the failed-fix text.
// Different wordings of one pitfall share as few words as possible (`overlapReport` measures the first symptom lines),
// so a lesson learned from one occurrence must be recalled from a paraphrase. The k-th occurrence of a pitfall within a
// generated sequence uses wording (k-1) mod n. Each pitfall has symptom keys and fix keys (covering every wording) that
// appear in no other text of this generator (`checkVocabulary` proves it), so `classify` can tell which pitfall a
// lesson or trace is about and whether it carries the fix.
import { rng } from "./corpus.mjs";
import { fill, int, keyPattern, pick, pitfallIndex } from "./agent-run-kit.mjs";

const NAMES = ["ines", "kofi", "lena", "marek", "noah", "olga", "pavel", "rita"];

/** Slots every family may use; each is drawn once per run. */
const GENERIC_SLOTS = {
  ver: (r) => `${1 + int(r, 6)}.${int(r, 30)}.${int(r, 12)}`,
  k: (r) => String(200 + int(r, 15000)),
  date: (r) => `2024-${String(1 + int(r, 12)).padStart(2, "0")}-${String(1 + int(r, 28)).padStart(2, "0")}`,
  ticket: (r) => `PLAT-${2000 + int(r, 7000)}`,
  user: (r) => NAMES[int(r, NAMES.length)],
  min: (r) => String(3 + int(r, 50)),
  pid: (r) => String(1000 + int(r, 60000)),
  hh: (r) => String(int(r, 24)).padStart(2, "0"),
  mm: (r) => String(int(r, 60)).padStart(2, "0"),
  n: (r) => String(2 + int(r, 30)),
};

const GENERIC_CHATTER = [
  "note: pinged the channel, nobody else is touching this today",
  "note: {min} minutes in, still on schedule",
  "note: {user} is reviewing a different change and will look later",
  "note: linked the work to {ticket}",
  "note: double-checked which environment the shell points at",
  "note: kept a copy of the previous state under /var/tmp/prev-{k}",
  "note: coffee break over, continuing",
];

const arr = (x) => (Array.isArray(x) ? x : [x]);
/** One wording of a pitfall: tasks, symptoms, rationale, hints, fixes, results, failedFix (each a string or list). */
const w = (tasks, symptoms, rationale, hints, fixes, results, failedFix) => ({
  tasks: arr(tasks),
  symptoms: arr(symptoms),
  rationale: arr(rationale),
  hints: arr(hints),
  fixes: arr(fixes),
  results: arr(results),
  failedFix: arr(failedFix),
});

/**
 * The task families. Task entries are a template or [template, slot overrides]; `{slot}` is replaced by the run's
 * value. A step is [name, call templates, observation templates]; a pitfall strikes at the step named `at`.
 */
export const FAMILIES = [
  {
    id: "tls",
    name: "renewing TLS certificates",
    slots: { domain: ["shop.northwind.io", "portal.fabrikam.dev", "status.contoso.net", "app.tailspin.org"], lb: ["edge-lb-1", "ingress-a", "haproxy-03"] },
    tasks: ["Renew the certificate for {domain} before it runs out", "Rotate the HTTPS cert on {lb} that serves {domain}", "Refresh the certificate of {domain} and confirm browsers accept it"],
    steps: [
      ["check_expiry", ["openssl s_client -connect {domain}:443 </dev/null | openssl x509 -noout -enddate"], ["notAfter={date} 12:00:00 GMT", "certificate runs out in 9 days"]],
      ["request_cert", ["certbot certonly --non-interactive -d {domain}"], ["Successfully received certificate.", "certificate saved under /etc/letsencrypt/live/{domain}/"]],
      ["install_cert", ["install -m 600 /etc/letsencrypt/live/{domain}/*.pem /etc/ssl/{lb}/ && systemctl reload haproxy"], ["{lb} reloaded with the new certificate", "reload ok in 0.4 s"]],
      ["verify", ["curl -sv https://{domain}/ -o /dev/null"], ["SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384", "HTTP/2 200, certificate valid until {date}"]],
    ],
    chatter: ["note: {lb} serves about 2k requests per second at this hour", "note: security wants 90-day rotation for {domain}", "note: the uptime monitor for {domain} is green"],
    pitfalls: [
      {
        id: "tls-missing-intermediate",
        at: "verify",
        wordings: [
          w("Renew the {domain} certificate and make sure older Android phones still accept it",
            ["curl: (60) SSL certificate problem: unable to get local issuer certificate", "verify error:num=20:unable to get local issuer certificate"],
            ["The server hands out only the leaf certificate, so clients without the issuing CA cached cannot build a path to a root"],
            "Always serve fullchain.pem, not cert.pem alone, or clients that lack the issuer cannot validate",
            "Pointed ssl_certificate at fullchain.pem so the leaf and its issuer are sent together, then reloaded {lb}",
            "curl validates the certificate; depth=2 path shown",
            "curl still complains with fullchain.pem in place; the old file is still mounted"),
          w("Rotate the {domain} cert that the Java payment partner connects to",
            ["javax.net.ssl.SSLHandshakeException: PKIX path building failed: sun.security.provider.certpath.SunCertPathBuilderException", "Caused by: unable to find valid certification path to requested target"],
            ["JVM clients reject the handshake because the CA that signed our leaf is absent from what {lb} sends"],
            "JVM partners need the intermediate CA appended to the served bundle",
            "Concatenated the leaf and the intermediate CA into one bundle on {lb} and reloaded",
            "the partner's JVM handshake succeeds now",
            "the JVM still rejects it after appending the intermediate CA; its truststore is ancient"),
          w("Refresh the HTTPS certificate on {lb} that old mobile app versions talk to",
            ["[WARN] SSL Labs grade B for {domain}: This server's certificate chain is incomplete", "chain check FAILED: served 1 certificate, expected 2 (incomplete chain)"],
            ["Only one certificate goes over the wire, and app clients do not fetch missing issuers themselves"],
            "After every install run a chain check and deploy the chained PEM",
            "Installed the chained PEM (leaf followed by issuer) on {lb}",
            "SSL Labs grade A, 2 certificates sent",
            "still one certificate served after deploying the chained PEM; {lb} caches the old one"),
        ],
        symptomKeys: ["local issuer", "pkix path", "certification path", "chain is incomplete", "incomplete chain"],
        fixKeys: ["fullchain", "intermediate ca", "chained pem"],
      },
      {
        id: "acme-dns01-propagation",
        at: "request_cert",
        wordings: [
          w("Issue a wildcard certificate for *.{domain}",
            ["Challenge failed for domain {domain}: DNS problem: NXDOMAIN looking up TXT for _acme-challenge.{domain}", "Some challenges have failed: _acme-challenge.{domain} could not be validated"],
            ["The CA queried the TXT record before our DNS provider had published it on every nameserver"],
            "With DNS-01 challenges, raise --dns-route53-propagation-seconds so the TXT record exists everywhere before validation",
            "Re-ran certbot with --dns-route53-propagation-seconds 120",
            "wildcard certificate for *.{domain} issued",
            "still failing after waiting 120 s of propagation; the record lands in the wrong zone"),
          w("Get a wildcard cert covering every subdomain of {domain}",
            ["ERROR dns-01 validation rejected: authoritative ns2 for {domain} still returns the previous token", "dns-01 validation failed again: ns2 answers with a value from yesterday"],
            ["Our secondary nameserver lags behind the primary, so the CA saw a stale token"],
            "Wait for propagation to all authoritative servers before telling the CA to validate",
            "Added a wait for propagation (poll every NS until the token matches) before answering the challenge",
            "all nameservers agree; certificate issued",
            "ns2 never catches up even with the propagation wait"),
          w("Request a *.{domain} certificate through the DNS plugin",
            ["{\"lvl\":\"error\",\"err\":\"acme: urn:ietf:params:acme:error:unauthorized: no matching TXT record at lookup\",\"zone\":\"{domain}\"}"],
            ["Validation happened seconds after the record was created, long before resolvers had it"],
            "Set a propagation delay of two minutes in the ACME client's DNS provider config",
            "Configured a 120-second propagation delay in the lego DNS provider and retried",
            "order valid, certificate downloaded",
            "still unauthorized with the propagation delay; the API token cannot write TXT records"),
        ],
        symptomKeys: ["_acme-challenge", "dns-01 validation", "no matching txt"],
        fixKeys: ["propagation"],
      },
      {
        id: "acme-rate-limited",
        at: "request_cert",
        wordings: [
          w("Re-issue the {domain} certificate again after this morning's five failed attempts",
            ["urn:ietf:params:acme:error:rateLimited: Error creating new order :: too many certificates already issued for exact set of domains"],
            ["Repeated real issuance for the same names exhausted the weekly quota"],
            "Debug certificate issuance against the ACME staging endpoint and only then issue once for real",
            "Iterated against the staging endpoint (--staging) until the config worked, then issued once for real",
            "one production certificate issued after the staging dry runs",
            "--staging works but production stays blocked until the window resets"),
          w("Try the {domain} certificate request once more after the hook script fix",
            ["An unexpected error occurred: too many failed authorizations recently", "certbot exited with status 1 after too many failed authorizations"],
            ["Each broken attempt burned a failed validation and the CA now throttles the account"],
            "Use certbot --test-cert while experimenting so failed validations do not count against production",
            "Switched to --test-cert for the experiments and ran the real request only after a clean run",
            "certificate issued on the first production attempt",
            "still throttled after testing with --test-cert"),
          w("Reissue the same certificate for {domain} from the new automation",
            ["[ERROR] CA answered HTTP 429: duplicate certificate limit of 5 per week reached for {domain}"],
            ["The automation requested an identical certificate on every run"],
            "Point new automation at the staging endpoint first and reuse an existing valid cert instead of re-requesting",
            "Pointed the automation at the staging endpoint and made it keep the existing valid certificate",
            "automation run green without new production orders",
            "the staging endpoint works but the existing certificate is already revoked"),
        ],
        symptomKeys: ["ratelimited", "failed authorizations", "duplicate certificate limit"],
        fixKeys: ["--staging", "staging endpoint", "--test-cert"],
      },
      {
        id: "tls-name-mismatch",
        at: "verify",
        wordings: [
          w("Put {domain} and its www alias on the renewed certificate",
            ["curl: (60) SSL: no alternative certificate subject name matches target host name 'www.{domain}', request failed"],
            ["The new certificate covers only the apex, not the alias"],
            "When a site has aliases, request all of them so the SAN list covers every name",
            "Re-issued with both names (-d {domain} -d www.{domain}) so the SAN list covers the alias",
            "www.{domain} and {domain} both verify",
            "the SAN list now has both names but the CDN serves an old certificate"),
          w("Renew {domain} including the marketing alias the campaign links use",
            ["Chrome: NET::ERR_CERT_COMMON_NAME_INVALID when opening www.{domain}", "visitors report a privacy error page (ERR_CERT_COMMON_NAME_INVALID)"],
            ["The browser rejects the alias because the certificate names only one host"],
            "Issue for both names of the site whenever an alias is in use",
            "Requested the certificate for both names of the site and installed it",
            "no browser warning on either hostname",
            "still a browser warning after issuing for both names; DNS points to another server"),
          w("Swap the certificate for {domain} and the second hostname the API clients use",
            ["ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] hostname 'api2.{domain}' doesn't match '{domain}'"],
            ["Python clients refuse the connection because that hostname is not listed on the certificate"],
            "List every hostname clients use in the SAN list",
            "Added api2.{domain} to the SAN list and re-issued",
            "requests to api2.{domain} succeed",
            "the SAN list includes api2 but the old certificate is still pinned"),
        ],
        symptomKeys: ["no alternative certificate subject", "err_cert_common_name_invalid", "sslcertverificationerror"],
        fixKeys: ["san list", "both names"],
      },
    ],
  },
  {
    id: "kafka",
    name: "running a Kafka consumer service",
    slots: { topic: ["orders.v2", "clickstream", "ledger-events", "inventory-updates"], group: ["billing-consumer", "search-indexer", "fraud-scorer"], bootstrap: ["kafka-0.msg.internal:9092", "kafka-2.msg.internal:9092"] },
    tasks: ["Start the {group} consumer on {topic}", "Redeploy the {group} service that reads {topic}", "Check that {group} keeps up with {topic}"],
    steps: [
      ["describe_group", ["kafka-consumer-groups.sh --bootstrap-server {bootstrap} --describe --group {group}"], ["GROUP {group} TOPIC {topic} LAG 12", "lag 0 on all 12 partitions"]],
      ["start_consumer", ["systemctl start {group}"], ["{group} started, subscribed to {topic}", "assigned 4 partitions of {topic}"]],
      ["process", ["tail -n 50 /var/log/{group}/app.log"], ["handled {k} messages in the last minute", "offsets committed for 4 partitions"]],
      ["publish_results", ["producer.send('{topic}-out', result)"], ["acks=all, {k} results sent", "send OK, no outstanding batches"]],
    ],
    chatter: ["note: {topic} has 12 partitions and 3 replicas", "note: the {group} dashboard shows normal throughput", "note: {user} owns the {group} deployment"],
    pitfalls: [
      {
        id: "kafka-poll-interval",
        at: "process",
        wordings: [
          w("Start {group} on {topic} now that each message triggers a slow enrichment call",
            ["2024-05-03T11:02:17Z WARN [Consumer clientId={group}-1] consumer poll timeout has expired; max.poll.interval.ms exceeded, leaving group"],
            ["Handling one fetched batch takes longer than the poll interval, so the broker declares the consumer dead"],
            "Give slow handlers smaller batches: lower max.poll.records so every batch finishes inside the interval",
            "Lowered max.poll.records from 500 to 50 so every batch completes in time",
            "no more group departures; lag draining at 900 msg/s",
            "still kicked out with max.poll.records at 50; a single record takes minutes"),
          w("Redeploy {group} after adding the synchronous fraud lookup per record",
            ["level=error msg=\"rebalance storm: group {group} rebalanced 14 times in 10 minutes\" component=coordinator"],
            ["The members spend their time joining and leaving, because work blocks the loop between fetches"],
            "Decouple slow work from the fetch loop: hand records to a worker pool and use pause/resume on the partitions",
            "Moved the lookups to a worker pool and used pause/resume on assigned partitions while it drains",
            "group stable for an hour, zero membership changes",
            "rebalances continue with pause/resume; the worker pool is saturated"),
          w("Let {group} process the {topic} backlog with the new per-message HTTP calls",
            ["E0503 11:02:17.123 4411 consumer.go:88] partitions revoked repeatedly for {group}; CommitFailedException on offset commit"],
            ["The consumer loses its assignment mid-batch and its commits are refused"],
            "Cut max.poll.records and raise max.poll.interval.ms when per-message work is slow",
            "Set max.poll.records to 50 and max.poll.interval.ms to 600000",
            "commits succeed, assignment steady",
            "still losing partitions after the max.poll.records change"),
        ],
        symptomKeys: ["max.poll.interval.ms exceeded", "rebalance storm", "rebalanced", "partitions revoked", "commitfailedexception"],
        fixKeys: ["max.poll.records", "pause/resume"],
      },
      {
        id: "kafka-record-too-large",
        at: "publish_results",
        wordings: [
          w("Publish the full enriched order documents with embedded line-item history to {topic}-out",
            ["org.apache.kafka.common.errors.RecordTooLargeException: The message is 1482113 bytes when serialized which is larger than 1048576"],
            ["One output document exceeds the producer's size ceiling"],
            "For big payloads turn on compression.type=zstd and split anything above 900 KB",
            "Enabled compression.type=zstd on the producer and split results over 900 KB",
            "all results delivered, largest batch 610 KB compressed",
            "still rejected with compression.type=zstd; one document is 30 MB"),
          w("Send the {group} results that now include the base64 attachments",
            ["{\"lvl\":\"error\",\"err\":\"MESSAGE_TOO_LARGE\",\"topic\":\"{topic}-out\",\"bytes\":2300114}"],
            ["Attachments blew the payload far past what the cluster accepts"],
            "Do not push blobs through the topic: store them in object storage and send a claim-check reference",
            "Stored attachments in object storage and published a claim-check reference instead",
            "events are 2 KB each now",
            "the claim-check upload fails for encrypted attachments"),
          w("Emit the aggregated daily snapshot of {topic} as a single event",
            ["[ERROR] broker refused batch for {topic}-out: message.max.bytes limit hit (error code 10)"],
            ["The snapshot is larger than both the producer request limit and the topic limit"],
            "If large events are intended, raise max.request.size on the producer and max.message.bytes on the topic together",
            "Raised max.request.size to 4 MB and max.message.bytes on {topic}-out to match",
            "snapshot event accepted (3.1 MB)",
            "still refused after raising max.request.size; the consumer fetch size is too small"),
        ],
        symptomKeys: ["recordtoolargeexception", "message_too_large", "message.max.bytes limit"],
        fixKeys: ["compression.type", "claim-check", "max.request.size", "max.message.bytes"],
      },
      {
        id: "kafka-offset-retention",
        at: "start_consumer",
        wordings: [
          w("Restart the {group} consumer that has been paused for three weeks",
            ["org.apache.kafka.clients.consumer.OffsetOutOfRangeException: Fetch position FetchPosition{offset=88123} is out of range for partition {topic}-3"],
            ["The committed position points at data that retention already deleted"],
            "After long pauses reset the group with kafka-consumer-groups --reset-offsets before starting",
            "Ran kafka-consumer-groups --reset-offsets --to-earliest --execute for {group} and restarted",
            "consumer running from the oldest retained record",
            "--reset-offsets applied but the consumer restores an old position from its own store"),
          w("Bring {group} back online after the month-long migration freeze",
            ["level=error msg=\"fetch failed: offset 88123 already deleted by log retention\" partition=3"],
            ["The group's saved offsets are older than the topic keeps"],
            "Set auto.offset.reset=earliest for consumers that may be down longer than retention",
            "Set auto.offset.reset=earliest on {group} and replayed the gap from the archive",
            "consumer caught up, gap replayed",
            "auto.offset.reset is ignored because the client overrides it"),
          w("Resume {group} on {topic} after it sat idle since the spring",
            ["[consumer] ERROR NoOffsetForPartitionException: Undefined offset with no reset policy for partitions [{topic}-0, {topic}-1]"],
            ["Its last position expired and no policy says where to start"],
            "Reposition stale groups by time: --to-datetime from the last processed timestamp",
            "Repositioned {group} with --reset-offsets --to-datetime of the last processed event",
            "processing resumed at the right time",
            "--to-datetime lands before the retained data and fails again"),
        ],
        symptomKeys: ["offsetoutofrangeexception", "deleted by log retention", "nooffsetforpartitionexception"],
        fixKeys: ["--reset-offsets", "auto.offset.reset", "--to-datetime"],
      },
      {
        id: "kafka-poison-record",
        at: "process",
        wordings: [
          w("Start {group} on {topic} now that the legacy producer also writes plain JSON there",
            ["org.apache.kafka.common.errors.SerializationException: Unknown magic byte!", "consumer thread crashed on the unknown magic byte, partition 7 stuck"],
            ["A record that is not in the expected wire format crashes the deserializer on every fetch"],
            "Wrap the deserializer in an ErrorHandlingDeserializer and route bad records to a dead-letter topic",
            "Wrapped the value deserializer in an ErrorHandlingDeserializer and sent failures to a dead-letter topic",
            "consumer moves on; 3 records parked",
            "still crashing with the dead-letter topic; the key deserializer fails too"),
          w("Let {group} consume {topic} after the producer team changed their schema",
            ["ERROR deserializer: schema id 412 not found in registry (HTTP 404 from schema-registry:8081)"],
            ["The consumer cannot decode records whose writer schema it cannot fetch, and retries the same record forever"],
            "Never block a partition on one undecodable record: park it in a DLQ and continue",
            "Added a DLQ topic for undecodable records and committed past them",
            "partition unblocked, 12 records in the DLQ",
            "the DLQ producer lacks ACLs and fails"),
          w("Process {topic} including the records the hotfix producer wrote by hand",
            ["panic: poison pill at {topic}-7 offset 55120: avro decode failed (exit code 2)"],
            ["One malformed record at the head of the partition stops all progress"],
            "Route records that fail to decode to a dead-letter topic instead of panicking",
            "Changed the handler to publish decode failures to a dead-letter topic and skip them",
            "processing resumed past offset 55120",
            "still panicking even with the dead-letter route; the crash is in the header parser"),
        ],
        symptomKeys: ["unknown magic byte", "not found in registry", "poison pill"],
        fixKeys: ["dead-letter", "dlq", "errorhandlingdeserializer"],
      },
    ],
  },
  {
    id: "redis",
    name: "operating the Redis cache",
    slots: { rhost: ["cache-01.internal:6379", "redis-sessions:6379", "10.4.2.17:6379"], keyspace: ["session:*", "cart:*", "flags:*", "quota:*"], app: ["storefront", "auth-gateway", "recommendations"] },
    tasks: ["Prime the {app} cache after the release", "Expire stale {keyspace} keys on {rhost}", "Check the {app} cache hit rate"],
    steps: [
      ["ping", ["redis-cli -h {rhost} PING"], ["PONG", "PONG (0.3 ms)"]],
      ["info", ["redis-cli -h {rhost} INFO memory"], ["used_memory_human:1.2G", "mem_fragmentation_ratio:1.08"]],
      ["write_keys", ["python prime_cache.py --app {app} --pattern {keyspace}"], ["wrote {k} keys", "{k} SET commands in 3.1 s"]],
      ["verify", ["redis-cli -h {rhost} --scan --pattern {keyspace} | wc -l"], ["{k}", "{k} keys present"]],
    ],
    chatter: ["note: {app} hit rate was 94% last week", "note: {rhost} runs Redis 7.2", "note: {user} asked to keep the {keyspace} keys"],
    pitfalls: [
      {
        id: "redis-maxmemory",
        at: "write_keys",
        wordings: [
          w("Prime the {app} cache with the entire product catalogue, not just the top sellers",
            ["(error) OOM command not allowed when used memory > 'maxmemory'."],
            ["The instance is full and configured never to drop keys"],
            "For caches set maxmemory-policy allkeys-lru so old entries make room",
            "Set maxmemory-policy allkeys-lru on {rhost} and gave the primed keys a TTL",
            "priming finished; evicted_keys rising slowly",
            "still full with allkeys-lru; the keys are in a Lua-held structure"),
          w("Load every historical session into {rhost} for the analytics replay",
            ["{\"level\":\"error\",\"msg\":\"cache write failed\",\"cause\":\"used_memory 4.00G hit limit, policy noeviction\"}"],
            ["Nothing can be written once the limit is reached because eviction is off"],
            "Keys without expiry never leave: use volatile-lru and an EXPIRE on every write",
            "Switched to volatile-lru and added EXPIRE 21600 to every write",
            "writes accepted, memory flat at 3.6 GB",
            "volatile-lru does not help: the old keys have no expiry"),
          w("Cache all recommendation vectors for every user in {rhost}",
            ["write refused by {rhost}: memory ceiling reached and eviction disabled, SET returned -ERR"],
            ["The dataset is bigger than the instance and keys cannot be evicted"],
            "Configure LRU eviction (allkeys-lru) on cache instances before bulk loads",
            "Configured allkeys-lru and capped the per-user vectors",
            "all writes succeeded with eviction on",
            "still refused with allkeys-lru; maxmemory is set to 100 MB by mistake"),
        ],
        symptomKeys: ["oom command not allowed", "noeviction", "memory ceiling reached"],
        fixKeys: ["allkeys-lru", "volatile-lru", "maxmemory-policy"],
      },
      {
        id: "redis-client-exhaustion",
        at: "ping",
        wordings: [
          w("Prime the {app} cache from 64 parallel worker processes",
            ["ERR max number of clients reached"],
            ["Every task opens its own client and the server refuses new ones past its ceiling"],
            "Share one connection pool per process instead of a client per task",
            "Created one connection pool per process (20 connections) and reused it in every task",
            "connected_clients steady at 180",
            "still refused with the connection pool; another job leaks clients"),
          w("Run the {app} cache job with the new async fan-out",
            ["redis.exceptions.ConnectionError: Error 104 while reading from socket: Connection reset by peer"],
            ["The fan-out opens thousands of sockets and the server resets them"],
            "Bound concurrency with a pooled client (max_connections=20)",
            "Used a pooled client with max_connections=20 and a semaphore on the fan-out",
            "no resets over 2M commands",
            "resets persist with max_connections=20; the server timeout is 0"),
          w("Warm {keyspace} using the Java batch job with 200 threads",
            ["java.util.NoSuchElementException: Timeout waiting for idle object (JedisPool exhausted)"],
            ["All 200 threads wait for a handful of shared sockets"],
            "Size the connection pool to the thread count and return connections in finally blocks",
            "Raised the connection pool to 64 and closed every Jedis resource in a finally block",
            "batch finished without waits",
            "still waiting after the connection pool change; a code path never returns resources"),
        ],
        symptomKeys: ["max number of clients", "error 104", "jedispool exhausted", "idle object"],
        fixKeys: ["connection pool", "max_connections", "pooled client"],
      },
      {
        id: "redis-crossslot",
        at: "write_keys",
        wordings: [
          w("Port the {app} cache job to the new sharded Redis deployment",
            ["(error) CROSSSLOT Keys in request don't hash to the same slot"],
            ["Multi-key commands touch keys that live on different shards"],
            "In a sharded setup group related keys with a hash tag so they share a slot",
            "Put the user id in a hash tag so each user's cart and session keys share a slot",
            "MSET and transactions succeed on the sharded setup",
            "the hash tag is applied but one key is built elsewhere without it"),
          w("Run the {app} transaction script on the six-shard deployment",
            ["redis.exceptions.ResponseError: EXECABORT Transaction discarded because of previous errors (keys span 3 slots)"],
            ["MULTI/EXEC spans keys on different nodes"],
            "Make related keys land together by using a hashtag segment in their names",
            "Renamed the keys with a shared hashtag segment so they map to one node",
            "transaction committed",
            "the hashtag rename missed the counters and the transaction still aborts"),
          w("Move {keyspace} writes to the clustered instance",
            ["level=error msg=\"pipeline failed\" err=\"keys mapped to different slots\" mode=cluster"],
            ["The pipeline batches keys that belong to different shards"],
            "Pipeline per node or give related keys a common hash tag",
            "Grouped related keys under a common hash tag and pipelined per node",
            "pipeline runs clean",
            "still failing after the hash tag change: the client is not cluster-aware"),
        ],
        symptomKeys: ["crossslot", "execabort", "keys mapped to different slots"],
        fixKeys: ["hash tag", "hashtag"],
      },
      {
        id: "redis-readonly-replica",
        at: "write_keys",
        wordings: [
          w("Prime the {app} cache right after last night's automatic failover",
            ["READONLY You can't write against a read only replica."],
            ["The hard-coded address now points at a node that was demoted"],
            "Resolve the current primary through Sentinel with get-master-addr-by-name instead of a fixed host",
            "Resolved the primary with SENTINEL get-master-addr-by-name and reconnected",
            "writes go to the new primary",
            "get-master-addr-by-name returns the old node; Sentinel quorum is split"),
          w("Re-run the {app} cache job that broke when the primary moved",
            ["ERROR cache-writer: write to {rhost} rejected, role:slave"],
            ["The job keeps writing to the former primary"],
            "Use a sentinel-aware client so writes follow failovers",
            "Switched the job to a sentinel-aware client (master name mymaster)",
            "writes follow the failover automatically",
            "the sentinel-aware client cannot reach the sentinels through the firewall"),
          w("Update {keyspace} entries after the maintenance that promoted another node",
            ["Traceback (most recent call last): ... redis.exceptions.ReadOnlyError: the node refused writes"],
            ["The demoted node only serves reads"],
            "Connect through the Sentinel service name, never a node address",
            "Pointed the client at the Sentinel service name mymaster",
            "update finished against the primary",
            "still refused via the Sentinel service name; replica-read-only was set on the new primary"),
        ],
        symptomKeys: ["readonly you", "role:slave", "readonlyerror"],
        fixKeys: ["get-master-addr-by-name", "sentinel-aware", "sentinel service"],
      },
    ],
  },
  {
    id: "cron",
    name: "scheduling batch jobs",
    slots: { job: ["nightly-report", "invoice-run", "cleanup-tmp", "sync-ledger"], cronhost: ["batch-01", "sched-02"] },
    tasks: ["Schedule the {job} job on {cronhost}", "Move {job} to run at 02:30 on {cronhost}", "Check last night's {job} run on {cronhost}"],
    steps: [
      ["edit_crontab", ["crontab -l > /var/tmp/cron.bak && crontab jobs/{job}.cron"], ["crontab installed", "crontab updated, 7 entries"]],
      ["dry_run", ["/opt/jobs/{job}.sh --dry-run"], ["dry run ok, 0 changes", "dry run finished in 4 s"]],
      ["wait_trigger", ["grep {job} /var/log/syslog | tail -5"], ["CRON[{pid}]: (deploy) CMD (/opt/jobs/{job}.sh)", "{job} triggered at the scheduled minute"]],
      ["check_output", ["tail -20 /var/log/jobs/{job}.log"], ["finished with 0 errors", "{k} records handled"]],
    ],
    chatter: ["note: {cronhost} also runs the backup jobs at 01:00", "note: {job} owners asked for a report by 07:00", "note: {user} edited the {job} script last week"],
    pitfalls: [
      {
        id: "cron-minimal-env",
        at: "wait_trigger",
        wordings: [
          w("Schedule {job} on {cronhost}; it calls the aws and jq tools that work fine in my shell",
            ["/opt/jobs/{job}.sh: line 12: aws: command not found"],
            ["The scheduler runs with a minimal environment, so tools from the interactive shell are not visible"],
            "Crontabs get a bare environment: set PATH=/usr/local/bin:/usr/bin:/bin at the top",
            "Added PATH=/usr/local/bin:/usr/bin:/bin at the top of the crontab",
            "{job} ran at the scheduled minute and finished",
            "still missing a tool with PATH=/usr/local/bin set; it lives under /opt"),
          w("Run {job} from cron now that it uses the pyenv Python and the psql client",
            ["(CRON) info (No MTA installed, discarding output); {job} ended with exit status 127"],
            ["The job fails immediately because its programs cannot be located when started by the daemon"],
            "In scheduled scripts call programs by absolute path",
            "Called every program by absolute path (/usr/local/bin/psql, ~/.pyenv/shims/python)",
            "{job} exit 0",
            "still failing with absolute paths; the credentials file is also missing from the environment"),
          w("Let {cronhost} start {job}, which relies on the settings in my profile",
            ["[ERROR] exec: \"psql\": executable file not found in $PATH (started by crond)"],
            ["Nothing from the login profile is loaded for scheduled jobs"],
            "Wrap scheduled commands in bash -lc so the login profile is read",
            "Wrapped the entry in bash -lc '/opt/jobs/{job}.sh'",
            "{job} found psql and completed",
            "bash -lc reads a profile that exits early in non-interactive shells"),
        ],
        symptomKeys: ["command not found", "exit status 127", "executable file not found"],
        fixKeys: ["path=/usr/local/bin", "absolute path", "bash -lc"],
      },
      {
        id: "cron-daylight-saving",
        at: "check_output",
        wordings: [
          w("Schedule {job} for 02:30 local time, including the March weekend",
            ["ERROR report for 2024-03-31 missing: {job} never ran, 02:30 did not exist that night (DST jump)"],
            ["The local clock skipped from 02:00 to 03:00 so the entry never matched"],
            "Schedule business-critical entries in UTC with CRON_TZ=UTC",
            "Set CRON_TZ=UTC and moved the entry to 00:30 UTC",
            "{job} ran every night across the switch",
            "still skipped with CRON_TZ=UTC; this cron implementation ignores it"),
          w("Keep {job} at half past one through the autumn weekend",
            ["WARN duplicate run detected: {job} started twice at 01:30 (clock fell back), second run failed on duplicate batch"],
            ["The hour repeated in the autumn and the entry fired in both copies"],
            "Use a systemd timer with an explicit OnCalendar timezone, or UTC",
            "Replaced the entry with a systemd timer: OnCalendar=*-*-* 01:30:00 UTC",
            "one run per night, also on the switch day",
            "the OnCalendar timer still fires twice after a restart"),
          w("Run {job} at 02:30 Berlin time on the UTC server",
            ["level=error msg=\"job fired at the wrong hour\" expected=02:30+02:00 got=02:30Z tz_mismatch=true"],
            ["The server clock is UTC while the schedule was written in local time"],
            "State the zone explicitly: CRON_TZ=Europe/Berlin on the entry",
            "Added CRON_TZ=Europe/Berlin above the entry",
            "job fired at 02:30 local",
            "still firing on UTC with CRON_TZ set; the daemon predates the feature"),
        ],
        symptomKeys: ["dst jump", "fell back", "tz_mismatch"],
        fixKeys: ["cron_tz", "oncalendar"],
      },
      {
        id: "cron-overlapping-runs",
        at: "check_output",
        wordings: [
          w("Run {job} every 5 minutes now that it also processes the whole backlog",
            ["ERROR duplicate key value violates unique constraint \"batch_pk\" (two {job} runs overlapped)"],
            ["A new run started while the previous one was still busy and both wrote the same batch"],
            "Guard frequent jobs with flock -n so a run is skipped while the previous one holds the lock",
            "Wrapped the entry in flock -n /var/lock/{job}.lock",
            "one instance at a time; no conflicts since",
            "runs still collide with flock; the script forks a child that outlives the lock"),
          w("Make {job} run every minute on {cronhost} to cut latency",
            ["kernel: Out of memory: Killed process {pid} ({job}.sh); 14 copies were running concurrently"],
            ["Runs pile up because each one lasts longer than the interval"],
            "Add an flock guard to every high-frequency entry",
            "Added an flock guard around the job so invocations cannot stack",
            "at most one copy in ps",
            "copies still stack with the flock guard on a network filesystem"),
          w("Tighten the {job} schedule to every two minutes for the sale week",
            ["{\"severity\":\"ERROR\",\"message\":\"run 18 started before run 17 finished; totals double counted\"}"],
            ["Successive invocations overlap and both count the same rows"],
            "Skip an invocation when the previous one is still running (flock)",
            "Used flock -n so overlapping invocations exit at once",
            "totals match the ledger again",
            "still double counted with flock; the job also runs on the second host"),
        ],
        symptomKeys: ["runs overlapped", "copies were running", "started before run"],
        fixKeys: ["flock"],
      },
    ],
  },
  {
    id: "terraform",
    name: "applying Terraform changes",
    slots: { stack: ["network-prod", "data-platform", "edge-cdn", "iam-baseline"], tfws: ["qa", "prod", "sandbox"] },
    tasks: ["Apply the {stack} stack in the {tfws} workspace", "Add the new subnet tags to {stack}", "Run a plan for {stack} and apply it if it is clean"],
    steps: [
      ["init", ["terraform -chdir=stacks/{stack} init -input=false"], ["Terraform has been successfully initialized!"]],
      ["plan", ["terraform -chdir=stacks/{stack} plan -out=tfplan"], ["Plan: 2 to add, 1 to change, 0 to destroy.", "No changes. Your infrastructure matches the configuration."]],
      ["apply", ["terraform -chdir=stacks/{stack} apply tfplan"], ["Apply complete! Resources: 2 added, 1 changed, 0 destroyed."]],
      ["output", ["terraform -chdir=stacks/{stack} output -json"], ["{k} bytes of outputs", "outputs: vpc_id, subnet_ids, role_arn"]],
    ],
    chatter: ["note: {stack} state lives in the shared backend bucket", "note: {user} reviewed the plan in {ticket}", "note: the {tfws} workspace was last applied two weeks ago"],
    pitfalls: [
      {
        id: "tf-state-lock",
        at: "plan",
        wordings: [
          w("Apply {stack} while the nightly drift-check pipeline is still running",
            ["Error: Error acquiring the state lock: ConditionalCheckFailedException: The conditional request failed"],
            ["Another process holds the state, so plan refused to start"],
            "When the state is busy, wait with -lock-timeout=10m instead of failing at once",
            "Re-ran plan and apply with -lock-timeout=10m",
            "plan acquired the state after 3 minutes and finished",
            "still no state access after waiting 10 minutes with -lock-timeout"),
          w("Plan {stack} right after the CI job that was cancelled halfway",
            ["│ Error: Error locking state: resource temporarily unavailable (Lock Info: ID 9f2c, Who: ci-runner@drift)"],
            ["A cancelled CI job left its hold on the state behind"],
            "If the holder is confirmed dead, release it with terraform force-unlock and the lock ID",
            "Confirmed the runner was gone and ran terraform force-unlock 9f2c",
            "plan ran normally",
            "force-unlock succeeded but the runner came back and grabbed it again"),
          w("Apply {stack} in parallel with a colleague's change",
            ["level=error msg=\"state is held by another operation\" holder={user}@laptop op=OperationTypeApply"],
            ["Two applies were started at the same time against one state"],
            "Serialize applies: queue behind the holder with -lock-timeout",
            "Waited behind the other apply using -lock-timeout=15m",
            "apply completed after the colleague's finished",
            "-lock-timeout expired; the colleague's apply hangs"),
        ],
        symptomKeys: ["acquiring the state lock", "error locking state", "held by another operation"],
        fixKeys: ["-lock-timeout", "force-unlock"],
      },
      {
        id: "tf-provider-constraints",
        at: "init",
        wordings: [
          w("Apply {stack} after bumping the AWS provider to 5.x",
            ["Error: Failed to query available provider packages: no available releases match the given constraints ~> 4.0, >= 5.0"],
            ["The root and a child module ask for incompatible provider majors"],
            "Align required_providers in every module before bumping a provider",
            "Relaxed required_providers in the vpc module to >= 4.0, < 6.0 and re-initialised",
            "init selected hashicorp/aws 5.46.0",
            "still no match after editing required_providers; a second module pins 4.x"),
          w("Init {stack} on the new runner after the provider bump was merged",
            ["Error: Inconsistent dependency lock file: provider registry.terraform.io/hashicorp/aws 4.67.0 does not satisfy the configuration"],
            ["The committed lock file still records the old provider build"],
            "After changing provider versions regenerate the lock file with init -upgrade",
            "Ran terraform init -upgrade and committed the regenerated .terraform.lock.hcl",
            "lock file updated, init clean",
            "init -upgrade worked locally but the runner uses a cached plugin dir"),
          w("Upgrade {stack} to the google provider that the new module requires",
            ["[ERROR] exit code 1 from init: module \"gke\" wants provider version < 5.0.0, root wants >= 5.10 (conflicting version constraints)"],
            ["The root module and the gke module pin versions that cannot both hold"],
            "Bump the module to a release whose required_providers allows the new provider",
            "Upgraded the gke module to 30.x (its required_providers allows 5.x) and ran init -upgrade",
            "constraints resolved to google 5.27",
            "the newer module release needs a Terraform core upgrade too"),
        ],
        symptomKeys: ["no available releases match", "inconsistent dependency lock", "conflicting version constraints"],
        fixKeys: ["required_providers", "init -upgrade"],
      },
      {
        id: "tf-adopt-existing",
        at: "apply",
        wordings: [
          w("Bring the bucket someone created by hand under the {stack} stack",
            ["Error: creating S3 Bucket (logs-{stack}): BucketAlreadyOwnedByYou"],
            ["The resource exists already but is not in the state, so Terraform tries to create it again"],
            "Adopt hand-made resources with terraform import before the first apply",
            "Ran terraform import aws_s3_bucket.logs logs-{stack} and re-planned",
            "plan shows 0 to add; the bucket is managed now",
            "terraform import succeeded but the plan wants to replace it"),
          w("Codify the deploy role that was clicked together in the console for {tfws}",
            ["Error: creating IAM Role (deploy-{tfws}): EntityAlreadyExists: Role with name deploy-{tfws} already exists."],
            ["Terraform does not know about the role created outside it"],
            "Use an import block to bring existing resources into the state",
            "Added an import block for the role and applied",
            "role adopted without changes",
            "the import block is rejected by the old Terraform version"),
          w("Manage the resource group of {stack} that the Azure portal created",
            ["│ Error: A resource with the ID \"/subscriptions/0000/resourceGroups/rg-{stack}\" already exists - to be managed via Terraform this resource needs to be imported"],
            ["An unmanaged resource group blocks creation"],
            "Adopt it via terraform import rather than deleting it",
            "Adopted the resource group via terraform import azurerm_resource_group.main",
            "apply complete with the adopted group",
            "terraform import fails because the ID casing differs"),
        ],
        symptomKeys: ["bucketalreadyownedbyyou", "entityalreadyexists", "needs to be imported"],
        fixKeys: ["terraform import", "import block"],
      },
      {
        id: "tf-unknown-for-each",
        at: "plan",
        wordings: [
          w("Make {stack} create one DNS record per load balancer built in the same apply",
            ["Error: Invalid for_each argument: the \"for_each\" map includes keys derived from resource attributes that cannot be determined until apply"],
            ["The collection is keyed by IDs that do not exist yet at plan time"],
            "Key collections on static keys taken from variables, never on computed IDs",
            "Keyed for_each on static keys from var.balancers instead of computed IDs",
            "plan shows 4 records to add",
            "the static keys collide for two balancers"),
          w("Add alarms in {stack} for each instance the same plan creates",
            ["level=error msg=\"plan aborted\" detail=\"count depends on values known only after apply\" module=alarms"],
            ["The number of alarms depends on resources that are only created during the apply"],
            "Stage it: apply the instances first with -target, then the rest",
            "Applied the instances first with -target=module.instances, then ran the full plan",
            "second plan adds 6 alarms",
            "-target apply fails because the instances need the alarms' topic"),
          w("Tag every subnet of {stack} with the id of the route table created alongside",
            ["[FAIL] terraform plan, exit code 1: for_each keys come from ids of resources not yet created"],
            ["Map keys come from attributes that are computed later"],
            "Use static names as map keys and put computed ids only in values",
            "Rewrote the map with static names as keys and the route table id as the value",
            "plan clean",
            "still failing with static names; a nested module computes its keys"),
        ],
        symptomKeys: ["invalid for_each", "known only after apply", "not yet created"],
        fixKeys: ["static keys", "static names", "-target"],
      },
    ],
  },
  {
    id: "search",
    name: "indexing documents into Elasticsearch",
    slots: { index: ["products-v7", "logs-app-2024.05", "customers", "tickets"], esnode: ["es-data-1", "es-data-4", "search-hot-2"] },
    tasks: ["Reindex {index} after the mapping update", "Bulk-load yesterday's documents into {index}", "Refresh the {index} search index"],
    steps: [
      ["health", ["GET _cluster/health"], ["status green, 6 nodes", "status green, 0 unassigned shards"]],
      ["create_index", ["PUT /{index} with mappings.json"], ["acknowledged: true", "index {index} created with 3 primaries"]],
      ["bulk_load", ["POST /_bulk (5000 docs per request) into {index}"], ["took 812 ms, errors=false", "{k} docs indexed"]],
      ["verify_count", ["GET /{index}/_count"], ["count {k}", "count matches the source"]],
    ],
    chatter: ["note: {esnode} was restarted last week for a kernel patch", "note: {index} gets about 40 queries per second", "note: {user} owns the search relevance tuning"],
    pitfalls: [
      {
        id: "es-mapping-type",
        at: "bulk_load",
        wordings: [
          w("Load {index} docs where the price field is sometimes the string 'n/a'",
            ["{\"type\":\"mapper_parsing_exception\",\"reason\":\"failed to parse field [price] of type [float] in document with id 'p-88'\"}"],
            ["Some source values are words, and the numeric field rejects them"],
            "Clean dirty values in an ingest pipeline and set ignore_malformed on numeric fields",
            "Set ignore_malformed on price and added an ingest pipeline that nulls 'n/a'",
            "bulk finished, errors=false",
            "still rejected with ignore_malformed; the field is a nested object sometimes"),
          w("Index the vendor feed into {index} although some vendors send text in the amount column",
            ["ERROR [o.e.a.b.TransportShardBulkAction] bulk item rejected: NumberFormatException: For input string: \"approx 40\""],
            ["Free text in a numeric column cannot be converted"],
            "Normalize values in an ingest pipeline before they reach the mapping",
            "Added an ingest pipeline with a script processor that drops non-numeric amounts",
            "all items accepted",
            "the ingest pipeline is not attached as the default pipeline"),
          w("Push the merged product documents into {index}, where price used to be text",
            ["level=error msg=\"illegal_argument_exception: mapper [price] cannot be changed from type [float] to [text]\""],
            ["The index already fixed price as a number and dynamic mapping tried to widen it"],
            "Keep the numeric mapping and let ignore_malformed skip bad values",
            "Kept price as float with ignore_malformed: true and reindexed",
            "reindex done, 14 malformed values ignored",
            "ignore_malformed cannot be set on the existing index; it needs a new one"),
        ],
        symptomKeys: ["mapper_parsing_exception", "numberformatexception", "cannot be changed from type"],
        fixKeys: ["ignore_malformed", "ingest pipeline"],
      },
      {
        id: "es-disk-watermark",
        at: "bulk_load",
        wordings: [
          w("Bulk-load the full year of archives into {index} on the small cluster",
            ["cluster_block_exception: index [{index}] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block]"],
            ["The data nodes ran low on disk and the cluster froze writes"],
            "Free disk (ILM policy deletes old indices), then clear index.blocks.read_only_allow_delete",
            "Deleted indices older than 30 days via an ILM policy and reset index.blocks.read_only_allow_delete to null",
            "writes accepted again, disk at 71%",
            "the block returns after reset; the ILM policy has not run yet"),
          w("Load the backfill into {index} while {esnode} is nearly full",
            ["[WARN ][o.e.c.r.a.DiskThresholdMonitor] high disk watermark [90%] exceeded on {esnode}, shards will be relocated away; bulk failed"],
            ["Disk pressure on the node makes the cluster move shards and reject work"],
            "Add capacity or retention (ILM policy) before big loads",
            "Attached a delete-after-30d ILM policy and added a data node",
            "watermark cleared, load completed",
            "the ILM policy cannot delete the index that holds the alias"),
          w("Import the scanned contracts into {index} on the two-node cluster",
            ["ERROR 403 FORBIDDEN from {esnode}: index read-only / allow delete (api)"],
            ["Disk ran full earlier and the cluster left the index write-protected"],
            "After freeing disk, remove the block: index.blocks.read_only_allow_delete: null",
            "Freed 200 GB and PUT index.blocks.read_only_allow_delete: null",
            "import continued",
            "index.blocks.read_only_allow_delete keeps coming back; disk is still at 96%"),
        ],
        symptomKeys: ["flood-stage", "high disk watermark", "read-only / allow delete"],
        fixKeys: ["index.blocks.read_only_allow_delete", "ilm policy"],
      },
      {
        id: "es-field-explosion",
        at: "create_index",
        wordings: [
          w("Index the raw vendor JSON payloads, every attribute as its own field, into {index}",
            ["illegal_argument_exception: Limit of total fields [1000] has been exceeded while adding new fields [14]"],
            ["Dynamic mapping creates a field for every distinct attribute name"],
            "Map open-ended attribute objects with the flattened field type",
            "Mapped attrs as a flattened field so arbitrary keys no longer create fields",
            "index created, 212 fields in the mapping",
            "the flattened field breaks the range queries the team needs"),
          w("Store all user-defined form answers in {index} with their question names as keys",
            ["ERROR mapping explosion in {index}: 4812 dynamic fields, cluster state update failed"],
            ["Every distinct question name became a mapped field"],
            "Stop dynamic growth with dynamic: false on the answers object",
            "Set dynamic: false on answers and searched them through a flattened copy",
            "mapping stable at 90 fields",
            "dynamic: false hides the fields the search page filters on"),
          w("Ingest the IoT telemetry with per-device metric names into {index}",
            ["[ERROR] put-mapping failed with status 400: too many dynamic keys under metrics.*"],
            ["Device-specific metric names explode the mapping"],
            "Use the flattened type for device metrics",
            "Declared metrics as flattened and reindexed",
            "telemetry indexed",
            "flattened stores the values as keywords and the dashboards break"),
        ],
        symptomKeys: ["limit of total fields", "mapping explosion", "too many dynamic keys"],
        fixKeys: ["flattened", "dynamic: false"],
      },
      {
        id: "es-bulk-rejections",
        at: "bulk_load",
        wordings: [
          w("Reindex {index} with 32 parallel writers to finish before morning",
            ["es_rejected_execution_exception: rejected execution of coordinating operation [queue capacity = 200]"],
            ["The write queue on the nodes overflowed"],
            "Use fewer bulk workers and retry rejected items with backoff",
            "Dropped to 4 bulk workers with 5 MB requests and retried rejected items with backoff",
            "reindex finished in 2h10",
            "rejections continue with 4 bulk workers; a second job floods the cluster"),
          w("Speed up the {index} load by raising the client concurrency",
            ["HTTP 429 from {esnode}:9200 on _bulk: write thread pool queue full"],
            ["The cluster cannot absorb that many concurrent writes"],
            "Throttle reindexing with requests_per_second",
            "Ran _reindex with requests_per_second=500 and slices=auto",
            "throughput steady at 500 docs/s",
            "still 429 with requests_per_second=500; the nodes are undersized"),
          w("Run the {index} backfill from all twelve ETL pods at once",
            ["{\"lvl\":\"error\",\"err\":\"bulk item failures: 1204 of 5000 refused (write queue saturated)\"}"],
            ["Twelve pods overwhelm the write queue"],
            "Resend only rejected items, with fewer bulk workers",
            "Cut to 4 bulk workers total and resent only rejected items",
            "0 failures in the last 50 batches",
            "items still refused after resending rejected items"),
        ],
        symptomKeys: ["es_rejected_execution_exception", "thread pool queue full", "write queue saturated"],
        fixKeys: ["bulk workers", "requests_per_second", "rejected items"],
      },
    ],
  },
  {
    id: "ml-training",
    name: "training models on the GPU cluster",
    slots: { model: ["resnet50-finetune", "bert-base-classifier", "ranker-v3", "adapter-7b"], gpunode: ["gpu-a100-03", "gpu-h100-11", "dgx-02"], dataset: ["reviews-2024", "clickthrough-q1", "imagenet-subset"] },
    tasks: ["Train {model} on {dataset}", "Resume the {model} run on {gpunode}", "Run a short hyperparameter sweep for {model}"],
    steps: [
      ["prepare_data", ["python prep.py --dataset {dataset} --out /data/{dataset}"], ["wrote 128 shards", "{k} examples tokenized"]],
      ["launch", ["torchrun --nproc_per_node=8 train.py --config configs/{model}.yaml"], ["8 processes started on {gpunode}", "world size 8, rank 0 ready"]],
      ["train", ["tail -n 20 runs/{model}/train.log"], ["epoch 1 step 500 loss 2.314", "step 1000 loss 1.982 lr 3e-4"]],
      ["evaluate", ["python eval.py --ckpt runs/{model}/last.pt"], ["val accuracy 0.874", "evaluation done in 4m"]],
    ],
    chatter: ["note: {gpunode} is reserved for this team until Friday", "note: the {dataset} shards were refreshed yesterday", "note: {user} wants the curves in the weekly review"],
    pitfalls: [
      {
        id: "ml-gpu-memory",
        at: "train",
        wordings: [
          w("Train {model} with sequence length 4096 instead of 512",
            ["torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.50 GiB (GPU 0; 79.15 GiB total capacity)"],
            ["Activations for the longer sequences do not fit on the card at this batch size"],
            "For long inputs halve the micro-batch and use gradient accumulation",
            "Halved the micro-batch to 4 and enabled gradient accumulation over 8 steps",
            "training stable at 71 GiB per GPU",
            "still out of room with gradient accumulation; the optimizer state alone is too big"),
          w("Fine-tune {model} at the larger 1024 px resolution",
            ["RuntimeError: CUBLAS_STATUS_ALLOC_FAILED when calling cublasCreate(handle)"],
            ["The device had no room left for the library workspace after the bigger inputs"],
            "Trade compute for memory: activation checkpointing",
            "Enabled activation checkpointing on every transformer block",
            "peak usage down to 52 GiB",
            "checkpointing enabled but the failure remains; a leak keeps tensors alive"),
          w("Run {model} with the doubled batch size the paper used",
            ["[rank3]: ERROR allocator: 79.6 GiB reserved by PyTorch, request for 3 GiB refused"],
            ["The doubled batch exceeds device capacity"],
            "Keep the effective batch by accumulating gradients over smaller micro-batches",
            "Accumulated gradients over 2 micro-batches of the old size",
            "same effective batch, no allocation errors",
            "still refused after splitting the batch; fragmentation is the cause"),
        ],
        symptomKeys: ["cuda out of memory", "cublas_status_alloc_failed", "reserved by pytorch"],
        fixKeys: ["gradient accumulation", "accumulated gradients", "accumulating gradients", "checkpointing"],
      },
      {
        id: "ml-divergence",
        at: "train",
        wordings: [
          w("Train {model} in fp16 with the higher learning rate from the sweep",
            ["ERROR step 1430: loss is nan, stopping run (nan_guard)"],
            ["Updates grew too large early on and the numbers blew up"],
            "Clip gradients (clip_grad_norm_ 1.0) and add a warmup phase for aggressive learning rates",
            "Added clip_grad_norm_ at 1.0 and a 2000-step warmup, lowered the peak LR to 1e-4",
            "loss decreasing smoothly past step 5000",
            "still blows up with clipping and warmup; a corrupt shard is the cause"),
          w("Resume {model} with the new optimizer settings and half precision",
            ["[W] grad norm inf at step 820; overflow error, inf in gradients and weights corrupted"],
            ["Half precision overflowed in the backward pass"],
            "Use gradient clipping and bf16 instead of fp16 when gradients spike",
            "Switched to bf16 and turned on gradient clipping at max norm 1.0",
            "grad norm stays below 3",
            "gradient clipping on, but overflow persists in the attention logits"),
          w("Continue the {model} run after doubling the learning rate",
            ["ValueError: Training diverged: loss exploded from 2.1 to 3.4e+38 within 40 steps"],
            ["The step size is too big for the start of training"],
            "Ramp the learning rate with a warmup schedule",
            "Added a linear warmup over 3000 steps",
            "loss at 1.7 after 10k steps",
            "the warmup delays it but the run still explodes"),
        ],
        symptomKeys: ["loss is nan", "grad norm inf", "diverged"],
        fixKeys: ["clip_grad_norm", "gradient clipping", "warmup"],
      },
      {
        id: "ml-shared-memory",
        at: "train",
        wordings: [
          w("Train {model} inside the new container with 16 data loader workers",
            ["RuntimeError: DataLoader worker (pid {pid}) is killed by signal: Bus error."],
            ["The loader processes exchange batches through a tiny default shared segment in the container"],
            "Containers get 64 MB of shared segment by default: start them with --shm-size=16g",
            "Restarted the container with --shm-size=16g",
            "loaders running, 2300 samples/s",
            "still killed with --shm-size=16g; the pod spec ignores it"),
          w("Run {model} training in the Kubernetes job with 12 loader processes",
            ["OSError: [Errno 28] No space left on device: '/dev/shm/torch_{pid}_3912'"],
            ["The shared segment mounted in the pod is far too small for the batches"],
            "Mount a memory-backed emptyDir at /dev/shm (medium: Memory, sizeLimit 16Gi)",
            "Mounted an emptyDir with medium: Memory at /dev/shm, sizeLimit 16Gi",
            "training started, no loader crashes",
            "the medium: Memory volume counts against the pod limit and it is evicted"),
          w("Start the {model} job in docker on {gpunode} with multi-process loading",
            ["level=fatal msg=\"loader worker exited unexpectedly\" signal=SIGBUS exit_code=135"],
            ["Inter-process tensors hit the container's shared segment limit"],
            "Run training containers with --ipc=host",
            "Restarted with --ipc=host",
            "job running",
            "--ipc=host is forbidden by the cluster policy"),
        ],
        symptomKeys: ["bus error", "/dev/shm/torch", "sigbus"],
        fixKeys: ["--shm-size", "medium: memory", "--ipc=host"],
      },
      {
        id: "ml-nccl-interface",
        at: "launch",
        wordings: [
          w("Train {model} across two nodes for the first time",
            ["[E ProcessGroupNCCL.cpp:828] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1, OpType=ALLREDUCE) ran for 1800000 milliseconds"],
            ["The ranks talk over the wrong network and the first collective never completes"],
            "On multi-node jobs pin NCCL_SOCKET_IFNAME to the cluster interface",
            "Set NCCL_SOCKET_IFNAME=ens5 (the cluster interface) and relaunched",
            "allreduce bandwidth 180 GB/s, training running",
            "still hanging with NCCL_SOCKET_IFNAME set; a firewall blocks the ports"),
          w("Scale {model} out to {gpunode} plus a second box",
            ["NCCL WARN NET/Socket : no usable interface found, init failed"],
            ["The library picked the docker bridge instead of the fabric NIC"],
            "Tell NCCL which NIC to use (NCCL_SOCKET_IFNAME) and exclude docker0",
            "Exported NCCL_SOCKET_IFNAME=^docker0,lo and relaunched",
            "both nodes joined",
            "the NCCL_SOCKET_IFNAME exclusion picks the management NIC"),
          w("Launch the 16-GPU {model} run over both racks",
            ["RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1191, unhandled system error, NCCL version 2.18.1"],
            ["Communication init failed on an interface that cannot reach the other rack"],
            "Set NCCL_SOCKET_IFNAME explicitly for cross-rack jobs",
            "Pinned NCCL_SOCKET_IFNAME=bond0 on all ranks",
            "16 ranks up",
            "NCCL_SOCKET_IFNAME=bond0 does not exist on the second rack"),
        ],
        symptomKeys: ["watchdog caught collective", "no usable interface", "unhandled system error"],
        fixKeys: ["nccl_socket_ifname"],
      },
    ],
  },
  {
    id: "mobile",
    name: "building the mobile apps",
    slots: { mapp: ["ShopApp", "FieldNotes", "RiderApp"], scheme: ["Release", "AdHoc"], track: ["internal", "beta", "production"] },
    tasks: ["Build {mapp} {ver} for the {track} track", "Cut a {scheme} build of {mapp}", "Produce the nightly {mapp} builds for iOS and Android"],
    steps: [
      ["install_deps", ["bundle exec pod install && ./gradlew dependencies"], ["Pod installation complete! 42 pods installed", "BUILD SUCCESSFUL in 14s"]],
      ["build_android", ["./gradlew :app:assembleRelease"], ["BUILD SUCCESSFUL in 3m 12s", "app-release.apk (24 MB)"]],
      ["build_ios", ["xcodebuild -workspace {mapp}.xcworkspace -scheme {mapp} -configuration {scheme} archive"], ["** ARCHIVE SUCCEEDED **", "archive written to build/{mapp}.xcarchive"]],
      ["upload", ["fastlane upload_all track:{track}"], ["upload done, build {k} processing", "both stores accepted the binaries"]],
    ],
    chatter: ["note: the {track} testers expect the build today", "note: {user} bumped the version code", "note: the mac runner has 40 GB free"],
    pitfalls: [
      {
        id: "ios-signing-entitlement",
        at: "build_ios",
        wordings: [
          w("Archive {mapp} now that push notifications were added",
            ["error: Provisioning profile \"{mapp} AppStore\" doesn't include the aps-environment entitlement."],
            ["The profile was made before the new capability and does not grant it"],
            "After adding a capability refresh the profiles with fastlane match (appstore, --force)",
            "Enabled Push on the App ID and ran fastlane match appstore --force",
            "** ARCHIVE SUCCEEDED ** with the refreshed profile",
            "fastlane match still downloads the stale profile from the certificates repo"),
          w("Build the {mapp} {scheme} archive with the new Sign in with Apple button",
            ["❌ Code Signing Error: entitlements do not match those specified in your provisioning profile (0xe8008016)"],
            ["The app asks for a capability the profile does not list"],
            "Regenerate profiles whenever entitlements change (match --force)",
            "Added the capability to the App ID and regenerated profiles with match --force",
            "signed and archived",
            "match --force fails: the Apple account lacks admin rights"),
          w("Archive {mapp} for TestFlight after the team added iCloud sync",
            ["** ARCHIVE FAILED ** No profiles for 'com.example.{mapp}' were found matching the requested capabilities"],
            ["None of the installed profiles cover the new capability"],
            "Use fastlane match to create and install a profile that carries the new capability",
            "Ran fastlane match appstore after enabling iCloud on the identifier",
            "archive uploaded to TestFlight",
            "still no matching profile after fastlane match; the container id is wrong"),
        ],
        symptomKeys: ["aps-environment", "0xe8008016", "no profiles for"],
        fixKeys: ["fastlane match", "match appstore", "match --force"],
      },
      {
        id: "gradle-daemon-heap",
        at: "build_android",
        wordings: [
          w("Build the Android {mapp} variant that now bundles the offline maps SDK",
            ["java.lang.OutOfMemoryError: Java heap space (Execution failed for task ':app:mergeDexRelease')"],
            ["Dexing the much larger dependency set needs more than the default build JVM gets"],
            "Give the build JVM more room: org.gradle.jvmargs=-Xmx6g in gradle.properties",
            "Set org.gradle.jvmargs=-Xmx6g -XX:MaxMetaspaceSize=1g in gradle.properties",
            "BUILD SUCCESSFUL in 5m 40s",
            "still crashing with org.gradle.jvmargs raised; the runner has only 7 GB"),
          w("Assemble {mapp} release with R8 full mode switched on",
            ["Expiring Daemon because JVM heap space is exhausted; Gradle build daemon disappeared unexpectedly"],
            ["R8 full mode needs far more memory than the daemon was started with"],
            "Raise the daemon's -Xmx6g via gradle.properties before enabling R8 full mode",
            "Raised the daemon to -Xmx6g in gradle.properties and restarted it",
            "R8 finished, APK 19 MB",
            "the daemon still vanishes with -Xmx6g; the container limit is 4 GB"),
          w("Produce the {mapp} Android bundle after the Kotlin 2 migration",
            ["FAILURE: Build failed with an exception. > GC overhead limit exceeded"],
            ["The compiler spends all its time collecting garbage in a small heap"],
            "Bump org.gradle.jvmargs and kotlin.daemon.jvmargs together",
            "Raised org.gradle.jvmargs and kotlin.daemon.jvmargs to -Xmx6g",
            "bundle built",
            "still thrashing after the org.gradle.jvmargs change"),
        ],
        symptomKeys: ["java heap space", "daemon disappeared", "gc overhead limit"],
        fixKeys: ["org.gradle.jvmargs", "-xmx6g"],
      },
      {
        id: "android-dex-limit",
        at: "build_android",
        wordings: [
          w("Build {mapp} for the old Android 4.4 devices after adding the analytics SDKs",
            ["D8: Cannot fit requested classes in a single dex file (# methods: 71234 > 65536)"],
            ["The app now references more methods than one classes file can index"],
            "Enable multidex (multiDexEnabled true) once the method count passes the limit",
            "Set multiDexEnabled true and added androidx.multidex",
            "APK built with classes.dex and classes2.dex",
            "multidex enabled but the old devices crash at startup"),
          w("Assemble {mapp} {scheme} with the three new payment SDKs",
            ["com.android.dex.DexIndexOverflowException: method ID not in [0, 0xffff]: 65536"],
            ["Too many method references for a single file"],
            "Turn on multidex for builds with many SDKs",
            "Enabled multidex in defaultConfig",
            "build green",
            "multidex is on but a library still fails to load"),
          w("Build {mapp} for Android after the Guava dependency was added",
            ["ERROR: too many references: 70112; max is 65536. Build failed with exit code 2"],
            ["The added library pushed the reference count beyond what one file allows"],
            "Shrink with R8 (minifyEnabled) and enable multidex",
            "Enabled minifyEnabled true with R8 and multidex",
            "references down to 48k, build green",
            "multidex and shrinking on, but proguard rules strip needed classes"),
        ],
        symptomKeys: ["single dex file", "dexindexoverflowexception", "too many references"],
        fixKeys: ["multidex", "minifyenabled"],
      },
      {
        id: "cocoapods-stale-specs",
        at: "install_deps",
        wordings: [
          w("Build {mapp} after bumping Firebase to the newest release",
            ["[!] CocoaPods could not find compatible versions for pod \"FirebaseAnalytics\""],
            ["The runner's local copy of the pod index predates the new release"],
            "After bumping pods run pod install --repo-update",
            "Ran pod install --repo-update",
            "Pod installation complete! 44 pods installed",
            "still incompatible after --repo-update; the deployment target is too low"),
          w("Install the {mapp} pods on the fresh mac runner with the new Sentry version",
            ["[!] Unable to find a specification for `Sentry (= 8.26.0)`"],
            ["The runner has an old pod index that lacks this version"],
            "Refresh the index with pod repo update before installing",
            "Ran pod repo update, then pod install",
            "pods installed",
            "pod repo update times out behind the proxy"),
          w("Update the {mapp} iOS dependencies to the versions from the security review",
            ["pod install failed with exit code 1: required version missing from the local specs index"],
            ["The specs checked out on the machine are months old"],
            "Use --repo-update whenever versions were bumped",
            "Re-ran with --repo-update",
            "dependencies resolved",
            "--repo-update fetched, but the private spec repo is unreachable"),
        ],
        symptomKeys: ["could not find compatible versions", "unable to find a specification", "local specs index"],
        fixKeys: ["--repo-update", "pod repo update"],
      },
    ],
  },
  {
    id: "payments",
    name: "handling payment provider webhooks",
    slots: { psp: ["Stripe", "Adyen", "Mollie"], evt: ["payment_intent.succeeded", "charge.refunded", "invoice.paid"], endpoint: ["/hooks/payments", "/api/psp-events"] },
    tasks: ["Deploy the new {psp} handler for {evt}", "Replay yesterday's {evt} events from {psp}", "Check that {endpoint} processes {psp} events"],
    steps: [
      ["register", ["{psp} CLI: endpoint create {endpoint} --events {evt}"], ["endpoint registered, secret stored in vault", "endpoint {endpoint} active"]],
      ["send_test", ["{psp} trigger {evt}"], ["test event sent", "test event queued by {psp}"]],
      ["handle", ["grep {evt} /var/log/payments/events.log | tail -3"], ["handled {evt} in 84 ms, order updated", "200 returned to {psp}"]],
      ["reconcile", ["python reconcile.py --since {date}"], ["0 mismatches", "{k} payments reconciled"]],
    ],
    chatter: ["note: finance closes the books on the 3rd", "note: {psp} sandbox keys rotate monthly", "note: {user} is on call for payments this week"],
    pitfalls: [
      {
        id: "webhook-signature-body",
        at: "handle",
        wordings: [
          w("Move the {psp} endpoint behind the new JSON body-parsing middleware",
            ["stripe.error.SignatureVerificationError: No signatures found matching the expected signature for payload"],
            ["The payload was parsed and re-serialized before verification, so the bytes differ from what was signed"],
            "Verify provider signatures on the raw body, before any JSON parsing",
            "Mounted express.raw on {endpoint} and verified against the raw body before parsing",
            "events verified and handled",
            "still failing on the raw body; the wrong signing secret is configured"),
          w("Add request logging middleware in front of {endpoint}",
            ["WARN {endpoint} -> 400: HMAC mismatch (computed 5f2a vs header 9c1e)"],
            ["The logging layer consumed and rewrote the body, so the digest differs"],
            "Hash exactly the raw request bytes the provider sent",
            "Captured the raw request bytes before the logger and computed the HMAC over them",
            "all deliveries accepted",
            "the HMAC still differs over the raw request bytes; the proxy recompresses"),
          w("Port the {psp} receiver to the framework that decodes JSON automatically",
            ["{\"level\":\"error\",\"msg\":\"invalid webhook signature\",\"provider\":\"{psp}\",\"status\":400}"],
            ["Automatic decoding changes whitespace and key order"],
            "Disable automatic decoding for the receiver and pass the raw body to the verifier",
            "Excluded the route from automatic decoding and passed the raw body to verify()",
            "signature checks pass",
            "raw body passed but the timestamp tolerance is exceeded"),
        ],
        symptomKeys: ["no signatures found matching", "hmac mismatch", "invalid webhook signature"],
        fixKeys: ["raw body", "raw request bytes", "express.raw"],
      },
      {
        id: "webhook-duplicate-delivery",
        at: "reconcile",
        wordings: [
          w("Reconcile the {psp} refunds after yesterday's endpoint outage",
            ["reconcile ERROR: order 88123 refunded twice (event evt_1P2 processed 2x)"],
            ["The provider re-sent events during the outage and the handler applied them again"],
            "Make the handler idempotent: record each event id and skip repeats",
            "Stored processed event ids in a unique-keyed table and skipped repeats (idempotent handler)",
            "reconcile clean, 0 double refunds",
            "still double-applied with the idempotent check; ids differ between retries"),
          w("Reprocess the {evt} backlog that {psp} is retrying",
            ["IntegrityError: duplicate fulfilment row for payment pi_3N (event delivered again by retry)"],
            ["Retries of already-handled events create second fulfilments"],
            "Guard side effects with an idempotency record keyed by event id",
            "Added an idempotency record keyed by event id inside the same transaction",
            "retries acknowledged without side effects",
            "the idempotency record is written after the side effect and races"),
          w("Audit customer credits after {psp} resent a day of events",
            ["[ALERT] double-charge credit failure: customer credited 2 times for one {evt}"],
            ["Resent events were handled as new ones"],
            "Deduplicate on event id before applying credits (idempotency)",
            "Deduplicated on event id via a processed_events table (idempotency) and reversed the extra credits",
            "credits correct",
            "duplicates persist after the idempotency change because two workers race"),
        ],
        symptomKeys: ["processed 2x", "delivered again", "double-charge"],
        fixKeys: ["idempotent", "idempotency"],
      },
      {
        id: "webhook-slow-ack",
        at: "handle",
        wordings: [
          w("Make the {psp} handler also render the PDF receipt and send the email synchronously",
            ["{psp} dashboard: webhook delivery failed, timed out after 10 s, next retry in 1h"],
            ["The handler does all the work before answering, so the provider gives up waiting"],
            "Answer 200 first and do slow work in a background job",
            "Acknowledged with 200 immediately and moved receipts and emails to a background job",
            "deliveries answered in 40 ms",
            "still slow after moving to a background job; the database insert blocks"),
          w("Add fraud scoring inside the {evt} handler",
            ["upstream timed out (110: Connection timed out) while reading response header from upstream, request: \"POST {endpoint}\""],
            ["The proxy cut the request because the handler took too long"],
            "Enqueue the event and respond; score it in a worker",
            "Changed the handler to enqueue the event and return 2xx; a worker does the scoring",
            "p99 response 120 ms",
            "the enqueue call itself hangs when the broker is down"),
          w("Chain the ERP sync into the {psp} event handler",
            ["ERROR provider-monitor: endpoint disabled by {psp} after 3 days of failed deliveries (slow responses)"],
            ["Consistently slow answers made the provider switch the endpoint off"],
            "Keep event handlers fast: acknowledge with 200, defer the ERP sync to a background job",
            "Re-enabled the endpoint and deferred the ERP sync to a background job",
            "endpoint healthy again",
            "the background job queue is full and acknowledgements still wait"),
        ],
        symptomKeys: ["webhook delivery failed", "while reading response header", "endpoint disabled"],
        fixKeys: ["background job", "enqueue", "acknowledged with 200"],
      },
      {
        id: "webhook-event-order",
        at: "reconcile",
        wordings: [
          w("Process {psp} subscription updates that arrive within the same second",
            ["reconcile ERROR: subscription sub_9 shows 'active' locally but {psp} says canceled (older update applied last)"],
            ["Events arrived in a different order than they happened"],
            "Compare each event's created timestamp with the stored one and ignore older events",
            "Stored the created timestamp per object and ignored older events",
            "subscription states match the provider",
            "still wrong after ignoring older events; two events share a created timestamp"),
          w("Sync {psp} customer changes into the CRM in real time",
            ["WARN stale event failure: customer.updated created=1714032000 applied after a newer one"],
            ["A late delivery overwrote fresher data"],
            "Do not trust payload order: refetch the object from the API on each event",
            "Refetched the object from the {psp} API on every event instead of using the payload",
            "CRM matches the provider",
            "refetching hits the API quota"),
          w("Mirror {psp} invoice status into the billing database",
            ["level=error msg=\"state regression\" invoice=in_77 from=paid to=open"],
            ["An older event moved the invoice back"],
            "Only apply transitions that move forward, compare created timestamps",
            "Applied only forward transitions using the created timestamp of each event",
            "no regressions since",
            "forward-only logic blocks legitimate reopenings"),
        ],
        symptomKeys: ["older update applied last", "stale event", "state regression"],
        fixKeys: ["created timestamp", "ignored older events", "refetch"],
      },
    ],
  },
  {
    id: "python-packaging",
    name: "installing Python packages",
    slots: { pkg: ["reporting-tools", "ml-utils", "etl-core"], pyver: ["3.11", "3.12"], venvdir: [".venv", "/opt/venvs/etl"] },
    tasks: ["Install the {pkg} requirements into {venvdir}", "Upgrade the {pkg} dependencies and run the tests", "Set up a fresh Python {pyver} environment for {pkg}"],
    steps: [
      ["create_venv", ["python{pyver} -m venv {venvdir}"], ["virtual environment ready at {venvdir}", "created {venvdir} with pip 24.0"]],
      ["install", ["{venvdir}/bin/pip install -r requirements.txt"], ["Successfully installed 48 packages", "Requirement already satisfied for 31 packages, installed 6"]],
      ["import_check", ["{venvdir}/bin/python -m {pkg} --version"], ["{pkg} {ver}", "import ok"]],
      ["run_tests", ["{venvdir}/bin/pytest -q"], ["212 passed in 41.2s", "all tests passed"]],
    ],
    chatter: ["note: the {pkg} lock file was last refreshed in spring", "note: {user} prefers uv but the CI uses pip", "note: PyPI mirror latency looks normal"],
    pitfalls: [
      {
        id: "py-build-headers",
        at: "install",
        wordings: [
          w("Install {pkg} on the slim python:{pyver} base image now that it depends on a C extension",
            ["src/module.c:1:10: fatal error: Python.h: No such file or directory; compilation terminated."],
            ["The extension must be compiled and the image lacks the development headers"],
            "On slim images apt-get install build-essential python3-dev before installing packages with C code",
            "Installed build-essential and python3-dev in the image before pip install",
            "extension compiled, install finished",
            "still failing with build-essential present; the extension needs a newer compiler"),
          w("Add lxml and psycopg2 to {pkg} on the minimal CI container",
            "ERROR: Failed building wheel for lxml (gcc missing, exit status 1)",
            ["There is no compiler toolchain in the container to build from source"],
            "Add a compiler toolchain (build-essential) and the -dev libraries to minimal images",
            "Added build-essential, libxml2-dev and libxslt1-dev to the Dockerfile",
            "lxml built from source",
            "build-essential installed but the -dev library versions are too old"),
          w("Install {pkg} with the PostgreSQL driver on the alpine runner",
            ["Error: pg_config executable not found. (setup.py egg_info did not run successfully, exit code 1)"],
            ["The driver needs the PostgreSQL client headers to build"],
            "Install libpq-dev (postgresql-dev on alpine) before the driver",
            "Installed postgresql-dev (libpq-dev equivalent) and gcc, then reinstalled",
            "driver installed",
            "libpq-dev present, but musl breaks the build"),
        ],
        symptomKeys: ["python.h", "failed building wheel", "pg_config"],
        fixKeys: ["build-essential", "python3-dev", "libpq-dev"],
      },
      {
        id: "py-resolver-conflict",
        at: "install",
        wordings: [
          w("Upgrade {pkg} to pandas 2 while keeping the old great-expectations pin",
            ["ERROR: ResolutionImpossible: for help visit https://pip.pypa.io/en/latest/topics/dependency-resolution"],
            ["Two pins require incompatible versions of the same library"],
            "Resolve pins together with pip-compile and move the blocking package to a compatible release",
            "Bumped great-expectations to 0.18 (supports pandas 2) and regenerated the lock with pip-compile",
            "lock regenerated, install green",
            "pip-compile still finds no solution; a third pin blocks it"),
          w("Add the new numpy release to {pkg} alongside the pinned scipy",
            ["ERROR: Cannot install numpy==2.0.0 and scipy==1.10.1 because these package versions have conflicting dependencies."],
            ["The pinned scipy only supports older numpy"],
            "Pick a compatible pin for the dependent package rather than forcing the new one",
            "Moved scipy to a compatible pin (1.13) and recompiled the lock with pip-compile",
            "both installed together",
            "the compatible pin drops support for the Python version in CI"),
          w("Install {pkg} together with the vendor SDK the partner sent",
            ["ERROR: pip's dependency resolver does not currently take into account all the packages that are installed; vendor-sdk 3.1 requires urllib3<2, but you have urllib3 2.2.1 (incompatible)"],
            ["The SDK requires an old transport library that clashes with ours"],
            "Lock the whole set with pip-compile so conflicts surface before install",
            "Generated a joint lock with pip-compile and a compatible pin urllib3<2",
            "environment consistent",
            "pip-compile with the compatible pin breaks the HTTP client"),
        ],
        symptomKeys: ["resolutionimpossible", "conflicting dependencies", "dependency resolver"],
        fixKeys: ["pip-compile", "compatible pin"],
      },
      {
        id: "py-externally-managed",
        at: "install",
        wordings: [
          w("Install {pkg} system-wide on the new Debian 12 runner",
            ["error: externally-managed-environment × This environment is externally managed"],
            ["The distribution protects its interpreter from pip installs"],
            "Never pip install into the distro interpreter: use a dedicated venv (or pipx for command-line tools)",
            "Created a dedicated venv at /opt/venvs/{pkg} and installed there",
            "installed in the dedicated venv",
            "the dedicated venv misses system packages the tool imports"),
          w("Install the {pkg} command-line tool for all users on the Ubuntu 24.04 box",
            ["[ERROR] pip refused: PEP 668 marker found at /usr/lib/python3.12/EXTERNALLY-MANAGED"],
            ["The OS marks its Python as managed by apt"],
            "Install command-line tools with pipx",
            "Installed the tool with pipx install {pkg}",
            "command available on PATH for all users",
            "pipx cannot reach the package index from this host"),
          w("pip install {pkg} on the Fedora 40 host without a virtual environment",
            ["pip failed with exit code 1: system installs blocked by the distro, use apt or a venv"],
            ["Installing into the system Python is disallowed on this OS"],
            "Put project dependencies in a dedicated venv",
            "Made a dedicated venv for the project and pointed the service at it",
            "service runs from the venv",
            "the dedicated venv lacks the SELinux bindings"),
        ],
        symptomKeys: ["externally-managed", "externally managed", "pep 668", "blocked by the distro"],
        fixKeys: ["pipx", "dedicated venv"],
      },
      {
        id: "py-glibc-wheels",
        at: "import_check",
        wordings: [
          w("Install the {pkg} wheels built on Ubuntu 24.04 onto the CentOS 7 batch hosts",
            ["ImportError: /lib64/libc.so.6: version `GLIBC_2.34' not found (required by _fast.cpython-311-x86_64-linux-gnu.so)"],
            ["The wheel was compiled against a newer C library than the old hosts have"],
            "Build portable wheels in the manylinux2014 container and run auditwheel repair",
            "Rebuilt the wheels in the manylinux2014 image and ran auditwheel repair",
            "import works on the old hosts",
            "still failing with manylinux2014 wheels; a vendored library links newer symbols"),
          w("Ship the in-house {pkg} wheel to the RHEL 7 cluster",
            ["ERROR: fastparse-1.2-cp311-cp311-linux_x86_64.whl is not a supported wheel on this platform."],
            ["A plain linux tag is not installable there; only portable tags are"],
            "Publish wheels repaired with auditwheel so they carry a portable tag",
            "Ran auditwheel repair to produce manylinux tags and republished",
            "pip accepted the wheel",
            "auditwheel refuses: the library needs a newer policy"),
          w("Deploy the {pkg} binary extension to the older Debian hosts",
            ["OSError: libstdc++.so.6: version `GLIBCXX_3.4.30' missing (required by _core.so), load failed"],
            ["The C++ runtime on the target is older than the one used to build"],
            "Compile in the manylinux2014 toolchain so the runtime requirements stay old",
            "Compiled in the manylinux2014 image with a static libstdc++",
            "extension loads",
            "the manylinux2014 build lacks a C++20 feature we use"),
        ],
        symptomKeys: ["glibc_2.34", "not a supported wheel", "glibcxx"],
        fixKeys: ["manylinux2014", "auditwheel"],
      },
    ],
  },
  {
    id: "log-shipping",
    name: "shipping logs",
    slots: { shipper: ["fluent-bit", "vector", "promtail"], svc2: ["checkout-web", "auth-svc", "batch-runner"], sink: ["Loki", "OpenSearch", "Datadog"] },
    tasks: ["Ship {svc2} logs to {sink} with {shipper}", "Add the {svc2} log files to the {shipper} config", "Check that {svc2} logs arrive in {sink}"],
    steps: [
      ["edit_config", ["vim /etc/{shipper}/{shipper}.conf (add input for {svc2})"], ["config saved", "input section for {svc2} added"]],
      ["validate", ["{shipper} --dry-run -c /etc/{shipper}/{shipper}.conf"], ["configuration OK", "config valid, 3 inputs, 1 output"]],
      ["restart", ["systemctl restart {shipper}"], ["{shipper} active (running)", "{shipper} restarted, pid {pid}"]],
      ["query_sink", ["query {sink} for service={svc2} over the last 15m"], ["{k} lines found", "latest line 3 s old"]],
    ],
    chatter: ["note: {sink} retention is 14 days", "note: {svc2} logs about 300 lines per second normally", "note: {user} set up the {shipper} daemonset"],
    pitfalls: [
      {
        id: "logs-stacktrace-split",
        at: "query_sink",
        wordings: [
          w("Ship the Java stack traces of {svc2} to {sink} as whole events",
            ["ERROR alert noise: one exception produced 87 separate events in {sink}, each '\\tat com.example' frame alone"],
            ["Every line becomes its own event, so traces are torn apart"],
            "Join stack traces with a multiline parser before shipping",
            "Added a multiline parser (java mode, start pattern on the timestamp) that joins continuation lines",
            "each exception is one event now",
            "the multiline parser still splits traces that contain blank lines"),
          w("Get the Python tracebacks of {svc2} into {sink} readable",
            ["[warn] parser: line '  File \"/app/handlers.py\", line 88' did not match regex, stored as its own record"],
            ["Traceback frames do not start with a timestamp and are shipped one by one"],
            "Configure multiline handling so continuation lines join the first line",
            "Configured multiline with a first-line regex on the timestamp",
            "tracebacks arrive whole",
            "multiline joins unrelated requests under load"),
          w("Make {svc2} crash reports searchable in {sink}",
            ["level=error msg=\"orphan frames: 4,812 events without a message header\" source={svc2}"],
            ["Frames of one report end up as unrelated events"],
            "Treat indented continuation lines as part of the previous event",
            "Set up a multiline rule that appends continuation lines to the previous event",
            "orphan count at 0",
            "continuation lines are still split when they exceed the buffer"),
        ],
        symptomKeys: ["separate events", "did not match regex", "orphan frames"],
        fixKeys: ["multiline", "continuation lines"],
      },
      {
        id: "logs-buffer-overflow",
        at: "query_sink",
        wordings: [
          w("Ship {svc2} debug logs (about 40k lines per second) to {sink}",
            ["[error] [input:tail:tail.0] pausing: mem buf overlimit; chunks dropped"],
            ["The in-memory buffer fills faster than the output drains"],
            "For bursty inputs use filesystem buffering (storage.type filesystem)",
            "Switched the input to storage.type filesystem with a 2 GB storage.total_limit_size",
            "no pauses, backlog drained in 4 minutes",
            "still dropping with storage.type filesystem; the disk is slow"),
          w("Forward the {svc2} audit stream to {sink} during the load test",
            ["level=warn msg=\"events lost\" component=sink reason=buffer_full count=18231 failed=true"],
            ["Bursts exceed the sink batch capacity and events are discarded"],
            "Add a disk buffer in front of slow sinks",
            "Configured a disk buffer of 4 GB with when_full = block",
            "0 events lost during the next test",
            "with the disk buffer, the upstream app now blocks"),
          w("Send {svc2} access logs from all nodes to {sink} after the traffic doubled",
            ["{\"lvl\":\"error\",\"err\":\"retry queue at capacity, discarding 900 records\",\"shipper\":\"{shipper}\"}"],
            ["The shipper keeps everything in RAM and gives up under backpressure"],
            "Enable filesystem buffering so backpressure does not lose data",
            "Enabled filesystem buffering and raised the flush batch",
            "records delivered after the peak",
            "filesystem buffering fills the root disk"),
        ],
        symptomKeys: ["mem buf overlimit", "buffer_full", "retry queue at capacity"],
        fixKeys: ["storage.type filesystem", "disk buffer", "filesystem buffering"],
      },
      {
        id: "logs-rotation-gap",
        at: "query_sink",
        wordings: [
          w("Ship {svc2} logs now that logrotate runs hourly",
            ["WARN tail: file truncated, offset 4812113 > size 0, lines lost"],
            ["The tailer kept the old offset when the file was truncated under it"],
            "Let the tailer follow renamed files: set rotate_wait and a short refresh interval",
            "Set rotate_wait 30 and refresh_interval 5 on the tail input",
            "no gaps across the last 6 rotations",
            "still losing lines with rotate_wait; the app writes to the rotated file"),
          w("Find out why {svc2} logs vanish from {sink} every hour",
            ["ERROR gap in {sink}: no {svc2} lines between :00 and :14 after each rotation"],
            ["The shipper notices new files only every quarter hour"],
            "Rescan for new files quickly (refresh_interval) after rotations",
            "Lowered refresh_interval to 5 s so the new file is picked up immediately",
            "gaps gone",
            "refresh_interval is low but the glob does not match the new names"),
          w("Keep {svc2} logs flowing through the nightly compression job",
            ["[error] inode 918223 was rotated away, still reading the deleted handle, new file ignored"],
            ["The shipper held the old file and never opened the replacement"],
            "Keep reading the rotated file for a while (rotate_wait) and then follow the new one",
            "Configured rotate_wait 60 so the tailer finishes the old file and opens the new one",
            "continuous logs through the compression window",
            "rotate_wait does not help; the compression runs before it elapses"),
        ],
        symptomKeys: ["file truncated", "after each rotation", "deleted handle"],
        fixKeys: ["rotate_wait", "refresh_interval"],
      },
    ],
  },
  {
    id: "git",
    name: "working with Git repositories",
    slots: { repo: ["platform-monorepo", "design-assets", "billing-service"], branch: ["feature/checkout-redesign", "fix/rounding", "release/2024.05"] },
    tasks: ["Merge {branch} into main in {repo}", "Tag a release of {repo} from main", "Clone {repo} on the new build agent and run the checks"],
    steps: [
      ["clone", ["git clone git@git.internal:{repo}.git"], ["Cloning into '{repo}'... done.", "Receiving objects: 100% (41223/41223), done."]],
      ["checkout", ["git checkout {branch}"], ["Switched to branch '{branch}'", "Your branch is up to date with 'origin/{branch}'."]],
      ["build", ["make ci"], ["all checks passed", "build ok in 3m"]],
      ["push", ["git push origin {branch}"], ["{branch} -> {branch}", "Everything up-to-date"]],
    ],
    chatter: ["note: {repo} is mirrored to the backup host nightly", "note: {user} reviewed {branch}", "note: the build agent has git 2.43"],
    pitfalls: [
      {
        id: "git-lfs-pointers",
        at: "build",
        wordings: [
          w("Clone {repo} with its large design files on the fresh CI agent",
            ["PIL.UnidentifiedImageError: cannot identify image file 'assets/hero.png'"],
            ["The checkout contains small text stubs instead of the binary assets"],
            "Agents need git lfs install and git lfs pull after cloning repos with large files",
            "Installed the extension and ran git lfs install && git lfs pull",
            "assets are real files now; build ok",
            "git lfs pull fails with 403 from the storage server"),
          w("Run the model tests of {repo} on the new runner",
            ["[ERROR] model load failed: file starts with 'version https://git-lfs.github.com/spec/v1'"],
            ["The runner fetched pointer stubs, not content"],
            "Fetch large objects explicitly (git lfs pull) in CI",
            "Added git lfs pull after the checkout step",
            "models load",
            "git lfs pull exceeds the bandwidth quota"),
          w("Restore the {repo} fixtures on the build machine",
            ["tar: fixtures/db.tar.gz: not in gzip format (file is 132 bytes); exit code 2"],
            ["The archive is a 132-byte stub instead of the real file"],
            "Enable the large-file extension on build hosts (git lfs install)",
            "Ran git lfs install and re-checked out the fixtures",
            "fixtures extracted",
            "after git lfs install the smudge filter still does not run"),
        ],
        symptomKeys: ["cannot identify image file", "git-lfs.github.com/spec", "not in gzip format"],
        fixKeys: ["git lfs pull", "git lfs install"],
      },
      {
        id: "git-rejected-push",
        at: "push",
        wordings: [
          w("Push the rebased {branch} of {repo}",
            [" ! [rejected]        {branch} -> {branch} (non-fast-forward); error: failed to push some refs"],
            ["Rewriting history made the local branch diverge from the published one"],
            "After a rebase of your own branch, push with --force-with-lease",
            "Pushed with git push --force-with-lease after checking nobody else had pushed",
            "remote updated",
            "--force-with-lease rejected: someone pushed in the meantime"),
          w("Publish the squashed commits of {branch}",
            ["error: Updates were rejected because the tip of your current branch is behind its remote counterpart."],
            ["Squashing rewrote commits the remote already has"],
            "Use --force-with-lease rather than a bare force when updating a rewritten branch",
            "Ran git push --force-with-lease origin {branch}",
            "branch updated on the remote",
            "--force-with-lease refused because the lease is stale"),
          w("Upload {branch} after amending the last commit message",
            ["hint: Updates were rejected because the remote contains work that you do not have locally. (exit code 1)"],
            ["The amended commit replaced one that is already published"],
            "Protect others' work with --force-with-lease",
            "Fetched, confirmed the remote tip was mine, then pushed --force-with-lease",
            "push accepted",
            "the --force-with-lease push is blocked by branch settings"),
        ],
        symptomKeys: ["non-fast-forward", "tip of your current branch", "work that you do not have"],
        fixKeys: ["--force-with-lease"],
      },
      {
        id: "git-shallow-history",
        at: "build",
        wordings: [
          w("Version the {repo} build from tags on the CI's default shallow checkout",
            ["fatal: No names found, cannot describe anything."],
            ["The CI fetched only the last commit, without tags"],
            "Fetch full history and tags (fetch-depth: 0) for steps that derive versions from git",
            "Set fetch-depth: 0 on the checkout step",
            "version {ver} derived from the tag",
            "fetch-depth: 0 set but the tags are annotated on another branch"),
          w("Build the {repo} Python package, whose version comes from setuptools-scm",
            ["LookupError: setuptools-scm was unable to detect version for /builds/{repo}"],
            ["The checkout lacks the history the version tool needs"],
            "Unshallow the clone before building (git fetch --unshallow --tags)",
            "Ran git fetch --unshallow --tags before the build",
            "package version {ver}",
            "--unshallow fails on the mirror"),
          w("Generate the changelog for {repo} in the pipeline",
            ["ERROR version.sh: git describe gave 0.0.0-unknown (only 1 commit fetched)"],
            ["Depth-1 clones have no tags to describe from"],
            "Clone with fetch-depth: 0 when tags matter",
            "Changed the pipeline clone to fetch-depth: 0",
            "changelog lists 42 commits since the last tag",
            "fetch-depth: 0 makes the clone time out"),
        ],
        symptomKeys: ["no names found", "unable to detect version", "0.0.0-unknown"],
        fixKeys: ["fetch-depth: 0", "--unshallow"],
      },
      {
        id: "git-protected-branch",
        at: "push",
        wordings: [
          w("Push the hotfix for {repo} straight to main",
            ["remote: error: GH006: Protected branch update failed for refs/heads/main."],
            ["Main requires reviews; direct pushes are refused"],
            "Never push to main: open a pull request from a hotfix branch",
            "Pushed to hotfix/{ticket} and merged through a pull request with one review",
            "hotfix merged and deployed",
            "the pull request is blocked by a failing required check"),
          w("Commit the config change directly on the main branch of {repo}",
            [" ! [remote rejected] main -> main (pre-receive hook declined)"],
            ["The server-side policy rejects direct commits to main"],
            "Route changes to main through a merge request",
            "Opened a merge request from a feature branch instead",
            "merged after approval",
            "the merge request needs an approver who is on holiday"),
          w("Force the release commit onto main of {repo} before the deadline",
            ["remote: GitLab: You are not allowed to push code to protected branches on this project."],
            ["The branch is protected for everyone without maintainer rights"],
            "Use a merge request, or ask a maintainer, never push to protected branches",
            "Created a merge request with the release commit and had it approved",
            "release commit on main",
            "the merge request pipeline fails on a flaky test"),
        ],
        symptomKeys: ["gh006", "pre-receive hook declined", "not allowed to push code"],
        fixKeys: ["pull request", "merge request"],
      },
    ],
  },
  {
    id: "data-pipeline",
    name: "running data pipelines",
    slots: { dag: ["daily_revenue", "user_sessions", "inventory_snapshot"], sparkjob: ["sessionize.py", "join_orders.py", "dedupe_events.py"] },
    tasks: ["Backfill the {dag} DAG for {date}", "Run the {dag} pipeline for yesterday", "Rerun {sparkjob} after the upstream fix"],
    steps: [
      ["trigger", ["airflow dags trigger {dag} -e {date}"], ["Created <DagRun {dag} @ {date}>", "dag run queued"]],
      ["extract", ["airflow tasks test {dag} extract {date}"], ["extracted {k} rows", "extract done in 2m"]],
      ["spark_transform", ["spark-submit --master yarn jobs/{sparkjob}"], ["Job 0 finished: 212 tasks in 6.2 min", "wrote 64 part files"]],
      ["load", ["airflow tasks test {dag} load_warehouse {date}"], ["loaded {k} rows into the warehouse", "load done"]],
    ],
    chatter: ["note: the {dag} SLA is 06:00", "note: the YARN queue is shared with the analysts", "note: {user} owns {sparkjob}"],
    pitfalls: [
      {
        id: "spark-container-memory",
        at: "spark_transform",
        wordings: [
          w("Run {sparkjob} over the full year instead of a single day",
            ["ExecutorLostFailure (executor 7 exited caused by one of the running tasks) Reason: Container killed by YARN for exceeding memory limits. 12.4 GB of 12 GB physical memory used"],
            ["Off-heap usage of the executors exceeds what the containers were given"],
            "Give executors more off-heap room with spark.executor.memoryOverhead",
            "Raised spark.executor.memoryOverhead to 3g and reran",
            "job finished in 41 min",
            "still killed with memoryOverhead at 3g; one task holds a huge broadcast"),
          w("Reprocess all clickstream partitions with {sparkjob}",
            ["ERROR YarnScheduler: Lost executor 3 on worker-12: container exited with exit code 137"],
            ["Executors get killed by the node manager for memory use"],
            "Raise memoryOverhead and use more shuffle partitions for large inputs",
            "Set memoryOverhead to 4g and spark.sql.shuffle.partitions to 2000",
            "stage 4 completed",
            "executors still die with shuffle.partitions at 2000"),
          w("Run {sparkjob} on the three-month window the analysts asked for",
            ["WARN TaskSetManager: Lost task 31.2 in stage 4.0: killed by external signal, executor gone"],
            ["Tasks are too large per partition and executors exceed their container"],
            "Spread work over more tasks with spark.sql.shuffle.partitions",
            "Increased spark.sql.shuffle.partitions to 1600 so each task handles less",
            "all tasks done",
            "more shuffle partitions did not help; the input file is not splittable"),
        ],
        symptomKeys: ["container killed by yarn", "lost executor", "killed by external signal"],
        fixKeys: ["memoryoverhead", "shuffle.partitions"],
      },
      {
        id: "spark-join-skew",
        at: "spark_transform",
        wordings: [
          w("Join orders with customers in {sparkjob}, where one marketplace account owns most orders",
            ["WARN TaskSetManager: stage 9: 199 of 200 tasks done in 2 min, task 143 still running after 3 h (straggler), SLA failed"],
            ["One key holds most of the rows and lands in a single task"],
            "Enable adaptive skew join handling (spark.sql.adaptive.skewJoin.enabled) or salt the hot key",
            "Enabled spark.sql.adaptive.skewJoin.enabled and salted the marketplace key into 32 buckets",
            "stage 9 finished in 6 minutes",
            "still one slow task after salting; the skew is in a second join"),
          w("Aggregate {dag} by customer where guest checkouts all share the id 0",
            ["ERROR shuffle: partition 143 holds 38 GB of 40 GB (skewed key customer_id=0), fetch failed"],
            ["The placeholder id collects nearly all rows in one partition"],
            "Salt the placeholder key or filter it out and process it separately",
            "Salted customer_id=0 with a random suffix before the join and aggregated in two steps",
            "partition sizes even",
            "salting breaks the downstream dedup"),
          w("Run {sparkjob} for the Black Friday data",
            ["level=error msg=\"deadline missed\" task=join reason=one_partition_hot skew_ratio=140"],
            ["A few hot keys dominate one partition"],
            "Let AQE split skewed partitions (skewJoin)",
            "Turned on AQE with skewJoin enabled and a 256 MB skew threshold",
            "join done within the window",
            "skewJoin does not apply to this join type"),
        ],
        symptomKeys: ["straggler", "skewed key", "one_partition_hot"],
        fixKeys: ["skewjoin", "salted", "salting", "salt the"],
      },
      {
        id: "airflow-sensor-slots",
        at: "extract",
        wordings: [
          w("Backfill {dag} for the last 90 days in one go",
            ["[2024-05-03, 11:02:17 UTC] {taskinstance.py:1138} WARNING - Dependencies not met: 0 open slots in pool default_pool; task failed to queue"],
            ["Waiting sensors hold every slot so the real tasks never start"],
            "Run sensors in mode='reschedule' and cap backfills with max_active_runs",
            "Switched the sensors to mode='reschedule' and set max_active_runs=4",
            "backfill progressing, 4 runs at a time",
            "still starved with max_active_runs; another DAG fills the pool"),
          w("Start all the {dag} catch-up runs that piled up during the outage",
            ["ERROR sensor wait_for_upstream timed out after 12h; 128 sensors occupied every worker slot"],
            ["Poking sensors sit on worker slots and block the downstream tasks"],
            "Use reschedule mode for long sensors",
            "Set the upstream sensor to reschedule mode with poke_interval 300",
            "catch-up runs completing",
            "reschedule mode sensors still time out because upstream never lands"),
          w("Backfill {dag} since January with the external-task sensors enabled",
            ["airflow.exceptions.AirflowSensorTimeout: Sensor has timed out; run duration of 43200 seconds exceeded"],
            ["Too many concurrent runs wait on sensors at once"],
            "Limit concurrent runs with max_active_runs when backfilling",
            "Limited the backfill to max_active_runs=3 and reran",
            "backfill complete",
            "max_active_runs is ignored by the backfill CLI"),
        ],
        symptomKeys: ["open slots in pool", "occupied every worker slot", "airflowsensortimeout"],
        fixKeys: ["mode='reschedule'", "reschedule mode", "max_active_runs"],
      },
      {
        id: "parquet-type-drift",
        at: "load",
        wordings: [
          w("Load {dag} partitions written before and after the upstream type change",
            ["QueryExecutionException: Parquet column cannot be converted in file part-00012.parquet. Column: [amount], Expected: bigint, Found: INT32"],
            ["Old files store the column as a 32-bit int while the table expects 64-bit"],
            "Rewrite old partitions with the column cast to bigint and read with an explicit schema",
            "Rewrote the old partitions with amount cast to bigint and read with an explicit schema",
            "load complete over all partitions",
            "still failing after the cast to bigint; a third type appears in March"),
          w("Merge the {dag} history with the new partitions into one table",
            ["pyarrow.lib.ArrowInvalid: Schema at index 3 was different: amount: double vs amount: int64"],
            ["The files disagree on the column type"],
            "Read with an explicit schema and cast while reading",
            "Passed an explicit schema to the dataset read and cast amount",
            "table assembled",
            "the explicit schema fails on nested columns"),
          w("Recompute {dag} over the partitions that predate the schema migration",
            ["ERROR load_warehouse: incompatible types for column amount (DOUBLE vs INT64) across partitions"],
            ["Partitions from different periods disagree on the type"],
            "Normalize old partitions (cast to bigint) once",
            "Ran a one-off job that rewrote March partitions with amount cast to bigint",
            "types consistent",
            "the rewrite with the cast to bigint loses decimals"),
        ],
        symptomKeys: ["cannot be converted in file", "schema at index", "incompatible types for column"],
        fixKeys: ["explicit schema", "cast to bigint"],
      },
    ],
  },
  {
    id: "e2e",
    name: "running browser end-to-end tests",
    slots: { suite: ["checkout.spec.ts", "login.spec.ts", "search.spec.ts"], browser: ["chromium", "firefox", "webkit"], baseurl: ["https://qa.shop.internal", "http://localhost:3000"] },
    tasks: ["Run the {suite} suite on {browser}", "Add a test for the coupon field to {suite}", "Check why the nightly {suite} job is red"],
    steps: [
      ["install_browsers", ["npx playwright install {browser}"], ["{browser} downloaded", "{browser} already installed"]],
      ["start_app", ["npm run start:test"], ["listening on {baseurl}", "app ready in 6 s"]],
      ["run_suite", ["npx playwright test {suite} --project={browser}"], ["14 passed (52s)", "all tests passed"]],
      ["report", ["npx playwright show-report"], ["report served at :9323", "report written to playwright-report/"]],
    ],
    chatter: ["note: the {suite} suite takes about a minute locally", "note: {user} added two tests yesterday", "note: CI shards the suite across 4 machines"],
    pitfalls: [
      {
        id: "e2e-stale-element",
        at: "run_suite",
        wordings: [
          w("Run {suite} after the product grid switched to client-side re-rendering",
            ["Error: locator.click: Element is not attached to the DOM"],
            ["The test held a node that the framework replaced when the grid re-rendered"],
            "Use role-based locators (getByRole) that re-query on every action",
            "Replaced the stored element handles with getByRole locators that re-query on each action",
            "{suite}: 20 of 20 passed in 5 repeated runs",
            "still flaky with getByRole; the grid re-renders twice"),
          w("Run the Selenium version of {suite} against the new React checkout",
            ["selenium.common.exceptions.StaleElementReferenceException: Message: stale element reference"],
            ["A cached reference points at a node that React replaced"],
            "Look elements up right before use with role-based locators",
            "Switched to role-based locators looked up right before each click",
            "suite green",
            "role-based locators still hit the replaced node during the transition"),
          w("Stabilize the flaky {suite} tests on {browser}",
            ["✘ 3 tests failed: clicked the old button node, which was replaced mid-action"],
            ["The button is swapped while the click is in flight"],
            "Query by role at action time (getByRole) and wait for the element to be stable",
            "Used getByRole for the button and let auto-waiting handle stability",
            "no flakes in 50 runs",
            "getByRole still matches two buttons"),
        ],
        symptomKeys: ["not attached to the dom", "staleelementreferenceexception", "replaced mid-action"],
        fixKeys: ["getbyrole", "role-based locators"],
      },
      {
        id: "e2e-host-libraries",
        at: "run_suite",
        wordings: [
          w("Run {suite} on the new minimal Debian CI image",
            ["browserType.launch: Host system is missing dependencies to run browsers. Missing libraries: libatk-1.0.so.0"],
            ["The image lacks the shared libraries the browser needs"],
            "On fresh images run npx playwright install-deps",
            "Ran npx playwright install-deps {browser} in the image",
            "browser launches, suite passes",
            "install-deps needs root and the image runs as a user"),
          w("Move the {suite} job to the stripped-down runner image",
            ["{browser}: error while loading shared libraries: libnss3.so: cannot open shared object file"],
            ["A system library the browser links against is absent"],
            "Use the official Playwright image that already has the libraries",
            "Switched the job to the official Playwright image mcr.microsoft.com/playwright",
            "job green",
            "the Playwright image tag lags the package version"),
          w("Run {suite} headless in the distroless container",
            ["[FATAL] {browser} exited with code 127 before the first page: libgbm.so.1 absent"],
            ["The container has no graphics buffer library"],
            "Add the browser's system dependencies (install-deps) to the image",
            "Added a build stage that runs install-deps",
            "tests start",
            "install-deps does not support this base distribution"),
        ],
        symptomKeys: ["missing dependencies to run", "libnss3", "libgbm"],
        fixKeys: ["install-deps", "playwright image"],
      },
      {
        id: "e2e-navigation-wait",
        at: "run_suite",
        wordings: [
          w("Run {suite} against QA now that the pages load analytics and chat widgets",
            ["TimeoutError: page.goto: Timeout 30000ms exceeded. waiting until \"networkidle\""],
            ["Third-party widgets keep connections open so the page is never idle"],
            "Do not wait for idle networks; wait for domcontentloaded plus a visible element",
            "Used waitUntil: 'domcontentloaded' and expect(heading).toBeVisible()",
            "navigation waits take 1.2 s",
            "domcontentloaded fires but the heading renders late"),
          w("Run the {suite} login flow now that the portal polls for notifications",
            ["Error: page.waitForNavigation: navigation to /account did not finish in 30 s (event \"load\")"],
            ["The load event is delayed by long-running requests"],
            "Assert on page content with toBeVisible instead of navigation events",
            "Replaced waitForNavigation with expect(page.getByText('Welcome')).toBeVisible()",
            "login test stable",
            "toBeVisible times out too; the page really is slow"),
          w("Fix the red nightly {suite} after the support chat was embedded",
            ["FAIL {suite} › checkout: navigation never settled, 3 long-polling requests kept open"],
            ["Long-polling keeps the page busy forever"],
            "Wait on domcontentloaded and the element you need",
            "Changed the waits to domcontentloaded and the checkout form",
            "nightly green",
            "domcontentloaded too early; the form is injected later"),
        ],
        symptomKeys: ["networkidle", "waitfornavigation", "navigation never settled"],
        fixKeys: ["domcontentloaded", "tobevisible"],
      },
      {
        id: "e2e-shared-state",
        at: "run_suite",
        wordings: [
          w("Run {suite} in parallel with 8 workers to cut CI time",
            ["expect(received).toBe(expected): cart count 3, expected 1 (leftover items from another test); 1 failed"],
            ["Tests share one account and see each other's data"],
            "Give each worker its own test user",
            "Created an own test user per worker in a fixture and reset the cart before each test",
            "8 workers, 0 failures",
            "own test user per worker, but the seed script is slow and times out"),
          w("Shard {suite} across 4 CI machines",
            ["AssertionError: signup failed, 409 Conflict: user e2e-shop@example.com already exists"],
            ["Shards create the same fixed user at the same time"],
            "Use per-worker unique users and data",
            "Generated per-worker unique emails from the worker index",
            "all shards pass",
            "per-worker users hit the sign-up rate limit"),
          w("Enable fully parallel mode for {suite}",
            ["[retry #2] failed: passes only when run alone, fails under --workers=8 (order-dependent)"],
            ["Tests depend on state left by others"],
            "Isolate tests with a fresh storage state per test",
            "Gave every test a fresh storage state and seeded its own data",
            "tests pass in any order",
            "fresh storage state did not help; the server caches sessions"),
        ],
        symptomKeys: ["leftover items", "409 conflict", "order-dependent"],
        fixKeys: ["own test user", "per-worker", "storage state"],
      },
    ],
  },
];

const WORDING_FIELDS = ["tasks", "symptoms", "rationale", "hints", "fixes", "results", "failedFix"];

/** The pitfalls with their family; each also carries the union of its wordings' texts under the wording field names. */
export const PITFALLS = FAMILIES.flatMap((family) =>
  family.pitfalls.map((p) => ({ ...p, family: family.id, ...Object.fromEntries(WORDING_FIELDS.map((field) => [field, p.wordings.flatMap((wd) => wd[field])])) })),
);
export const { pitfallById, classify } = pitfallIndex(PITFALLS);

/** A run's own seed from the bench seed and its index (mixing constants differ from agent-runs.mjs). */
function runSeed(seed, index) {
  let h = (seed ^ 0x7f4a7c15 ^ Math.imul(index + 1, 0x2545f491)) >>> 0;
  h = Math.imul(h ^ (h >>> 15), 0xc2b2ae35) >>> 0;
  h = Math.imul(h ^ (h >>> 13), 0x27d4eb2f) >>> 0;
  return (h ^ (h >>> 16)) >>> 0;
}

/** Draws the run's slot values: the family's, the generic ones, then the chosen task's overrides. */
function drawSlots(random, family, overrides) {
  const slots = {};
  for (const [name, make] of Object.entries(GENERIC_SLOTS)) slots[name] = make(random);
  for (const [name, values] of Object.entries(family.slots)) slots[name] = pick(random, values);
  return Object.assign(slots, overrides);
}

/**
 * Builds one run. `pitfall` is a pitfall id or null; `wording` picks the pitfall's wording (mod their count);
 * `fixFails` makes the fix not work (the run then fails at that step); `hints: false` leaves every directive_hint
 * empty. Items: { text, step_id, kind } with kind task | plan | call | observation | chatter | symptom | diagnosis |
 * fix | retry | fix_result | failed_fix | summary. Steps: the step outcomes to record, in order.
 */
function buildRun(random, family, pitfallId, { fixFails = false, wording = 0, hints = true } = {}) {
  const pitfall = pitfallId ? family.pitfalls.find((p) => p.id === pitfallId) : null;
  const wd = pitfall ? pitfall.wordings[wording % pitfall.wordings.length] : null;
  const entry = pick(random, wd ? wd.tasks : family.tasks);
  const [template, overrides] = Array.isArray(entry) ? entry : [entry, {}];
  const slots = drawSlots(random, family, overrides);
  const f = (t) => fill(t, slots);
  const task = f(template);
  const items = [];
  const steps = [];
  const chatter = () => f(random() < 0.5 ? pick(random, GENERIC_CHATTER) : pick(random, family.chatter));
  const push = (kind, text, stepId) => items.push({ kind, text, step_id: stepId });
  push("task", `task: ${task}`, "s0");
  push("plan", `plan: ${family.steps.map(([name]) => name.replaceAll("_", " ")).join(", then ")}`, "s0");
  if (random() < 0.5) push("chatter", chatter(), "s0");
  let aborted = false;
  for (const [i, [name, calls, observations]] of family.steps.entries()) {
    const stepId = `s${i + 1}`;
    if (random() < 0.3) push("chatter", chatter(), stepId);
    const call = `tool_call: ${f(pick(random, calls))}`;
    push("call", call, stepId);
    if (pitfall && name === pitfall.at) {
      const symptoms = [...wd.symptoms];
      push("symptom", `observation: ${f(symptoms.splice(int(random, symptoms.length), 1)[0])}`, stepId);
      if (symptoms.length > 0 && random() < 0.4) push("symptom", `observation: ${f(pick(random, symptoms))}`, stepId);
      const rationale = [...wd.rationale];
      const said = rationale.splice(int(random, rationale.length), 1)[0];
      push("diagnosis", `thought: ${f(pick(random, rationale.length ? rationale : [said]))}`, stepId);
      const hint = random() < 0.6 ? f(pick(random, wd.hints)) : "";
      steps.push({ step_id: stepId, step_name: name, outcome: "failure", signal: -1, rationale: f(said), directive_hint: hints ? hint : "" });
      const fix = f(pick(random, wd.fixes));
      const retryId = `${stepId}b`;
      push("fix", `action: ${fix}`, retryId);
      push("retry", call, retryId);
      if (fixFails) {
        const failed = f(pick(random, wd.failedFix));
        push("failed_fix", `observation: ${failed}`, retryId);
        steps.push({ step_id: retryId, step_name: `${name}_retry`, outcome: "failure", signal: -1, rationale: `Applied the known fix (${fix}) but it did not help: ${failed}`, directive_hint: "" });
        aborted = true;
        break;
      }
      push("fix_result", `observation: ${f(pick(random, wd.results))}`, retryId);
      steps.push({ step_id: retryId, step_name: `${name}_retry`, outcome: "success", signal: 1, rationale: `Worked after the change: ${fix}`, directive_hint: "" });
    } else {
      const obs = [...observations];
      push("observation", `observation: ${f(obs.splice(int(random, obs.length), 1)[0])}`, stepId);
      if (obs.length > 0 && random() < 0.4) push("observation", `observation: ${f(pick(random, obs))}`, stepId);
      steps.push({ step_id: stepId, step_name: name, outcome: "success", signal: 1, rationale: `${name.replaceAll("_", " ")} completed`, directive_hint: "" });
    }
    if (random() < 0.35) push("chatter", chatter(), stepId);
  }
  const last = `s${family.steps.length}`;
  push("summary", aborted ? `summary: run aborted, ${task} not done` : `summary: ${task}: done${pitfall ? " after one failed attempt" : ""}`, aborted ? steps.at(-1).step_id : last);
  return { family: family.id, pitfall: pitfall ? pitfall.id : null, task, items, steps };
}

/**
 * `count` runs from `seed`: each picks a family uniformly, then, with probability `pitfallShare`, one of its pitfalls
 * uniformly (its task then shows the pitfall's situation), else a plain task. The k-th occurrence of a pitfall in the
 * sequence uses its wording (k-1) mod n, so consecutive occurrences never share a wording. `hints: false` empties
 * every directive_hint. Run i depends on (seed, runs 0..i) only, so a longer sequence extends a shorter one.
 */
export function generateRuns({ seed = 7, count = 120, pitfallShare = 0.7, hints = true } = {}) {
  const occurrences = new Map();
  return Array.from({ length: count }, (_, index) => {
    const random = rng(runSeed(seed, index));
    const family = pick(random, FAMILIES);
    const pitfall = random() < pitfallShare ? pick(random, family.pitfalls).id : null;
    let wording = 0;
    if (pitfall) {
      wording = occurrences.get(pitfall) ?? 0;
      occurrences.set(pitfall, wording + 1);
    }
    return { index, id: `h${String(index).padStart(3, "0")}`, ...buildRun(random, family, pitfall, { wording, hints }) };
  });
}

/** A run that meets `pitfallId` with wording `index` mod n (its index names a distinct stream of the seed). */
export function pitfallRun(seed, index, pitfallId, { fixFails = false, hints = true } = {}) {
  const random = rng(runSeed(seed ^ 0x1b873593, index));
  const pitfall = pitfallById(pitfallId);
  const family = FAMILIES.find((fam) => fam.id === pitfall.family);
  return { index, id: `${fixFails ? "fail" : "extra"}-${pitfallId}-${index}`, ...buildRun(random, family, pitfallId, { fixFails, hints, wording: index }) };
}

/**
 * A long run of exactly `size` trace items for reflect latency: one family's steps repeated over batches (with
 * chatter), one pitfall met half-way, step outcomes one per batch plus the failed and the retried step.
 */
export function reflectRun(seed, index, size = 200) {
  const random = rng(runSeed(seed ^ 0x68e31da4, index));
  const family = FAMILIES[index % FAMILIES.length];
  const pitfall = family.pitfalls[Math.floor(index / FAMILIES.length) % family.pitfalls.length];
  const core = buildRun(random, family, pitfall.id, { wording: index });
  const head = core.items.slice(0, 2);
  const block = core.items.filter((it) => ["symptom", "diagnosis", "fix", "retry", "fix_result"].includes(it.kind));
  const filler = [];
  const steps = [];
  const slots = drawSlots(random, family, {});
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
  return { index, id: `reflect-${index}`, family: family.id, pitfall: pitfall.id, task: core.task, items, steps };
}

const wordSet = (text) => new Set(text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean));

function jaccard(a, b) {
  let shared = 0;
  for (const x of a) if (b.has(x)) shared++;
  const union = a.size + b.size - shared;
  return union === 0 ? 0 : shared / union;
}

/**
 * How much the wordings of a pitfall share: the Jaccard overlap of the word sets of their first symptom lines (slots
 * filled from a fixed seed, the same values for every wording of a pitfall), over all pairs of wordings of each
 * pitfall. Returns { mean_first_symptom_jaccard, max_pair: { pitfall, a, b, jaccard }, pitfalls, wordings }.
 */
export function overlapReport() {
  let total = 0;
  let pairs = 0;
  let max = { pitfall: null, a: -1, b: -1, jaccard: 0 };
  let wordings = 0;
  for (const [i, p] of PITFALLS.entries()) {
    const family = FAMILIES.find((fam) => fam.id === p.family);
    const slots = drawSlots(rng(0x5eed + i), family, {});
    const sets = p.wordings.map((wd) => wordSet(fill(wd.symptoms[0], slots)));
    wordings += sets.length;
    for (let a = 0; a < sets.length; a++) {
      for (let b = a + 1; b < sets.length; b++) {
        const j = jaccard(sets[a], sets[b]);
        total += j;
        pairs++;
        if (j > max.jaccard) max = { pitfall: p.id, a, b, jaccard: Number(j.toFixed(3)) };
      }
    }
  }
  return { mean_first_symptom_jaccard: Number((pairs ? total / pairs : 0).toFixed(4)), max_pair: max, pitfalls: PITFALLS.length, wordings };
}

/** Error vocabulary a symptom line must carry so an extractor can recognise it as a failure. */
const ERROR_WORDS =
  /error|fail|exception|refused|denied|timeout|timed out|killed|exit (code|status)|fatal|panic|rejected|invalid|unable|cannot|can't|not found|abort|lost|missing|crash|declined|exceeded|exhausted|\b[45]\d\d\b|warn|problem|not allowed|no such|could not|\berr\b|diverged|nan\b|alert|blocked|gap|discard/i;

/**
 * Proves the pitfalls are distinguishable: every key of a pitfall occurs in no text outside that pitfall (templates of
 * other pitfalls, plain tasks, steps, chatter, slot values), every symptom, hint and fix variant classifies back to its
 * own pitfall (fixes with fix=true; symptoms, diagnoses and tasks with fix=false), each wording has a symptom key of its
 * own, symptoms read as errors, every pitfall has 3+ wordings, and the first-symptom overlap stays at or below 0.2.
 * Returns a list of problems (empty when sound).
 */
export function checkVocabulary() {
  const problems = [];
  const pitfallTexts = (p) => p.wordings.flatMap((wd) => [...wd.tasks.map((t) => (Array.isArray(t) ? t[0] : t)), ...wd.symptoms, ...wd.rationale, ...wd.hints, ...wd.fixes, ...wd.results, ...wd.failedFix]);
  const familyTexts = (fam) => [
    fam.name,
    ...fam.tasks.map((t) => (Array.isArray(t) ? t[0] : t)),
    ...fam.tasks.flatMap((t) => (Array.isArray(t) ? Object.values(t[1]) : [])),
    ...fam.steps.flatMap(([name, calls, observations]) => [name, ...calls, ...observations]),
    ...fam.chatter,
    ...Object.values(fam.slots).flat(),
  ];
  const shared = [...GENERIC_CHATTER, ...NAMES, ...FAMILIES.flatMap(familyTexts)];
  const ids = new Set();
  for (const p of PITFALLS) {
    if (ids.has(p.id)) problems.push(`${p.id}: duplicate pitfall id`);
    ids.add(p.id);
    const family = FAMILIES.find((fam) => fam.id === p.family);
    if (!family.steps.some(([name]) => name === p.at)) problems.push(`${p.id}: step ${p.at} not in family ${family.id}`);
    if (p.wordings.length < 3) problems.push(`${p.id}: only ${p.wordings.length} wordings`);
    const others = [...shared, ...PITFALLS.filter((q) => q !== p).flatMap(pitfallTexts)];
    for (const key of [...p.symptomKeys, ...p.fixKeys]) {
      const re = keyPattern(key);
      const clash = others.find((text) => re.test(text.toLowerCase()));
      if (clash) problems.push(`${p.id}: key "${key}" also occurs in "${clash}"`);
    }
    const symptomRes = p.symptomKeys.map((key) => [key, keyPattern(key)]);
    for (const [k, wd] of p.wordings.entries()) {
      for (const field of WORDING_FIELDS) if (!wd[field].length) problems.push(`${p.id}#${k}: no ${field}`);
      const own = symptomRes.filter(([, re]) => wd.symptoms.some((s) => re.test(s.toLowerCase())) && p.wordings.every((other, j) => j === k || !other.symptoms.some((s) => re.test(s.toLowerCase()))));
      if (!own.length) problems.push(`${p.id}#${k}: no symptom key of its own`);
      for (const text of wd.symptoms) {
        const c = classify(text);
        if (c.pitfall !== p.id || c.fix) problems.push(`${p.id}#${k}: symptom "${text}" classified as ${c.pitfall} (fix ${c.fix})`);
        if (!ERROR_WORDS.test(text)) problems.push(`${p.id}#${k}: symptom "${text}" does not read as an error`);
      }
      for (const text of wd.fixes) {
        const c = classify(text);
        if (c.pitfall !== p.id || !c.fix) problems.push(`${p.id}#${k}: fix "${text}" classified as ${c.pitfall} (fix ${c.fix})`);
      }
      for (const text of wd.hints) {
        const c = classify(text);
        if (c.pitfall !== p.id) problems.push(`${p.id}#${k}: hint "${text}" classified as ${c.pitfall}`);
      }
      for (const text of [...wd.rationale, ...wd.tasks.map((t) => (Array.isArray(t) ? t[0] : t))]) {
        if (classify(text).fix) problems.push(`${p.id}#${k}: "${text}" names the fix`);
      }
    }
  }
  const overlap = overlapReport();
  if (overlap.mean_first_symptom_jaccard > 0.2) problems.push(`mean first-symptom Jaccard ${overlap.mean_first_symptom_jaccard} exceeds 0.2`);
  return problems;
}
