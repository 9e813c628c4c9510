# One image for web, worker and beat. Build stage compiles wheels; the final stage has no compilers.
FROM python:3.11-slim-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends build-essential && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml ./
COPY portal ./portal
COPY intake ./intake
COPY provisioning ./provisioning
COPY chargeback ./chargeback
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim-bookworm
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 DJANGO_SETTINGS_MODULE=portal.settings \
    STATIC_ROOT=/app/staticfiles PORTAL_DATA_DIR=/var/lib/gpu-portal
RUN apt-get update && apt-get install -y --no-install-recommends git && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home /app portal && mkdir -p /var/lib/gpu-portal && chown portal /var/lib/gpu-portal
WORKDIR /app
COPY --from=build /wheels /wheels
RUN pip install --no-cache-dir /wheels/* && rm -rf /wheels
COPY --chown=portal:portal . /app
RUN SECRET_KEY=collectstatic-only DEBUG=false python manage.py collectstatic --no-input -v0
USER portal
EXPOSE 8000
CMD ["gunicorn", "portal.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--access-logfile", "-"]
