"""What each environment variable means, for the generated configuration reference (portal.configuration_docs).

Names and defaults come from the code; only the meaning (and, where the code's default is an expression, a
readable default) is written here, and only here: portal/settings/ says why a setting is as it is, not what it
means. A variable the code reads but this file does not describe fails the tests.
"""
from __future__ import annotations

# (key, title, introduction), in page order.
SECTIONS = [
    ("core", "Core", "The database, the broker and cache, and Django's own switches."),
    ("security", "Production security", "Only read when `DEBUG=false` (see "
     "[Deployment](deployment.md#production-settings))."),
    ("api", "API and web", "Limits of the REST API and the sign-in page."),
    ("celery", "Background work and schedules", "Celery and beat: how often the periodic tasks run, and how "
     "lost work is found again (see [Provisioning](provisioning.md#jobs-retries-and-teardown))."),
    ("kube", "Kubernetes and provisioning", "How the portal talks to clusters and labels what it creates."),
    ("live", "Inventory and MIG plans", "See [Inventory and capacity](inventory.md) and "
     "[MIG planning](mig-planning.md)."),
    ("reconcile", "Status reconciliation and stalled gangs", "See [Provisioning](provisioning.md#status-"
     "reconciliation) and [Gang scheduling](gang-scheduling.md)."),
    ("notify", "Notifications and e-mail", "Stalled-gang notices by e-mail and webhook "
     "(see [Gang scheduling](gang-scheduling.md#notices))."),
    ("chargeback", "Chargeback", "See [Chargeback](chargeback.md)."),
    ("ops", "Logs and metrics", "See [Observability](observability.md)."),
    ("oidc", "Identity (OIDC)", "Single sign-on is on when a client id and a provider are set; see "
     "[Identity](identity.md)."),
    ("backstage", "Backstage", "See [Backstage](backstage.md)."),
]

