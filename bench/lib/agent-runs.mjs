// Seeded synthetic agent runs for the learning benchmark: task families whose recurring pitfalls show up in the traces
// as a symptom, a failed step and the fix that worked. Same seed and index, same run; no Math.random.
//
// A family (e.g. deploying a service) has plain tasks, routine steps (a tool call and its observation each), chatter,
// and 1–3 pitfalls. The situation that provokes a pitfall is visible in the task (as in real work: a bulk re-import is
// what meets the rate limit), so a memory could tell before the run which lesson applies; plain tasks of the same
// family meet no pitfall. Each pitfall has its own vocabulary: symptom keys and fix keys that appear in no other text
// of the generator (`checkVocabulary` proves it), so `classify` can tell which pitfall a lesson or trace is about and
// whether it carries the fix.
import { rng } from "./corpus.mjs";
import { fill, int, keyPattern, pick, pitfallIndex, playSteps } from "./agent-run-kit.mjs";

const NAMES = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"];

/** Slots every family may use; each is drawn once per run. */
const GENERIC_SLOTS = {
  ver: (r) => `v${1 + int(r, 4)}.${int(r, 20)}.${int(r, 10)}`,
  k: (r) => String(100 + int(r, 9000)),
  months: (r) => String([6, 12, 18, 24][int(r, 4)]),
  quarter: (r) => `Q${1 + int(r, 4)}`,
  date: (r) => `2024-${String(1 + int(r, 12)).padStart(2, "0")}-${String(1 + int(r, 28)).padStart(2, "0")}`,
  ticket: (r) => `OPS-${1000 + int(r, 9000)}`,
  user: (r) => NAMES[int(r, NAMES.length)],
  min: (r) => String(2 + int(r, 40)),
  gb: (r) => String(2 + int(r, 28)),
};

const GENERIC_CHATTER = [
  "note: waiting for a free CI runner to pick up the job",
  "note: checked the team channel, no open incidents",
  "note: re-read the task description to confirm the scope",
  "note: {min} minutes elapsed so far",
  "note: nothing unusual in the logs yet",
  "note: {user} asked for a status update; replied that the work is in progress",
  "note: saved intermediate results under /tmp/work-{k}",
];

/**
 * The task families. Task entries are a template or [template, slot overrides]; `{slot}` is replaced by the run's
 * value. A step is [name, call templates, observation templates]; a pitfall strikes at the step named `at`.
 */
