FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY leaderboard ./leaderboard
COPY scoring ./scoring
COPY templates ./templates
COPY static ./static
COPY manage.py ./
# The runtime dependencies only, as `make runtime-check` proves them; the scoring code (scoring/, the
# distribution leaderboard-scoring) from the copied folder, the one the server imports.
RUN pip install --no-cache-dir -e ./scoring -e . \
    && useradd --create-home --uid 1000 app \
    && mkdir -p /data && chown app:app /data
USER app
EXPOSE 8000
CMD ["gunicorn", "-c", "python:leaderboard.gunicorn_conf", "--bind", "0.0.0.0:8000"]