MEANINGS: dict[str, dict[str, str]] = {
    # core
    "DATABASE_URL": {"section": "core", "meaning": "PostgreSQL (psycopg 3), as a URL; the tests use `test_<name>` "
                     "on the same server"},
    "DB_CONN_MAX_AGE": {"section": "core", "meaning": "seconds a database connection is reused (health-checked "
                        "before reuse, so a restarted PostgreSQL does not break workers); `0`: a new one per request"},
    "DB_CONNECT_TIMEOUT": {"section": "core", "meaning": "seconds before an unanswering database fails a request "
                           "(and `/readyz`)"},
    "REDIS_URL": {"section": "core", "meaning": "Redis: the Celery broker and the Django cache, unless "
                  "`CELERY_BROKER_URL` or `CACHE_URL` say otherwise"},
    "CACHE_URL": {"section": "core", "default": "`REDIS_URL`", "meaning": "Redis for the Django cache (login "
                  "lockouts, the worker heartbeat, OIDC discovery documents)"},
    "CACHE_KEY_PREFIX": {"section": "core", "meaning": "prefix of the cache keys, so several portals can share "
                         "one Redis database"},
    "SECRET_KEY": {"section": "core", "default": "a fixed development key, **only while `DEBUG` is on**",
                   "meaning": "Django's signing key; required when `DEBUG=false` (50+ random characters)"},
    "DEBUG": {"section": "core", "meaning": "off unless set: production defaults everywhere (the quickstart scripts set "
              "`DEBUG=true` themselves). `false` requires `SECRET_KEY`, turns on secure "
              "cookies, HSTS, the HTTPS redirect and manifest static files, closes `/metrics` without a token"},
    "ALLOWED_HOSTS": {"section": "core", "meaning": "host names the portal answers to, comma-separated"},
    "CSRF_TRUSTED_ORIGINS": {"section": "core", "meaning": "comma-separated origins (`https://portal.example.com`) "
                             "when behind a proxy that changes the origin"},
    "STATIC_ROOT": {"section": "core", "default": "`staticfiles/` beside `manage.py`", "meaning": "where "
                    "`collectstatic` puts the static files (the image collects them at build time)"},
    "PORTAL_CREDENTIAL_KEYS": {"section": "security", "default": "derived from `SECRET_KEY`, **only while `DEBUG` "
                               "is on**", "meaning": "Fernet keys (comma-separated) that encrypt cluster tokens and "
                               "webhook secrets at rest; the first writes, all read, so a new key goes first and "
                               "`manage.py rotate_credential_keys` re-encrypts (see [Clusters and credentials]"
                               "(clusters-and-credentials.md))"},
    "PORTAL_OUTBOUND_ALLOWED_NETWORKS": {"section": "security", "meaning": "comma-separated CIDRs the clusters' "
                                         "API servers and Prometheus may be at although loopback, link-local or "
                                         "private, e.g. an on-premises API server's `10.0.0.0/8` (never used for "
                                         "webhooks)"},
    "PORTAL_WEBHOOK_ALLOWED_NETWORKS": {"section": "security", "meaning": "comma-separated CIDRs team webhooks may "
                                        "reach although private, e.g. an internal chat relay's `10.20.0.0/16`; "
                                        "loopback, link-local, multicast and metadata addresses stay refused "
                                        "whatever it lists"},
    "PORTAL_OUTBOUND_DENIED_NETWORKS": {"section": "security", "meaning": "comma-separated CIDRs outbound calls "
                                        "(API servers, Prometheus, webhooks) never reach, on top of the defaults; "
                                        "wins over the allowed lists"},
    "KUBERNETES_SERVICE_HOST": {"section": "kube", "meaning": "set by Kubernetes in the portal's own pod: the API "
                                "server a cluster registered `--in-cluster` uses"},
    "KUBERNETES_SERVICE_PORT": {"section": "kube", "meaning": "set by Kubernetes beside `KUBERNETES_SERVICE_HOST`"},
    "PORTAL_IN_CLUSTER_SERVER": {"section": "kube", "default": "`https://$KUBERNETES_SERVICE_HOST:"
                                 "$KUBERNETES_SERVICE_PORT`", "meaning": "the API server of an `--in-cluster` "
                                 "cluster"},
    "PORTAL_IN_CLUSTER_TOKEN_FILE": {"section": "kube", "meaning": "the pod's service-account token, re-read "
                                     "before every request (it rotates)"},
    "PORTAL_IN_CLUSTER_CA_FILE": {"section": "kube", "meaning": "the CA bundle of the in-cluster API server"},
    "PORTAL_CONTENT_SECURITY_POLICY": {"section": "security", "meaning": "the `Content-Security-Policy` header "
                                       "of every response; the default allows scripts from the portal's own "
                                       "origin only (see [Security](security.md))"},
    "PORTAL_RATE_LIMIT_REDIS_URL": {"section": "api", "default": "the cache's Redis", "meaning": "the Redis that "
                                    "holds the per-user rate-limit counters (an atomic counter per window)"},
    "PORTAL_TRUSTED_PROXIES": {"section": "security", "meaning": "comma-separated CIDRs of the proxies in front of "
                               "the portal (an ingress controller's pods): `X-Forwarded-For` is believed only on a "
                               "connection from them, as far left as they wrote it; **set it behind an ingress**, or "
                               "every user shares the ingress's address (the Helm chart sets it)"},
    # production security
    "SECURE_SSL_REDIRECT": {"section": "security", "meaning": "redirect plain HTTP to HTTPS (TLS ends at the "
                            "ingress, which sends `X-Forwarded-Proto`); `/healthz`, `/readyz` and `/metrics` "
                            "are never redirected"},
    "SECURE_HSTS_SECONDS": {"section": "security", "meaning": "`Strict-Transport-Security` max-age (subdomains "
                            "and preload included)"},
    # API and web
    "PORTAL_API_RATE": {"section": "api", "meaning": "API requests per user, all their tokens and sessions "
                        "together (DRF rate syntax, e.g. `600/min`); per client address for anonymous calls"},
    "PORTAL_MAX_TOKENS_PER_USER": {"section": "api", "meaning": "API tokens one user may hold at once (neither "
                                   "revoked nor expired); issuing one more is refused until one is revoked"},
    "DATA_UPLOAD_MAX_MEMORY_SIZE": {"section": "api", "default": "`1048576` (1 MiB)", "meaning": "largest request "
                                    "body accepted, in bytes (an answers object is a few kilobytes)"},
    "PORTAL_LOGIN_MAX_FAILURES": {"section": "api", "meaning": "failed sign-ins allowed per user name and address "
                                  "before a lockout"},
    "PORTAL_LOGIN_MAX_FAILURES_PER_ACCOUNT": {"section": "api", "meaning": "failed sign-ins allowed per user name "
                                              "from all addresses together before a lockout (`0`: no such limit; "
                                              "anyone can then lock that account out)"},
    "PORTAL_LOGIN_MAX_FAILURES_PER_ADDRESS": {"section": "api", "meaning": "failed sign-ins allowed per client "
                                              "address for all user names together before a lockout (`0`: no such "
                                              "limit; otherwise everyone behind that address is locked out)"},
    "PORTAL_LOGIN_LOCKOUT_SECONDS": {"section": "api", "meaning": "how long a lockout lasts after the last failure"},
    # Celery and beat
    "CELERY_BROKER_URL": {"section": "celery", "default": "`REDIS_URL`", "meaning": "the Celery broker"},
    "CELERY_VISIBILITY_TIMEOUT": {"section": "celery", "meaning": "seconds before a dead worker's unacknowledged "
                                  "task goes to another worker (tasks are acknowledged late)"},
    "CELERY_TASK_ALWAYS_EAGER": {"section": "celery", "meaning": "run tasks in the calling process instead of a "
                                 "worker; for benchmarks and debugging, never in production"},
    "PORTAL_SWEEP_SECONDS": {"section": "celery", "meaning": "how often beat's sweep of every outbox runs "
                             "(provisioning jobs, stalled-gang notices and the portal's notices whose message never "
                             "reached the broker or was lost); `0` turns it off"},
    "PORTAL_SWEEP_GRACE_SECONDS": {"section": "celery", "meaning": "a queued job sent longer ago than this and not "
                                   "started is sent again, however many messages wait in the queue (applying is "
                                   "idempotent; see [Background work](operations-background-work.md))"},
    "PORTAL_JOB_STUCK_SECONDS": {"section": "celery", "meaning": "a job `running` or `retrying` with no change for this "
                                 "long, and no worker holding its lock, is sent again with the attempt counted, or "
                                 "failed after its last attempt; a notice `retrying` this long likewise"},
    "PORTAL_NOTIFICATION_SWEEP_GRACE_SECONDS": {"section": "celery", "meaning": "a notice (stalled gang, lease, "
                                                "budget, idle GPUs) still queued this long after it was made is "
                                                "sent again by the sweep"},
    "CHARGEBACK_COLLECT_SECONDS": {"section": "celery", "meaning": "how often beat runs a usage collection pass "
                                   "over every enabled cluster"},
    "PORTAL_LEASE_SWEEP_SECONDS": {"section": "celery", "meaning": "how often beat sends lease reminders and "
                                   "takes down grants whose lease ended (`workflows.lease_sweep`)"},
    "CHARGEBACK_BUDGET_CHECK_SECONDS": {"section": "celery", "meaning": "how often beat checks every budget's "
                                        "forecast against its thresholds and notifies each crossing once "
                                        "(`chargeback.budget_thresholds_notify`)"},
    "PORTAL_IDLE_SCAN_SECONDS": {"section": "celery", "meaning": "how often beat scans every cluster with a "
                                 "`prometheus_url` for idle GPUs (docs/idle-gpus.md); `0`: never"},
    "PORTAL_INVENTORY_SYNC_SECONDS": {"section": "celery", "meaning": "how often beat runs inventory discovery of "
                                      "every enabled cluster (`provisioning.inventory_sync_all`)"},
    "PORTAL_MIG_ADVANCE_SECONDS": {"section": "celery", "meaning": "how often beat advances the active MIG plans "
                                   "(`provisioning.mig_plans_advance`)"},
    "PORTAL_RECONCILE_INTERVAL_SECONDS": {"section": "celery", "meaning": "how often beat starts a status "
                                          "reconciliation per cluster (`provisioning.status_reconcile_all`)"},
    "PORTAL_WAIT_REFRESH_SECONDS": {"section": "celery", "meaning": "how often beat reads why approved requests wait "
                                    "and records the actual start of those now running "
                                    "(`provisioning.wait_refresh_all`, [Why a request waits](waiting.md)); 0 turns "
                                    "it off"},
    "PORTAL_ADMISSION_SYNC_SECONDS": {"section": "celery", "meaning": "how often beat runs the Kueue admission "
                                      "check controller per Kueue cluster (`provisioning.admission_checks_sync_all`); "
                                      "an approval reaches the cluster within this; `0`: off"},
    "PORTAL_ADMISSION_RETRY_SECONDS": {"section": "celery", "meaning": "the `requeueAfterSeconds` of the admission "
                                       "check's `Retry` for a Workload waiting for approval: Kueue releases its "
                                       "quota and requeues it no sooner ([Admission check](admission-check.md))"},
    # Kubernetes and provisioning
    "PORTAL_LABEL_DOMAIN": {"section": "kube", "meaning": "prefix of the labels and annotations put on Kubernetes "
                            "objects (`<domain>/request-id`, ...)"},
    "PORTAL_DATA_DIR": {"section": "kube", "default": "`var/` beside `manage.py`", "meaning": "where the GitOps "
                        "applier keeps its repositories when a cluster names none (back it up: "
                        "[Backups](backups.md))"},
    "PORTAL_KUBE_TIMEOUT_SECONDS": {"section": "kube", "meaning": "timeout of every call to a Kubernetes API "
                                    "server"},
    "PORTAL_KUBE_RETRY_BASE_SECONDS": {"section": "kube", "meaning": "first retry delay after a transient "
                                       "Kubernetes error; doubles per attempt, capped at 5 minutes, at most 6 "
                                       "attempts"},
    # inventory and MIG
    "PORTAL_MIG_DRAIN_TIMEOUT_SECONDS": {"section": "live", "meaning": "a new MIG plan's drain deadline: how long a "
                                         "cordoned node waits for its GPU pods to finish"},
    "PORTAL_MIG_RECONFIGURE_TIMEOUT_SECONDS": {"section": "live", "meaning": "how long a step waits for "
                                               "mig-manager's `success` after the label was set before it is "
                                               "`stuck`"},
    # reconciliation and gangs
    "PORTAL_RECONCILE_WATCH_SECONDS": {"section": "reconcile", "meaning": "how long a run watches pods (keep it "
                                       "below the interval)"},
    "PORTAL_RECONCILE_RELIST_SECONDS": {"section": "reconcile", "meaning": "a fresh LIST of the pods at least this "
                                        "often, whatever the watch says"},
    "PORTAL_RECONCILE_LIST_PAGE_SIZE": {"section": "reconcile", "meaning": "pods per page of that LIST (`limit`); a "
                                        "worker holds one decoded page at a time"},
    "PORTAL_RECONCILE_IMAGE_PULL_FAIL_AFTER_SECONDS": {"section": "reconcile", "meaning": "image pull failures "
                                                       "tolerated this long before the request fails"},
    "PORTAL_RECONCILE_NO_PODS_FAIL_AFTER_SECONDS": {"section": "reconcile", "meaning": "a request without any pod "
                                                    "fails after this (queues such as Kueue hold suspended Jobs "
                                                    "without pods); `0`: never"},
    "PORTAL_GANG_STALL_AFTER_SECONDS": {"section": "reconcile", "meaning": "stall threshold of a workload class "
                                        "without a GangPolicy row"},
    "PORTAL_PROMETHEUS_TIMEOUT_SECONDS": {"section": "reconcile", "meaning": "timeout of each query to a "
                                          "cluster's Prometheus (idle GPUs)"},
    "PORTAL_IDLE_LOOKBACK_SECONDS": {"section": "reconcile", "meaning": "how far back an idle scan reads "
                                     "utilisation and memory (the window right-sizing is based on); at least the "
                                     "longest idle threshold"},
    # notifications and e-mail
    "PLATFORM_NOTIFICATION_EMAIL": {"section": "notify", "meaning": "the platform team's address(es), "
                                    "comma-separated, copied on every stalled-gang notice"},
    "PORTAL_WEBHOOK_TIMEOUT_SECONDS": {"section": "notify", "meaning": "timeout of each webhook call"},
    "PORTAL_LEASE_REMINDER_HOURS": {"section": "notify", "meaning": "how many hours before a lease ends its "
                                    "reminder goes out (once per expiry; docs/budgets-and-leases.md)"},
    "PORTAL_BASE_URL": {"section": "notify", "meaning": "the portal's public URL, for links in notices, Backstage "
                        "entities and the template; empty: the request's host, and `http://127.0.0.1:8000` in "
                        "notices"},
    "EMAIL_BACKEND": {"section": "notify", "default": "console backend while `DEBUG`, else SMTP",
                      "meaning": "Django e-mail backend (dotted path)"},
    "EMAIL_HOST": {"section": "notify", "meaning": "SMTP server"},
    "EMAIL_PORT": {"section": "notify", "meaning": "SMTP port"},
    "EMAIL_USE_TLS": {"section": "notify", "meaning": "STARTTLS to the SMTP server"},
    "EMAIL_HOST_USER": {"section": "notify", "meaning": "SMTP user name"},
    "EMAIL_HOST_PASSWORD": {"section": "notify", "meaning": "SMTP password"},
    "EMAIL_TIMEOUT": {"section": "notify", "meaning": "seconds for each SMTP connection"},
    "DEFAULT_FROM_EMAIL": {"section": "notify", "meaning": "sender of the portal's e-mail"},
    # chargeback
    "CHARGEBACK_MIG_EQUIVALENTS": {"section": "chargeback", "meaning": "a MIG slice in GPU equivalents: `compute` "
                                   "(its compute slices / the GPU's) or `memory` (its memory fraction)"},
    "CHARGEBACK_MAX_REPORT_DAYS": {"section": "chargeback", "meaning": "longest report period the API accepts"},
    "CHARGEBACK_FOCUS_PROVIDER": {"section": "chargeback",
                                  "meaning": "who bills in the FOCUS export (its Provider, Publisher and InvoiceIssuer)"},
    # logs and metrics
    "LOG_FORMAT": {"section": "ops", "meaning": "`plain` or `json` (one JSON object per line, gunicorn's lines "
                   "too; the image sets `json`)"},
    "LOG_LEVEL": {"section": "ops", "meaning": "level of the root logger"},
    "LOG_REQUESTS": {"section": "ops", "default": "`true` with `LOG_FORMAT=json`, else `false`",
                     "meaning": "one access-log line per request (method, path, status, duration, request id, "
                     "user)"},
    "METRICS_TOKEN": {"section": "ops", "meaning": "`/metrics` needs `Authorization: Bearer <token>`; without one it "
                      "is open only while `DEBUG` is on (it names teams and their GPU use)"},
    # OIDC
    "OIDC_RP_CLIENT_ID": {"section": "oidc", "meaning": "the portal's client at the provider (redirect URI: "
                          "`https://<portal>/oidc/callback/`)"},
    "OIDC_RP_CLIENT_SECRET": {"section": "oidc", "meaning": "its secret"},
    "OIDC_OP_DISCOVERY_URL": {"section": "oidc", "meaning": "e.g. `https://login.example.com/realms/main/"
                              ".well-known/openid-configuration`; endpoints, JWKS and issuer come from it"},
    "OIDC_OP_ISSUER": {"section": "oidc", "meaning": "explicit issuer (wins over discovery)"},
    "OIDC_OP_AUTHORIZATION_ENDPOINT": {"section": "oidc", "meaning": "explicit endpoint (wins over discovery)"},
    "OIDC_OP_TOKEN_ENDPOINT": {"section": "oidc", "meaning": "explicit endpoint (wins over discovery)"},
    "OIDC_OP_USER_ENDPOINT": {"section": "oidc", "meaning": "explicit userinfo endpoint (wins over discovery)"},
    "OIDC_OP_JWKS_ENDPOINT": {"section": "oidc", "meaning": "explicit JWKS endpoint (wins over discovery)"},
    "OIDC_RP_SIGN_ALGO": {"section": "oidc", "meaning": "id_token signature algorithm"},
    "OIDC_RP_SCOPES": {"section": "oidc", "meaning": "scopes asked for; add what your provider needs to send "
                       "groups (e.g. `groups`)"},
    "OIDC_USE_PKCE": {"section": "oidc", "meaning": "authorization code flow with PKCE"},
    "OIDC_TOKEN_USE_BASIC_AUTH": {"section": "oidc", "meaning": "client authentication at the token endpoint with "
                                  "HTTP Basic instead of form fields"},
    "OIDC_TIMEOUT": {"section": "oidc", "meaning": "seconds for each call to the provider"},
    "OIDC_USERNAME_CLAIM": {"section": "oidc", "meaning": "claim naming the account made at an identity's first "
                            "sign-on (falls back to `sub`; `<name>@<issuer host>` when that name is taken); the "
                            "account is found by issuer and `sub` after that, never by this name"},
    "OIDC_GROUPS_CLAIM": {"section": "oidc", "meaning": "claim holding the group names (id_token or userinfo; "
                          "Keycloak's `/full/path` form is accepted)"},
    "OIDC_ROLE_GROUPS": {"section": "oidc", "meaning": "role=group pairs (repeat a role for several groups); the "
                         "highest role any group grants wins"},
    "OIDC_TEAM_GROUP_PREFIX": {"section": "oidc", "meaning": "a group `<prefix><team slug>` makes the user a member "
                               "of that (existing) team"},
    "OIDC_LINK_VERIFIED_EMAIL": {"section": "oidc", "meaning": "an identity signing on for the first time is linked "
                                 "to the one existing account with the e-mail address the provider says it "
                                 "verified (`email_verified: true`; never a superuser) instead of getting its own; "
                                 "only for a provider that verifies every address"},
    # Backstage
    "BACKSTAGE_NAMESPACE": {"section": "backstage", "meaning": "catalog namespace of the exported Resource "
                            "entities"},
    "BACKSTAGE_GROUP_NAMESPACE": {"section": "backstage", "meaning": "namespace of the Group entities (one per "
                                  "team slug) that own them"},
    "BACKSTAGE_SYSTEM": {"section": "backstage", "meaning": "optional System entity the exported resources belong "
                         "to"},
}