export const FAMILIES = [
  {
    id: "deploy",
    name: "deploying a service",
    slots: { svc: ["payments", "checkout", "search-api", "notifications", "ledger"], env: ["staging", "production", "eu-west-1", "us-east-2"], ns: ["team-growth", "team-risk", "partner-portal"] },
    tasks: ["Deploy the {svc} service to {env}", "Roll out {svc} {ver} on the {env} cluster", "Ship the latest {svc} build to {env} and confirm it is healthy"],
    steps: [
      ["render_manifests", ["helm template {svc} charts/{svc} --set image.tag={ver}"], ["rendered 7 manifests for {svc}", "helm template finished: Deployment, Service, HPA and ConfigMap for {svc}"]],
      ["apply", ["kubectl apply -f out/{svc}/ --context {env}"], ["deployment.apps/{svc} configured", "service/{svc} unchanged, deployment.apps/{svc} configured"]],
      ["wait_rollout", ["kubectl rollout status deploy/{svc} --timeout=300s"], ["deployment \"{svc}\" successfully rolled out", "rollout complete: 4 of 4 updated replicas are available"]],
      ["smoke_test", ["curl -fsS https://{svc}.{env}.internal/healthz"], ["{\"status\":\"ok\",\"version\":\"{ver}\"}", "200 OK in 41 ms"]],
    ],
    chatter: ["note: change freeze starts Friday 18:00 according to #deploys", "note: the Grafana dashboard for {svc} looks normal", "note: told on-call that the {svc} rollout is starting"],
    pitfalls: [
      {
        id: "deploy-slow-start",
        at: "wait_rollout",
        tasks: ["Deploy {svc} to {env} now that it preloads the product catalogue cache at startup", "Roll out the {svc} build that warms its in-memory cache before serving"],
        symptoms: [
          "Readiness probe failed: HTTP probe failed with statuscode: 503 (pod {svc}-7d9f-x2k4p)",
          "Warning Unhealthy: readiness probe failed; 0/4 pods ready after 120s, rollout stuck",
          "error: deployment \"{svc}\" exceeded its progress deadline, pods never became Ready (readiness probe 503)",
        ],
        rationale: ["Rollout stalled: the pods start slower than the readiness probe allows, so they never turn Ready", "The readiness probe gave up before the cache warm-up finished and the deployment exceeded its progress deadline"],
        hints: ["For services with a slow warm-up, add a startupProbe and raise initialDelaySeconds before deploying", "Give slow-starting pods a startupProbe (failureThreshold 30) so the readiness probe does not fail during warm-up"],
        fixes: ["Added a startupProbe (failureThreshold 30, periodSeconds 10) and raised the readiness initialDelaySeconds to 45, then re-applied", "Patched the deployment: startupProbe on /healthz with a 5-minute budget and initialDelaySeconds 45"],
        results: ["deployment \"{svc}\" successfully rolled out with the startupProbe", "4/4 pods Ready; the warm-up finished inside the startupProbe window"],
        failedFix: ["still 0/4 Ready with the startupProbe; the pods crash during warm-up"],
        symptomKeys: ["readiness probe", "progress deadline"],
        fixKeys: ["startupprobe", "initialdelayseconds"],
      },
      {
        id: "deploy-image-pull",
        at: "wait_rollout",
        tasks: ["Deploy {svc} into the new {ns} namespace for the first time", "Stand up {svc} in the freshly created {ns} namespace on {env}"],
        symptoms: [
          "Failed to pull image \"registry.internal/{svc}:{ver}\": pull access denied, repository does not exist or may require authorization",
          "pod {svc}-5c8b-qq7w2 status ImagePullBackOff",
          "ErrImagePull: 401 Unauthorized from registry.internal for {svc}:{ver}",
        ],
        rationale: ["Pods could not pull the image: the new namespace has no registry credentials", "ImagePullBackOff: {ns} lacks the credentials for the private registry"],
        hints: ["When deploying into a new namespace, create the registry pull secret first and attach it to the service account", "New namespaces need the regcred imagePullSecrets entry before any deploy from the private registry"],
        fixes: ["Created the regcred docker-registry secret in {ns} and added it to imagePullSecrets of the default service account", "kubectl create secret docker-registry regcred -n {ns} and patched the service account with imagePullSecrets: regcred"],
        results: ["image pulled with regcred, 3/3 pods running in {ns}", "the pods started after adding the pull secret; rollout finished"],
        failedFix: ["still ImagePullBackOff with regcred attached; the registry keeps answering 401"],
        symptomKeys: ["imagepullbackoff", "errimagepull", "pull access denied"],
        fixKeys: ["regcred", "imagepullsecrets", "pull secret"],
      },
    ],
  },
  {
    id: "db-migration",
    name: "running a database migration",
    slots: { table: ["orders", "events", "sessions", "payments_ledger", "audit_log"], column: ["customer_ref", "region_code", "tax_id", "archived_at"], db: ["orders-db", "core-pg"] },
    tasks: ["Apply the pending schema migrations to {db}", "Run migration {ver} against the {db} staging replica", "Add an index on {table}.{column} in {db} staging"],
    steps: [
      ["check_pending", ["alembic -c {db}.ini current && alembic heads"], ["current revision 3f2a1c, 2 migrations pending", "1 migration pending on {db}"]],
      ["schema_dump", ["pg_dump --schema-only {db} > /tmp/{db}-schema.sql"], ["schema dump written (412 KB)"]],
      ["migrate", ["alembic -c {db}.ini upgrade head"], ["Running upgrade 3f2a1c -> 9b7e44 ... done", "upgrade finished in 2.1 s"]],
      ["verify", ["psql {db} -c '\\d {table}'"], ["Table public.{table}: 14 columns, column {column} present"]],
    ],
    chatter: ["note: the DBA channel says replication lag on {db} is under 1 s", "note: migration window approved in {ticket}", "note: nightly vacuum on {db} finished at 03:12"],
    pitfalls: [
      {
        id: "migration-lock-timeout",
        at: "migrate",
        tasks: ["Add the {column} column to the busy {table} table on the {db} primary during business hours", "Alter the hot {table} table on {db} while traffic is live"],
        symptoms: [
          "ERROR: canceling statement due to lock timeout (ALTER TABLE {table} ADD COLUMN {column})",
          "psycopg2.errors.LockNotAvailable: could not obtain lock on relation \"{table}\"",
          "migration aborted: lock timeout while waiting for AccessExclusiveLock on {table}",
        ],
        rationale: ["The ALTER TABLE could not get its exclusive lock on {table} because long-running transactions held it", "Lock contention on {table}: the migration waited for AccessExclusiveLock and hit the lock timeout"],
        hints: ["On busy tables run DDL with a short lock_timeout in a retry loop, and build indexes CONCURRENTLY", "Retry DDL on hot tables with SET lock_timeout = '3s' instead of waiting behind live transactions"],
        fixes: ["Re-ran the migration with SET lock_timeout = '3s' inside a retry loop (5 attempts, jittered sleep) and created the index CONCURRENTLY", "Wrapped the ALTER in a lock_timeout retry loop and split the index build out as CREATE INDEX CONCURRENTLY"],
        results: ["ALTER TABLE succeeded on attempt 3; the index was built concurrently without blocking writes", "migration applied with lock_timeout retries; no lock waits above 3 s"],
        failedFix: ["still failing after 5 lock_timeout retries; the lock is never free"],
        symptomKeys: ["lock timeout", "locknotavailable", "accessexclusivelock", "obtain lock"],
        fixKeys: ["lock_timeout", "concurrently", "retry loop"],
      },
      {
        id: "migration-not-null",
        at: "migrate",
        tasks: ["Make {table}.{column} mandatory (NOT NULL) in {db}", "Add a required {column} column to {table} on {db}"],
        symptoms: [
          "ERROR: column \"{column}\" of relation \"{table}\" contains null values",
          "IntegrityError: column {column} contains null values; cannot add NOT NULL constraint",
          "migration failed: existing rows of {table} have no {column} value (NOT NULL constraint violated)",
        ],
        rationale: ["The NOT NULL constraint failed because existing rows have no value for {column}", "Existing {table} rows violate the new NOT NULL constraint on {column}"],
        hints: ["Add required columns in three steps: nullable column, batched backfill, then SET NOT NULL", "Backfill existing rows before adding a NOT NULL constraint"],
        fixes: ["Split the migration: added {column} as nullable, backfilled it in batches of 10000 rows, then ran ALTER COLUMN {column} SET NOT NULL", "Backfilled {column} with a default in 10000-row batches before setting the NOT NULL constraint"],
        results: ["all {table} rows backfilled; NOT NULL constraint added", "constraint validated after the backfill"],
        failedFix: ["the backfill finished but SET NOT NULL still reports null values in {column}"],
        symptomKeys: ["contains null values", "not null constraint"],
        fixKeys: ["backfill", "nullable"],
      },
    ],
  },
  {
    id: "http-api",
    name: "calling a rate-limited API",
    slots: { api: ["billing API", "CRM API"], resource: ["invoices", "contacts"], acct: ["ACC-20931", "ACC-55102", "ACC-70418"] },
    tasks: [
      ["Fetch yesterday's invoice totals from the billing API", { api: "billing API", resource: "invoices" }],
      ["Look up the account {acct} in the CRM API", { api: "CRM API", resource: "contacts" }],
      ["Pull the current plan of customer {acct} from the billing API", { api: "billing API", resource: "invoices" }],
    ],
    steps: [
      ["auth", ["GET /v1/me on the {api} with the service token"], ["200 OK, scopes: {resource}:read", "token valid for 55 more minutes"]],
      ["list", ["GET /v1/{resource}?created_after={date}&page_size=100 on the {api}"], ["200 OK, 100 {resource}, has_more=true", "200 OK, 37 {resource}"]],
      ["fetch", ["GET /v1/{resource}/{acct}/details on the {api}"], ["200 OK, 12 line items", "200 OK in 88 ms"]],
      ["store", ["INSERT INTO warehouse.{resource} ... ({k} rows)"], ["{k} rows upserted into warehouse.{resource}"]],
    ],
    chatter: ["note: the {api} status page reports all systems operational", "note: the warehouse load job is scheduled for 02:00", "note: {user} owns the {api} integration"],
    pitfalls: [
      {
        id: "api-rate-limit",
        at: "fetch",
        tasks: [
          ["Re-import {months} months of invoices from the billing API into the warehouse", { api: "billing API", resource: "invoices" }],
          ["Bulk-sync every invoice of {quarter} from the billing API for the audit", { api: "billing API", resource: "invoices" }],
        ],
        symptoms: [
          "HTTP 429 Too Many Requests from api.billing.example.com (Retry-After: 30)",
          "billing API: rate limit exceeded, 429 on request 1181 of 4200",
          "got 429 Too Many Requests after about 1000 calls per minute; response header Retry-After: 12",
        ],
        rationale: ["The bulk sync hammered the billing API and got throttled with 429 Too Many Requests", "Rate limited by the billing API (429) after about a thousand requests a minute"],
        hints: ["Pace bulk billing API calls: back off exponentially and honour the Retry-After header", "Never retry a 429 at once; wait for Retry-After and use exponential backoff"],
        fixes: ["Added exponential backoff with jitter that honours the Retry-After header, capped at 8 requests per second", "Throttled the client to 8 req/s and, on 429, slept for Retry-After before retrying with exponential backoff"],
        results: ["sync completed: 4200 invoices, no throttling after the exponential backoff change", "all pages fetched; the client waited for Retry-After 3 times"],
        failedFix: ["still 429 on every request with exponential backoff and Retry-After; the key seems blocked"],
        symptomKeys: ["429", "too many requests", "rate limit"],
        fixKeys: ["retry-after", "exponential backoff", "back off exponentially"],
      },
      {
        id: "api-cursor-expired",
        at: "list",
        tasks: [
          ["Export every contact from the CRM API to a Parquet file", { api: "CRM API", resource: "contacts" }],
          ["Dump all {k} CRM accounts through the paginated CRM API", { api: "CRM API", resource: "contacts" }],
        ],
        symptoms: [
          "410 Gone: pagination cursor expired (cursor older than 10 minutes)",
          "CRM API error invalid_cursor: the next_page token is no longer valid",
          "export stopped at page 311: cursor expired",
        ],
        rationale: ["The pagination cursor expired because processing each page took too long", "Paging through the CRM export took over 10 minutes and the cursor went stale"],
        hints: ["For long CRM exports, download pages quickly with page_size 200 and save a checkpoint of the last id so the export can resume", "Do not process inside the paging loop; store pages first and keep a checkpoint"],
        fixes: ["Switched to keyset resumption: saved the last contact id as a checkpoint, used page_size 200 and wrote pages to disk before processing", "Restarted from the saved checkpoint id with page_size 200, processing pages after download"],
        results: ["export complete: {k} records via keyset paging", "resumed from the checkpoint and finished all pages"],
        failedFix: ["the cursor still expires after 2 pages with page_size 200 and checkpoints"],
        symptomKeys: ["cursor", "invalid_cursor", "410 gone"],
        fixKeys: ["page_size 200", "checkpoint", "keyset"],
      },
    ],
  },
  {
    id: "csv",
    name: "parsing CSV exports",
    slots: { file: ["customers_2023.csv", "orders_export.csv", "accounts_full.csv"] },
    tasks: ["Parse the weekly {file} export and load it into the staging table", "Convert {file} to Parquet for the analysts", "Validate the columns of the {file} export"],
    steps: [
      ["download", ["aws s3 cp s3://exports/{file} /data/"], ["download: s3://exports/{file} to /data/{file} (18.2 MiB)"]],
      ["peek", ["head -n 3 /data/{file}"], ["id,name,email,created_at,country,segment,owner,status,amount"]],
      ["parse", ["python load_table.py /data/{file}"], ["parsed {k} rows, 9 columns", "parsed {k} rows; schema matches"]],
      ["load", ["COPY staging.import FROM '/data/{file}.clean' WITH HEADER"], ["COPY {k}"]],
    ],
    chatter: ["note: the analysts want the table by noon", "note: the {file} export landed 20 minutes late", "note: staging.import was truncated before the load"],
    pitfalls: [
      {
        id: "csv-encoding",
        at: "parse",
        tasks: ["Import the legacy ERP customer export {file} from the old Windows system", "Load the customer list exported from the 2009 ERP into staging"],
        symptoms: [
          "UnicodeDecodeError: 'utf-8' codec can't decode byte 0xe9 in position 1432: invalid continuation byte",
          "parse failed at row 212: invalid UTF-8 sequence (byte 0xe9 in 'Ren\\xe9')",
          "'utf-8' codec can't decode byte 0xfc in position 88",
        ],
        rationale: ["The ERP export is not UTF-8; accented names broke the decoder", "Decoding failed on accented characters: the file uses a Windows code page"],
        hints: ["Legacy ERP exports are cp1252: decode as windows-1252 and re-encode to UTF-8 before parsing", "Detect the encoding first (chardet) and convert Windows-1252 exports to UTF-8"],
        fixes: ["Re-read the file with encoding='cp1252' and wrote a UTF-8 copy with iconv -f WINDOWS-1252 -t UTF-8", "Detected windows-1252 with chardet, converted to UTF-8 with iconv, then parsed"],
        results: ["parsed {k} rows; names like 'René' intact after iconv", "the UTF-8 copy parsed cleanly"],
        failedFix: ["still garbled after the cp1252 conversion: mojibake in every accented name"],
        symptomKeys: ["unicodedecodeerror", "codec can't decode", "utf-8 sequence", "0xe9"],
        fixKeys: ["cp1252", "windows-1252", "iconv", "chardet"],
      },
      {
        id: "csv-locale",
        at: "parse",
        tasks: ["Parse the German subsidiary's monthly sales export {file}", "Load the revenue figures exported by the Munich office"],
        symptoms: [
          "ValueError: could not convert string to float: '1.234,56'",
          "all rows parsed into a single column: header 'Datum;Kunde;Umsatz'",
          "amount column has 0 numeric values; sample '12.480,00'",
        ],
        rationale: ["The export uses semicolons and decimal commas (German locale), so the default parser mis-split it", "European number format: ',' is the decimal separator and ';' the delimiter"],
        hints: ["For exports from German offices read with sep=';' and decimal=',' (thousands '.')", "Check the delimiter and decimal separator of European exports before parsing"],
        fixes: ["Parsed with pandas.read_csv(sep=';', decimal=',', thousands='.')", "Set the delimiter to ';' and the decimal separator to ',' in the reader"],
        results: ["{k} rows, Umsatz parsed as numbers (sum 1,482,113.20)", "all amounts numeric with sep=';' and decimal=','"],
        failedFix: ["still one column with sep=';'; the file mixes delimiters"],
        symptomKeys: ["could not convert string to float", "single column", "datum;kunde", "12.480,00"],
        fixKeys: ["decimal=','", "sep=';'", "decimal separator"],
      },
      {
        id: "csv-multiline",
        at: "parse",
        tasks: ["Load the support-ticket export {file} including the free-text comments", "Import the helpdesk tickets with their customer comments into staging"],
        symptoms: ["Error: row 4812 has 3 fields, expected 9", "csv.Error: unterminated quoted field at line 9077", "line-based split produced 1,204 broken rows (quoted newlines in the comment column)"],
        rationale: ["Comments contain line breaks inside quotes; splitting on newlines broke the rows", "Quoted fields span several lines and the line-by-line split cut them"],
        hints: ["Never split CSV text on newlines: use a quote-aware reader (csv module, newline='')", "Free-text columns contain embedded newlines; parse them with csv.reader"],
        fixes: ["Replaced the split('\\n') loop with csv.reader over open(path, newline='')", "Used a quote-aware reader that keeps embedded newlines inside quoted fields"],
        results: ["parsed {k} tickets with the quote-aware reader, 9 fields each", "no broken rows left"],
        failedFix: ["still broken rows with csv.reader; quotes are not escaped in the export"],
        symptomKeys: ["unterminated quoted field", "expected 9", "quoted newlines", "embedded newlines"],
        fixKeys: ["quote-aware", "newline=''", "csv.reader"],
      },
    ],
  },
  {
    id: "docker",
    name: "building a docker image",
    slots: { img: ["ml-scorer", "api-gateway", "report-worker"] },
    tasks: ["Build and push the {img} image tagged {ver}", "Rebuild {img} with the latest base image", "Build {img} for the nightly release"],
    steps: [
      ["pull_base", ["docker pull python:3.12-slim"], ["Status: Image is up to date for python:3.12-slim"]],
      ["build", ["docker build -t registry.internal/{img}:{ver} ."], ["Successfully built 4f1e2a9c", "=> exporting to image ... done"]],
      ["test_image", ["docker run --rm registry.internal/{img}:{ver} --selftest"], ["selftest passed (14 checks)"]],
      ["push", ["docker push registry.internal/{img}:{ver}"], ["{ver}: digest: sha256:9c1f04 size: 2418"]],
    ],
    chatter: ["note: the base image was updated yesterday", "note: the build host is shared with the nightly jobs", "note: {user} will review the Dockerfile change"],
    pitfalls: [
      {
        id: "docker-disk-full",
        at: "build",
        tasks: ["Build the {img} image with the 6 GB model weights baked in", "Build {img} including the full language-model bundle"],
        symptoms: ["failed to copy files: write /var/lib/docker/overlay2/l/x1: no space left on device", "ERROR: failed to solve: no space left on device", "df -h: /var/lib/docker 100% used, 0 bytes free"],
        rationale: ["The build ran out of disk: the model layers filled /var/lib/docker", "No space left on the build host's docker partition"],
        hints: ["Before building images with large model files, prune the builder cache and keep docker's data-root on the big volume", "Run docker builder prune and move the data-root to /mnt before large builds"],
        fixes: ["Ran docker builder prune -af (freed 41 GB) and moved docker's data-root to /mnt/docker", "Pruned the build cache with docker system prune -af and relocated the data-root to the large /mnt volume"],
        results: ["build finished; 58 GB free after the prune", "image built with 6.1 GB layers on the new data-root"],
        failedFix: ["still out of disk after the prune; the layer alone exceeds the volume"],
        symptomKeys: ["no space left on device", "0 bytes free", "100% used"],
        fixKeys: ["prune", "data-root"],
      },
      {
        id: "docker-platform",
        at: "test_image",
        tasks: ["Build {img} on the Apple Silicon arm64 runner for the x86 production cluster", "Build {img} on the M2 laptop and ship it to the amd64 nodes"],
        symptoms: ["exec /usr/local/bin/python: exec format error", "standard_init_linux.go:228: exec user process caused: exec format error", "WARNING: The requested image's platform (linux/arm64) does not match the detected host platform (linux/amd64)"],
        rationale: ["The image was built for arm64 and cannot run on the amd64 nodes", "Architecture mismatch: an arm64 image on an x86 host"],
        hints: ["When building on arm64 machines for x86 clusters, pass --platform linux/amd64 to docker buildx", "Always set the target platform explicitly (buildx --platform linux/amd64) on Apple Silicon"],
        fixes: ["Rebuilt with docker buildx build --platform linux/amd64 --push", "Used buildx with --platform linux/amd64 (QEMU emulation) and re-pushed"],
        results: ["selftest passed on the amd64 node after the buildx rebuild", "the manifest now lists linux/amd64"],
        failedFix: ["still failing after buildx --platform linux/amd64; the base image is arm-only"],
        symptomKeys: ["exec format error", "detected host platform"],
        fixKeys: ["--platform linux/amd64", "buildx"],
      },
    ],
  },
  {
    id: "smtp",
    name: "sending email via SMTP",
    slots: { report: ["weekly KPI report", "invoice reminders", "incident summary"] },
    tasks: ["Send the {report} to the finance team", "Email the {report} to the on-call list", "Mail the {report} PDF to the managers"],
    steps: [
      ["render", ["python render_report.py --out /tmp/report.pdf"], ["report.pdf written (412 KB, 6 pages)"]],
      ["connect", ["smtplib.SMTP('smtp.internal', 25)"], ["220 smtp.internal ESMTP ready"]],
      ["send", ["server.send_message(msg) to {k} recipients"], ["250 2.0.0 OK queued as 4B1C2", "250 OK"]],
      ["log", ["append the message id to sent_log.txt"], ["logged message id <{k}@mail>"]],
    ],
    chatter: ["note: the {report} template changed last week", "note: finance asked for the PDF before 9:00", "note: {user} is on the recipient list twice; deduplicated"],
    pitfalls: [
      {
        id: "smtp-starttls",
        at: "send",
        tasks: ["Send the {report} through the new Office 365 relay", "Move the {report} mail job to smtp.office365.com and send it"],
        symptoms: ["530 5.7.0 Must issue a STARTTLS command first", "smtplib.SMTPNotSupportedError: SMTP AUTH extension not supported by server", "535 5.7.3 Authentication unsuccessful: plain-text login refused on port 25"],
        rationale: ["The relay refuses authentication on an unencrypted connection", "Office 365 requires an encrypted session before login"],
        hints: ["Office 365 relay: connect on port 587 and call starttls() before login", "Use port 587 with STARTTLS for the O365 relay, never plain port 25"],
        fixes: ["Connected to smtp.office365.com:587, called starttls() then login()", "Switched to port 587 with STARTTLS and re-sent"],
        results: ["250 2.0.0 OK: message accepted by the relay on port 587", "sent after upgrading the session with starttls()"],
        failedFix: ["still 535 after starttls() on port 587; the account has SMTP AUTH disabled"],
        symptomKeys: ["must issue a starttls", "smtp auth extension", "5.7.3", "plain-text login"],
        fixKeys: ["starttls()", "port 587", "587"],
      },
      {
        id: "smtp-spf",
        at: "send",
        tasks: ["Email the {report} to our external partners at other companies", "Send the {report} to the customer contacts outside the company"],
        symptoms: ["550 5.7.1 Message rejected: SPF check failed for sender {user}@corp-mail.example", "bounce from partner MX: 550 5.7.26 unauthenticated email is not accepted (DMARC)", "delivery failed: recipient server classified the message as spoofed (SPF fail)"],
        rationale: ["External servers rejected the mail because the sender domain's SPF record does not include our relay", "The From address used a domain our relay is not authorised to send for"],
        hints: ["Send external mail from noreply@ on the verified domain listed in SPF, never from personal addresses", "For mail to outside recipients use the DKIM-signed noreply@ sender"],
        fixes: ["Changed the From to noreply@example.com (listed in SPF, DKIM-signed) and re-sent", "Re-sent from the verified noreply@ address with DKIM signing enabled"],
        results: ["250 accepted by all partner servers from noreply@", "no bounces after the sender change"],
        failedFix: ["still rejected by partners from noreply@; the DMARC policy fails"],
        symptomKeys: ["spf", "dmarc", "spoofed"],
        fixKeys: ["noreply@", "dkim"],
      },
    ],
  },
  {
    id: "oauth",
    name: "refreshing OAuth tokens",
    slots: { provider: ["Google Ads", "Salesforce", "HubSpot", "Xero"] },
    tasks: ["Refresh the {provider} access token and run the connector", "Check that the {provider} integration still authenticates", "Run the {provider} connector sync"],
    steps: [
      ["load_creds", ["vault read secret/integrations/{provider}"], ["client_id and refresh_token loaded"]],
      ["refresh", ["POST /oauth2/token grant_type=refresh_token for {provider}"], ["200 OK, access_token expires_in=3599"]],
      ["call_api", ["GET /api/v2/accounts on {provider} with the new access token"], ["200 OK, 14 accounts", "200 OK in 230 ms"]],
      ["save", ["vault write secret/integrations/{provider} access_token=..."], ["Success! Data written to secret/integrations/{provider}"]],
    ],
    chatter: ["note: the {provider} connector last ran at 02:00", "note: {user} changed the vault policies last month", "note: the access token lives one hour"],
    pitfalls: [
      {
        id: "oauth-rotation",
        at: "refresh",
        tasks: ["Refresh the {provider} OAuth token for the nightly sync job a second time today", "Re-run the {provider} token refresh that the nightly job already did"],
        symptoms: ["400 Bad Request: {\"error\":\"invalid_grant\",\"error_description\":\"Token has been expired or revoked.\"}", "invalid_grant: refresh token already used", "OAuth refresh failed: invalid_grant (refresh token reuse detected)"],
        rationale: ["The provider rotates refresh tokens; the job reused the old one that was already spent", "Refresh token reuse: the previous refresh returned a new refresh_token that was never stored"],
        hints: ["Refresh tokens rotate: persist the new refresh_token from every refresh response", "Always write back the rotated refresh_token after refreshing"],
        fixes: ["Re-authorised once and changed the job to store the rotated refresh_token returned by each refresh", "Saved the new refresh_token from the token response to vault after every refresh (token rotation)"],
        results: ["token refresh OK, rotated refresh_token persisted", "the nightly sync authenticated with the rotated token"],
        failedFix: ["still invalid_grant with the rotated refresh_token stored; the grant was revoked"],
        symptomKeys: ["invalid_grant", "expired or revoked", "reuse"],
        fixKeys: ["rotated refresh_token", "rotation", "rotate"],
      },
      {
        id: "oauth-clock-skew",
        at: "call_api",
        tasks: ["Refresh the {provider} tokens on the new on-prem build agent", "Run the {provider} connector from the freshly installed on-prem VM"],
        symptoms: ["401 Unauthorized: JWT not yet valid (iat is in the future)", "token rejected: nbf claim 1714032000 > now", "invalid_token: Token used before issued"],
        rationale: ["The VM's clock runs several minutes behind, so freshly issued tokens look like they come from the future", "Clock skew on the new host makes the iat/nbf checks fail"],
        hints: ["On new hosts check NTP sync first: skewed clocks break JWT iat/nbf validation", "Sync the clock with chronyc and allow a 60 s leeway for iat/nbf"],
        fixes: ["Ran chronyc makestep to fix the clock skew (4m12s behind) and enabled chronyd", "Synced the clock with NTP (chronyc makestep) and set a 60 s leeway in the JWT validator"],
        results: ["clock offset now 0.002 s after chronyc; API calls authenticate", "the 401s are gone after the NTP sync"],
        failedFix: ["still 'used before issued' after chronyc makestep; the provider's clock is off"],
        symptomKeys: ["not yet valid", "nbf claim", "used before issued", "clock skew"],
        fixKeys: ["chronyc", "ntp", "makestep", "leeway"],
      },
    ],
  },
  {
    id: "images",
    name: "resizing images",
    slots: { bucket: ["user-uploads", "catalogue-photos"], size: ["320", "640", "1280"] },
    tasks: ["Generate {size}px thumbnails for today's product photos", "Resize the catalogue images to {size}px width", "Create web previews of the new banner images"],
    steps: [
      ["list_images", ["aws s3 ls s3://{bucket}/incoming/"], ["{k} objects in s3://{bucket}/incoming/"]],
      ["resize", ["python resize.py --width {size} s3://{bucket}/incoming/"], ["resized {k} images", "resized {k} images in 48 s"]],
      ["upload", ["aws s3 sync out/ s3://{bucket}/thumbs/"], ["upload: {k} files to s3://{bucket}/thumbs/"]],
      ["invalidate", ["aws cloudfront create-invalidation --paths '/thumbs/*'"], ["Invalidation Status: InProgress"]],
    ],
    chatter: ["note: marketing needs the previews for the Monday newsletter", "note: s3://{bucket} has versioning enabled", "note: {user} uploaded a second batch at 11:40"],
    pitfalls: [
      {
        id: "image-oom",
        at: "resize",
        tasks: ["Generate thumbnails for the photographer's 48-megapixel TIFF uploads", "Resize the raw TIFF scans from the archive project"],
        symptoms: ["Killed (exit code 137): resize.py was OOM-killed while decoding a 48-megapixel TIFF", "MemoryError in PIL.Image.open(...).load() for scan_0042.tif", "dmesg: Out of memory: Killed process 8812 (python) total-vm:15.2GB"],
        rationale: ["Decoding huge TIFFs fully into memory with Pillow exhausted RAM", "The worker was OOM-killed on the large scans"],
        hints: ["For very large images stream with libvips (vipsthumbnail) instead of loading them whole in Pillow, and cap concurrency", "Use libvips for big TIFFs and limit the job to 2 concurrent workers"],
        fixes: ["Switched to vipsthumbnail (libvips streams the image) with 2 concurrent workers", "Replaced Pillow with pyvips thumbnail() and capped concurrency at 2"],
        results: ["all scans resized with libvips, peak RSS 410 MB", "no kills after the switch; 212 scans done"],
        failedFix: ["still OOM-killed with libvips; the files are corrupt"],
        symptomKeys: ["oom", "exit code 137", "memoryerror", "out of memory"],
        fixKeys: ["libvips", "vipsthumbnail", "pyvips"],
      },
      {
        id: "image-orientation",
        at: "resize",
        tasks: ["Resize the phone photos customers uploaded through the mobile app", "Make thumbnails of the smartphone pictures from the app's uploads"],
        symptoms: ["QA check: 38% of thumbnails are sideways (portrait photos shown landscape)", "customer report: my profile picture is turned on its side", "the thumbnail of IMG_4411.JPG is sideways although the original looks upright in the phone gallery"],
        rationale: ["The resizer ignored the EXIF Orientation tag that phones set", "Phone photos store their orientation in EXIF metadata, which the resizer dropped"],
        hints: ["Apply the EXIF orientation (ImageOps.exif_transpose) before resizing phone photos", "Always honour the EXIF Orientation tag when resizing camera images"],
        fixes: ["Called ImageOps.exif_transpose() on every image before thumbnail()", "Applied the EXIF Orientation with exif_transpose and stripped the tag afterwards"],
        results: ["QA check after exif_transpose: 0 sideways thumbnails", "portrait photos now upright"],
        failedFix: ["still sideways after exif_transpose; the app strips EXIF on upload"],
        symptomKeys: ["sideways", "on its side"],
        fixKeys: ["exif_transpose", "exif orientation"],
      },
    ],
  },
  {
    id: "ci",
    name: "running a test suite in CI",
    slots: { repo: ["web-app", "billing-service", "mobile-backend"], pkg: ["axios", "pg", "express", "typescript"] },
    tasks: ["Run the unit tests of {repo} before merging {ticket}", "Re-run the CI pipeline for {repo}", "Check that {repo} builds and its tests pass"],
    steps: [
      ["checkout", ["git clone --depth 1 git@github.com:corp/{repo}.git"], ["Cloning into '{repo}'... done"]],
      ["install", ["npm ci"], ["added 812 packages in 21s"]],
      ["test", ["npm test -- --runInBand"], ["Tests: 412 passed, 412 total", "Test Suites: 38 passed"]],
      ["report", ["upload junit.xml to the CI dashboard"], ["report uploaded for {repo}"]],
    ],
    chatter: ["note: the CI queue is long this morning", "note: {user} asked to merge {ticket} today", "note: coverage of {repo} is 81%"],
    pitfalls: [
      {
        id: "ci-port-conflict",
        at: "test",
        tasks: ["Run the integration test suite of {repo} with 4 parallel jobs", "Speed up {repo} CI by sharding the integration tests across parallel jobs"],
        symptoms: ["Error: listen EADDRINUSE: address already in use :::5432", "postgres container failed to start: port is already allocated", "integration tests: EADDRINUSE on 127.0.0.1:6379 in shard 3"],
        rationale: ["Parallel jobs all bind the same fixed ports for their test databases", "Two shards started services on the same port"],
        hints: ["In parallel CI jobs bind test services to port 0 (an ephemeral free port) and pass it via env", "Never hard-code service ports in sharded test runs; ask the OS for a free port"],
        fixes: ["Changed the test setup to listen on port 0 and pass the ephemeral port through DATABASE_URL", "Each shard now starts its containers on a random free port (port 0) instead of 5432"],
        results: ["4 shards green with ephemeral ports, 1,604 tests passed", "no conflicts left"],
        failedFix: ["still EADDRINUSE with port 0; a leftover process holds the socket"],
        symptomKeys: ["eaddrinuse", "address already in use", "already allocated"],
        fixKeys: ["port 0", "ephemeral", "free port"],
      },
      {
        id: "ci-lockfile",
        at: "install",
        tasks: ["Run CI for {repo} after bumping {pkg} in package.json", "Check the {repo} pipeline after upgrading {pkg} to the next major"],
        symptoms: ["npm ERR! `npm ci` can only install packages when your package.json and package-lock.json are in sync", "npm ERR! Missing: {pkg}@{ver} from lock file", "npm ci failed: lock file out of date with package.json"],
        rationale: ["package.json was bumped without updating package-lock.json, so npm ci refused", "The lock file was not regenerated after the dependency bump"],
        hints: ["After bumping a dependency run npm install to regenerate package-lock.json and commit it", "Commit the regenerated lock file together with every package.json change"],
        fixes: ["Ran npm install locally to regenerate package-lock.json and pushed the lock file", "Regenerated the lock file with npm install --package-lock-only and committed it"],
        results: ["npm ci: added 815 packages; tests passed", "pipeline green after committing the regenerated lock file"],
        failedFix: ["still out of sync after regenerating the lock file; the registry lacks the version"],
        symptomKeys: ["in sync", "from lock file", "out of date with package.json"],
        fixKeys: ["regenerate", "package-lock-only"],
      },
    ],
  },
  {
    id: "backup",
    name: "backing up a database to S3",
    slots: { db: ["orders-db", "analytics-pg", "crm-mysql"] },
    tasks: ["Back up the {db} database to S3", "Run the nightly dump of {db} and upload it", "Copy the latest {db} snapshot to the backup bucket"],
    steps: [
      ["dump", ["pg_dump -Fc {db} > /backups/{db}.dump"], ["dump written ({gb} GB)"]],
      ["checksum", ["sha256sum /backups/{db}.dump"], ["9f2c61ab  /backups/{db}.dump"]],
      ["upload", ["aws s3api put-object --bucket corp-backups --key {db}/{date}.dump --body /backups/{db}.dump"], ["ETag: \"8a7f21\"", "upload finished in 3m10s"]],
      ["verify", ["aws s3api head-object --bucket corp-backups --key {db}/{date}.dump"], ["ContentLength matches the local dump"]],
    ],
    chatter: ["note: the retention policy keeps 35 daily dumps", "note: {user} restored from last week's dump successfully", "note: the dump of {db} grows about 2% a week"],
    pitfalls: [
      {
        id: "s3-object-size",
        at: "upload",
        tasks: ["Upload the full 40 GB {db} dump to S3", "Back up the complete {db} database (over 30 GB) to the backup bucket"],
        symptoms: ["An error occurred (EntityTooLarge) when calling the PutObject operation: Your proposed upload exceeds the maximum allowed size", "PutObject failed: EntityTooLarge (5 GB single-request limit)", "upload aborted: object of 41.3 GB exceeds the single PUT maximum"],
        rationale: ["A single PutObject request is limited to 5 GB and the dump is far larger", "The upload used one PUT request for a 40 GB file"],
        hints: ["Upload files over 5 GB with a multipart upload (aws s3 cp does it automatically)", "Use multipart uploads with 512 MB parts for large dumps"],
        fixes: ["Switched to aws s3 cp, which does a multipart upload, with multipart_chunksize 512MB", "Used a multipart upload (512 MB parts, 8 in parallel)"],
        results: ["multipart upload complete: 83 parts", "upload finished in 6m40s"],
        failedFix: ["still failing with multipart; the parts time out"],
        symptomKeys: ["entitytoolarge", "maximum allowed size", "single put"],
        fixKeys: ["multipart"],
      },
      {
        id: "s3-kms",
        at: "upload",
        tasks: ["Back up {db} to the new SSE-KMS encrypted bucket", "Send the {db} dumps to the KMS-encrypted compliance bucket"],
        symptoms: ["An error occurred (AccessDenied) when calling the PutObject operation: assumed-role/backup-role is not authorized to perform: kms:GenerateDataKey", "AccessDenied: kms:GenerateDataKey on key alias/compliance-backups", "upload failed: KMS.AccessDeniedException"],
        rationale: ["The backup role may write to the bucket but not use its KMS key", "Encrypting with the bucket's KMS key needs key permissions the role lacks"],
        hints: ["For SSE-KMS buckets grant the writer kms:GenerateDataKey and kms:Decrypt in the key policy", "Check the KMS key policy, not just the bucket policy, when uploads are denied"],
        fixes: ["Added kms:GenerateDataKey and kms:Decrypt on alias/compliance-backups to the backup-role key policy", "Granted the backup role GenerateDataKey and kms:Decrypt in the KMS key policy and retried"],
        results: ["upload complete, object encrypted with aws:kms", "PutObject OK with SSE-KMS"],
        failedFix: ["still AccessDenied after the KMS grant; an SCP blocks the key"],
        symptomKeys: ["accessdenied", "not authorized to perform"],
        fixKeys: ["kms:decrypt", "key policy"],
      },
    ],
  },
];

