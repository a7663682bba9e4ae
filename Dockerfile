# The image of web, worker, beat and the one-off migrate service (docker-compose.yml, docs/deploy.md).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /app

# Exact versions, each checked against its hash (`make lock` writes the file). Its own layer:
# rebuilt only when the lock changes.
COPY requirements.lock ./
RUN pip install --require-hashes -r requirements.lock

# The project, built as a wheel and installed (not editable) without touching those versions;
# its source is not kept. What `make runtime-check` runs in CI is installed the same way.
COPY pyproject.toml README.md /src/
COPY leaderboard /src/leaderboard
COPY scoring /src/scoring
# scoring/ is its own distribution (leaderboard-scoring, the code participants install to check a
# round); the server pins it, and both come from this checkout.
RUN pip install --no-deps /src/scoring /src && rm -rf /src

# The site folder the installed package reads (PROJECT_DIR): templates, static sources, manage.py.
COPY manage.py ./
COPY templates ./templates
COPY static ./static
ENV PROJECT_DIR=/app DATA_DIR=/data

RUN useradd --create-home --uid 1000 app && mkdir -p /data && chown app:app /data
USER app
EXPOSE 8000
# The web process answers (/healthz touches nothing else). Worker and beat override this in
# docker-compose.yml; /readyz (database, cache, broker, workers) is for the load balancer.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request as r; r.urlopen('http://127.0.0.1:8000/healthz', timeout=4)"]
CMD ["gunicorn", "-c", "python:leaderboard.gunicorn_conf", "--bind", "0.0.0.0:8000"]