SCRIPT_MEANINGS: dict[str, dict[str, str]] = {
    "DATABASE_URL": {"meaning": "the PostgreSQL the scripts set up and the portal uses (`./scripts/demo` creates "
                     "the database if missing)"},
    "REDIS_URL": {"meaning": "the Redis `./scripts/demo` uses"},
    "TEST_REDIS_URL": {"meaning": "the Redis database `./scripts/test` gives the tests (as their `REDIS_URL`), so "
                       "queued test tasks never reach a demo worker"},
    "PORT": {"meaning": "the port `./scripts/demo` serves on"},
    "DEBUG": {"meaning": "`./scripts/demo` and `./scripts/test` set `DEBUG=true` (development mode) unless it is set"},
    "ALLOWED_HOSTS": {"meaning": "`./scripts/demo` passes it on to the portal; when unset it is the portal's default "
                                 "plus `HOST`, so that the printed URL opens"},
    "HOST": {"meaning": "the address `./scripts/demo` listens on: loopback unless you say otherwise (`0.0.0.0` or "
                        "`::` serve every interface); it is added to `ALLOWED_HOSTS` when that is not set"},
    "VENV": {"meaning": "the virtualenv the scripts create and use"},
    "DB_CONNECT_TIMEOUT": {"meaning": "`./scripts/test` gives the tests 30 s to open a PostgreSQL connection unless "
                                      "it is set (a busy machine can take longer than production's 5 s)"},
    "SIMULATOR": {"meaning": "`./scripts/demo` starts the simulated GPU cluster (`manage.py simulate_cluster`, "
                             "docs/simulated-cluster.md) unless it is `0`; with it, the script also allows loopback in "
                             "`PORTAL_OUTBOUND_ALLOWED_NETWORKS` and shortens `PORTAL_RECONCILE_INTERVAL_SECONDS` and "
                             "`CHARGEBACK_COLLECT_SECONDS` when they are unset"},
    "PORTAL_OUTBOUND_ALLOWED_NETWORKS": {"meaning": "with the simulated cluster, `./scripts/demo` sets it to "
                                                    "`127.0.0.0/8` when unset, so the portal may call it"},
    "PORTAL_RECONCILE_INTERVAL_SECONDS": {"meaning": "with the simulated cluster, `./scripts/demo` sets it to 15 "
                                                     "when unset (pods read at demo pace)"},
    "CHARGEBACK_COLLECT_SECONDS": {"meaning": "with the simulated cluster, `./scripts/demo` sets it to 60 when unset "
                                              "(usage collected at demo pace)"},
    "SIM_PORT": {"meaning": "the loopback port of the simulated cluster's API server in `./scripts/demo`"},
    "KUEUE_SIM_PORT": {"meaning": "the loopback port of the demo's second simulated cluster, gpu-kueue (Kueue with "
                                  "the portal's admission check), in `./scripts/demo` (default: `SIM_PORT` + 100)"},
    "PLATFORM_NOTIFICATION_EMAIL": {"meaning": "`./scripts/demo` sets it to `platform-team@example.com` when unset, so "
                                               "the stalled gang's notice goes somewhere (printed in "
                                               "`var/log/worker.log` by development mode's console e-mail backend)"},
}