export const PITFALLS = FAMILIES.flatMap((family) => family.pitfalls.map((p) => ({ ...p, family: family.id })));
export const { pitfallById, classify } = pitfallIndex(PITFALLS);

/** A run's own seed from the bench seed and its index: run i is the same whatever the run count. */
function runSeed(seed, index) {
  let h = (seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b) >>> 0;
  return (h ^ (h >>> 13)) >>> 0;
}

/** Draws the run's slot values: the family's, the generic ones, then the chosen task's overrides. */
function drawSlots(random, family, overrides) {
  const slots = {};
  for (const [name, make] of Object.entries(GENERIC_SLOTS)) slots[name] = make(random);
  for (const [name, values] of Object.entries(family.slots)) slots[name] = pick(random, values);
  return Object.assign(slots, overrides);
}

/**
 * Builds one run. `pitfall` is a pitfall id or null; `fixFails` makes the fix not work (the run then fails at that
 * step). Items: { text, step_id, kind } with kind task | plan | call | observation | chatter | symptom | diagnosis |
 * fix | retry | fix_result | failed_fix | summary. Steps: the step outcomes to record, in order.
 */
function buildRun(random, family, pitfallId, { fixFails = false } = {}) {
  const pitfall = pitfallId ? family.pitfalls.find((p) => p.id === pitfallId) : null;
  const entry = pick(random, pitfall ? pitfall.tasks : family.tasks);
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
  playSteps({
    random,
    family,
    task,
    pitfall,
    source: pitfall,
    symptomsOf: () => {
      const symptoms = [...pitfall.symptoms];
      const first = symptoms.splice(int(random, symptoms.length), 1)[0];
      return random() < 0.4 ? [first, pick(random, symptoms)] : [first];
    },
    f,
    push,
    steps,
    chatter,
    fixFails,
  });
  return { family: family.id, pitfall: pitfall ? pitfall.id : null, task, items, steps };
}

