# One image for web (gunicorn), Celery worker and beat, and the migration job.
# The build stage has the compilers and fills a virtualenv; the final stage copies that virtualenv and the source:
# no compilers, no pip cache, static files collected at build time, a non-root user.
FROM python:3.11-slim-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential && rm -rf /var/lib/apt/lists/*
ENV VIRTUAL_ENV=/opt/venv PATH=/opt/venv/bin:$PATH PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
RUN python -m venv /opt/venv
WORKDIR /src
COPY pyproject.toml ./
COPY portal ./portal
COPY intake ./intake
COPY provisioning ./provisioning
COPY chargeback ./chargeback
COPY register ./register
COPY workflows ./workflows
# The pinned dependencies only: the project itself runs from /app (its source), not from site-packages.
RUN pip install . && pip uninstall -y gpu-golden-path-portal
COPY . .
RUN SECRET_KEY=collectstatic-only DEBUG=false STATIC_ROOT=/src/staticfiles \
    python manage.py collectstatic --no-input -v0

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PATH=/opt/venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=portal.settings STATIC_ROOT=/app/staticfiles \
    PORTAL_DATA_DIR=/var/lib/gpu-portal HOME=/tmp LOG_FORMAT=json DEBUG=false
# git: the GitOps applier commits rendered manifests. Nothing else is installed.
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/* \
    && groupadd --system --gid 10001 portal \
    && useradd --system --uid 10001 --gid 10001 --home-dir /nonexistent --no-create-home portal \
    && mkdir -p /var/lib/gpu-portal && chown 10001:10001 /var/lib/gpu-portal
COPY --from=build /opt/venv /opt/venv
WORKDIR /app
# Source and collected static files stay owned by root: the portal user reads them and writes only to
# /tmp and PORTAL_DATA_DIR, so the root filesystem can be mounted read-only.
COPY . .
COPY --from=build /src/staticfiles /app/staticfiles
USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--worker-tmp-dir", "/tmp"]
