FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY leaderboard ./leaderboard
COPY scoring ./scoring
COPY templates ./templates
COPY static ./static
COPY manage.py ./
RUN pip install --no-cache-dir -e .
EXPOSE 8000
CMD ["gunicorn", "leaderboard.wsgi:application", "--bind", "0.0.0.0:8000"]