/**
 * `count` runs from `seed`: each picks a family uniformly, then, with probability `pitfallShare`, one of its pitfalls
 * uniformly (its task then shows the pitfall's situation), else a plain task. Run i depends on (seed, i) only.
 */
export function generateRuns({ seed = 7, count = 120, pitfallShare = 0.7 } = {}) {
  return Array.from({ length: count }, (_, index) => {
    const random = rng(runSeed(seed, index));
    const family = pick(random, FAMILIES);
    const pitfall = random() < pitfallShare ? pick(random, family.pitfalls).id : null;
    return { index, id: `r${String(index).padStart(3, "0")}`, ...buildRun(random, family, pitfall) };
  });
}

/** A run that meets `pitfallId` (its index names a distinct stream of the seed); `fixFails` as in buildRun. */
export function pitfallRun(seed, index, pitfallId, { fixFails = false } = {}) {
  const random = rng(runSeed(seed ^ 0x5bd1e995, index));
  const pitfall = pitfallById(pitfallId);
  const family = FAMILIES.find((fam) => fam.id === pitfall.family);
  return { index, id: `${fixFails ? "fail" : "extra"}-${pitfallId}-${index}`, ...buildRun(random, family, pitfallId, { fixFails }) };
}

/**
 * A long run of exactly `size` trace items for reflect latency: one family's steps repeated over batches (with
 * chatter), one pitfall met half-way, step outcomes one per batch plus the failed and the retried step.
 */
export function reflectRun(seed, index, size = 200) {
  const random = rng(runSeed(seed ^ 0x27d4eb2f, index));
  const family = FAMILIES[index % FAMILIES.length];
  const pitfall = family.pitfalls[Math.floor(index / FAMILIES.length) % family.pitfalls.length];
  const core = buildRun(random, family, pitfall.id);
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

/**
 * Proves the pitfalls are distinguishable: every key of a pitfall occurs in no text outside that pitfall (templates of
 * other pitfalls, plain tasks, steps, chatter, slot values), every symptom and fix variant matches its own pitfall's
 * keys, and `classify` maps each of them back to it. Returns a list of problems (empty when sound).
 */
export function checkVocabulary() {
  const problems = [];
  const pitfallTexts = (p) => [...p.tasks.map((t) => (Array.isArray(t) ? t[0] : t)), ...p.symptoms, ...p.rationale, ...p.hints, ...p.fixes, ...p.results, ...p.failedFix];
  const familyTexts = (fam) => [
    ...fam.tasks.map((t) => (Array.isArray(t) ? t[0] : t)),
    ...fam.tasks.flatMap((t) => (Array.isArray(t) ? Object.values(t[1]) : [])),
    ...fam.steps.flatMap(([name, calls, observations]) => [name, ...calls, ...observations]),
    ...fam.chatter,
    ...Object.values(fam.slots).flat(),
  ];
  const shared = [...GENERIC_CHATTER, ...NAMES, ...FAMILIES.flatMap(familyTexts)];
  for (const p of PITFALLS) {
    const others = [...shared, ...PITFALLS.filter((q) => q !== p).flatMap(pitfallTexts)];
    for (const key of [...p.symptomKeys, ...p.fixKeys]) {
      const re = keyPattern(key);
      const clash = others.find((text) => re.test(text.toLowerCase()));
      if (clash) problems.push(`${p.id}: key "${key}" also occurs in "${clash}"`);
    }
    for (const text of p.symptoms) if (classify(text).pitfall !== p.id) problems.push(`${p.id}: symptom "${text}" classified as ${classify(text).pitfall}`);
    for (const text of p.fixes) {
      const c = classify(text);
      if (c.pitfall !== p.id || !c.fix) problems.push(`${p.id}: fix "${text}" classified as ${c.pitfall} (fix ${c.fix})`);
    }
    for (const text of p.hints) if (classify(text).pitfall !== p.id) problems.push(`${p.id}: hint "${text}" classified as ${classify(text).pitfall}`);
  }
  return problems;
}
