"""The data model shared by every benchmark kind.

A benchmark has rounds (a static competition has one permanent round). Cases
belong to a round; truth arrives in versions (a change is a new version; an
interim snapshot is a non-final version). Entrants are owned by users and
submit to rounds. Scores are long-form rows that record the truth version they
came from; per-case rows feed the debug table; leaderboard rows are
precomputed in the same transaction as the scores they summarise.
"""
from __future__ import annotations

import secrets
import uuid
from pathlib import PurePath

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.db.models.functions import Lower
from django.utils import timezone

# The longest ``Submission.note`` an upload may carry, in characters.
NOTE_MAX_CHARS = 1000


class Benchmark(models.Model):
    slug = models.SlugField(max_length=80, unique=True)
    title = models.CharField(max_length=200)
    kind = models.CharField(max_length=40)
    description = models.TextField(blank=True, help_text="Markdown.")
    # Where the data comes from and its licence, shown on every page of the benchmark (CC BY asks
    # for credit wherever the data is shown, and round pages show prices and portfolios).
    credit = models.CharField(max_length=500, blank=True, help_text="Markdown, one line: the data's source "
                                                                    "and licence, shown on every page of the "
                                                                    "benchmark.")
    config = models.JSONField(default=dict, blank=True, help_text="Validated by the kind.")
    daily_limit = models.PositiveIntegerField(default=5, help_text="Accepted submissions per user (or team) per UTC day.")
    # Teams: at most this many members (null: no limit); no team forms or grows after the merge deadline.
    team_size_max = models.PositiveIntegerField(null=True, blank=True)
    team_merge_deadline = models.DateTimeField(null=True, blank=True)
    is_published = models.BooleanField(default=True)
    # When set, the private split is shown and ranks the final leaderboard.
    private_revealed_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["title", "id"]

    def __str__(self) -> str:
        return self.title

    @property
    def kind_impl(self):
        from scoring.kinds import get_kind  # noqa: PLC0415 -- the kinds bring numpy, scipy, pandas: loaded when a benchmark is first used, not by every process that loads the models

        return get_kind(self.kind)

    @property
    def private_revealed(self) -> bool:
        return self.private_revealed_at is not None


class RoundQuerySet(models.QuerySet):
    def open(self):
        return self.filter(status=Round.Status.OPEN)

    def with_cases(self):
        """Rounds that hold cases (a universe): an empty round never takes submissions."""
        return self.filter(models.Exists(Case.objects.filter(round=models.OuterRef("pk"))))


def universe_upload_to(instance: Round, filename: str) -> str:
    suffix = PurePath(filename).suffix.lower()[:10]
    return f"universes/{timezone.now():%Y/%m/%d}/{uuid.uuid4().hex}{suffix}"


class Round(models.Model):
    class Status(models.TextChoices):
        OPEN = "open", "open"
        CLOSED = "closed", "closed"
        RESOLVED = "resolved", "resolved"

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    title = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.OPEN)
    # A static competition's one round: no universe of its own, no resolution; it
    # closes at its deadline (closes_at) or when the organiser closes it.
    is_permanent = models.BooleanField(default=False)
    opens_at = models.DateTimeField(default=timezone.now)
    closes_at = models.DateTimeField(null=True, blank=True)
    resolves_at = models.DateTimeField(null=True, blank=True, help_text="When final truth is expected.")
    status_changed_at = models.DateTimeField(default=timezone.now)
    # Round-level facts a kind needs (option universe, S&P 500 prices...).
    data = models.JSONField(default=dict, blank=True)
    # Round kinds: keeps tracks (portfolio weekly/monthly) apart; blank for none.
    track = models.CharField(max_length=40, blank=True)
    # Round kinds: the universe file as the organiser uploaded it (its ids are the round's cases).
    universe = models.FileField(upload_to=universe_upload_to, max_length=300, blank=True)
    universe_name = models.CharField(max_length=255, blank=True)
    universe_sha256 = models.CharField(max_length=64, blank=True)
    universe_size = models.PositiveIntegerField(default=0, help_text="Ids in the universe.")
    # Published when the round closes, before any truth: SHA-256 of the sorted lines
    # "entrant,audit_hash" of its counted submissions (scoring.record.commitment); empty while open.
    commitment = models.CharField(max_length=64, blank=True)

    objects = RoundQuerySet.as_manager()

    class Meta:
        ordering = ["benchmark_id", "-number", "id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "number"], name="round_number_unique"),
        ]
        indexes = [
            # The periodic close: open rounds past their closes_at.
            models.Index(fields=["status", "closes_at"], name="round_status_closes"),
        ]

    def __str__(self) -> str:
        return self.title or f"{self.benchmark.slug} round {self.number}"


class Case(models.Model):
    class Split(models.TextChoices):
        # Truth shown to participants (training data, verify); never ranks.
        DEV = "dev", "dev"
        # Ranks the public leaderboard; truth hidden while submissions are open.
        PUBLIC = "public", "public"
        # Ranks after the organiser's reveal; truth hidden until then.
        PRIVATE = "private", "private"

    RANKED_SPLITS = (Split.PUBLIC, Split.PRIVATE)

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="cases")
    external_id = models.CharField(max_length=200)
    split = models.CharField(max_length=10, choices=Split.choices, default=Split.PUBLIC)
    # What participants may see (fold, de-identified text...).
    public = models.JSONField(default=dict, blank=True)
    # Staff only: original text, identifiers, de-identification log.
    private = models.JSONField(default=dict, blank=True)
    position = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["round_id", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "external_id"], name="case_id_unique_in_round"),
        ]

    def __str__(self) -> str:
        return self.external_id


class TruthVersion(models.Model):
    """One version of a round's truth. Scores say which version they came from."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="truth_versions")
    version = models.PositiveIntegerField()
    # False for interim snapshots: their scores are provisional.
    is_final = models.BooleanField(default=True)
    sha256 = models.CharField(max_length=64)
    note = models.CharField(max_length=300, blank=True)
    # Round-level truth (benchmark index returns, stakes...).
    extra = models.JSONField(default=dict, blank=True)
    # Round kinds: the date a snapshot describes (interim scores are provisional as of it).
    as_of = models.DateField(null=True, blank=True)
    # Round kinds: whole-round scoring of this version started (claimed) and completed.
    # scored_at is the idempotency marker; claimed but never scored is requeued by the sweep.
    scoring_claimed_at = models.DateTimeField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    # Each claim is an attempt; after SCORING_MAX_ATTEMPTS unfinished ones (the scoring raised, or
    # killed its worker) the version is given up: the sweep leaves it, and its page says why.
    scoring_attempts = models.PositiveSmallIntegerField(default=0)
    scoring_error = models.CharField(max_length=2000, blank=True)  # the last attempt's error, then why given up
    scoring_gave_up_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)

    class Meta:
        ordering = ["round_id", "-version", "id"]
        get_latest_by = "version"
        constraints = [
            models.UniqueConstraint(fields=["round", "version"], name="truth_version_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.round} truth v{self.version}{'' if self.is_final else ' (interim)'}"


class TruthValue(models.Model):
    truth_version = models.ForeignKey(TruthVersion, on_delete=models.CASCADE, related_name="values")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="truth_values")
    values = models.JSONField(default=dict)

    class Meta:
        ordering = ["truth_version_id", "case_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["truth_version", "case"], name="truth_value_unique"),
        ]


class Entrant(models.Model):
    """What appears on a leaderboard: a user's model or team. A user owns one or more."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="entrants")
    name = models.CharField(max_length=80, unique=True)
    description = models.CharField(max_length=300, blank=True)
    # Counts in the benchmark meta model of round kinds.
    is_benchmark_model = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]
        constraints = [
            # Names are unique ignoring case ("Ada" and "ada" would look the same on a board);
            # concurrent creations of one name collapse here, not in a count-then-insert.
            models.UniqueConstraint(Lower("name"), name="entrant_name_unique_ci"),
        ]

    def __str__(self) -> str:
        return self.name


class Stake(models.Model):
    """An entrant's stake in a round (weights the stake-weighted meta model)."""

    entrant = models.ForeignKey(Entrant, on_delete=models.CASCADE, related_name="stakes")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="stakes")
    amount = models.DecimalField(max_digits=20, decimal_places=6)

    class Meta:
        ordering = ["round_id", "entrant_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["entrant", "round"], name="stake_unique"),
            models.CheckConstraint(condition=Q(amount__gte=0), name="stake_non_negative"),
        ]


def submission_upload_to(instance: Submission, filename: str) -> str:
    # Stored under a generated name; the participant's name is kept in original_name.
    suffix = PurePath(filename).suffix.lower()[:10]
    now = timezone.now()
    return f"submissions/{now:%Y/%m/%d}/{uuid.uuid4().hex}{suffix}"


class SubmissionQuerySet(models.QuerySet):
    def of_participant(self, user):
        """The user's own uploads and those of the teams they are in (every member sees the team's)."""
        teams = TeamMembership.objects.filter(user=user).values("team__entrant_id")
        return self.filter(Q(user=user) | Q(entrant_id__in=teams))

    def visible_to(self, user):
        if user.is_staff:
            return self
        return self.of_participant(user)


class Submission(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        SCORING = "scoring", "scoring"
        SCORED = "scored", "scored"
        FAILED = "failed", "failed"
        # Round kinds: validated and stored, waiting for the round's truth.
        ACCEPTED = "accepted", "accepted"

    FINAL_STATUSES = (Status.SCORED, Status.FAILED)

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="submissions")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="submissions")
    entrant = models.ForeignKey(Entrant, on_delete=models.CASCADE, related_name="submissions")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="submissions")
    file = models.FileField(upload_to=submission_upload_to, max_length=300)
    original_name = models.CharField(max_length=255)
    size = models.PositiveBigIntegerField()
    # SHA-256 of the canonical payload; shown publicly.
    audit_hash = models.CharField(max_length=64, db_index=True)
    # The validated submission in the kind's canonical JSON form.
    payload = models.JSONField(default=dict)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    status_reason = models.TextField(blank=True)
    errors = models.JSONField(default=list, blank=True)
    # Column order of the per-case rows (PostgreSQL's jsonb does not keep key order).
    case_columns = models.JSONField(default=list, blank=True)
    # The participant's choice for the private leaderboard.
    is_selected = models.BooleanField(default=False)
    # False once a server-side failure refunded the daily quota.
    counts_against_limit = models.BooleanField(default=True)
    # Static kinds with ``late_submissions``: received after ``closes_at``; scored, never ranked.
    late = models.BooleanField(default=False)
    attempts = models.PositiveIntegerField(default=0)
    # The outbox: null while the scoring task for the current queued state has not
    # reached the broker (it was down); the sweep publishes such rows.
    enqueued_at = models.DateTimeField(null=True, blank=True)
    # Written every few seconds by the worker while scoring; a stale one means the
    # worker died and the sweep requeues the submission.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    # Round kinds: the entrant's counted submission of the round (its latest accepted one
    # before close); earlier ones are replaced. Consistency runs (is_repeat) never count.
    is_counted = models.BooleanField(default=False)
    replaced_at = models.DateTimeField(null=True, blank=True)
    is_repeat = models.BooleanField(default=False)
    truth_version = models.ForeignKey(TruthVersion, null=True, blank=True, on_delete=models.SET_NULL,
                                      related_name="+")
    # The client's Idempotency-Key header, unique per user: a retried upload
    # returns this submission instead of storing (and counting) another.
    # NULL (not '') when there is no key: the unique (user, key) constraint lets any number of NULLs through.
    idempotency_key = models.CharField(max_length=128, null=True, blank=True)  # noqa: DJ001
    # SHA-256 of what the keyed request asked for, so the same key with another body is refused.
    idempotency_fingerprint = models.CharField(max_length=64, blank=True)
    # The uploader's own words about this upload (``note``): shown to the account that uploaded it, no one else.
    note = models.CharField(max_length=NOTE_MAX_CHARS, blank=True, default="")
    received_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    scored_at = models.DateTimeField(null=True, blank=True)
    status_changed_at = models.DateTimeField(default=timezone.now)

    objects = SubmissionQuerySet.as_manager()

    class Meta:
        ordering = ["-received_at", "-id"]
        indexes = [
            # "My submissions" and the daily-count display: a user's rows on a benchmark by time.
            models.Index(fields=["user", "benchmark", "received_at"], name="submission_user_day"),
            # The stuck-submission sweep: unfinished rows by age.
            models.Index(fields=["status", "status_changed_at"], name="submission_status_age"),
            # Leaderboard refresh: a round's submissions per entrant.
            models.Index(fields=["round", "entrant"], name="submission_round_entrant"),
        ]
        constraints = [
            # One selected final submission per entrant and round.
            models.UniqueConstraint(fields=["entrant", "round"], condition=Q(is_selected=True),
                                    name="one_selected_per_entrant_round"),
            # Concurrent retries of one upload collapse here (the lookup by key uses it too).
            models.UniqueConstraint(fields=["user", "idempotency_key"], condition=Q(idempotency_key__isnull=False),
                                    name="submission_idempotency_key_unique"),
            # Round kinds: one counted submission per entrant and round.
            models.UniqueConstraint(fields=["entrant", "round"], condition=Q(is_counted=True),
                                    name="one_counted_per_entrant_round"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.entrant} on {self.benchmark.slug}"

    @property
    def is_final(self) -> bool:
        return self.status in self.FINAL_STATUSES


class SubmissionArray(models.Model):
    """A round submission's values as float64 bytes, (rows x columns) aligned to the universe's case order.

    Whole-round scoring reads these as one matrix; never a database row per id.
    """

    submission = models.OneToOneField(Submission, on_delete=models.CASCADE, related_name="array",
                                      primary_key=True)
    rows = models.PositiveIntegerField()
    columns = models.JSONField(default=list)
    data = models.BinaryField()


class SubmissionEvent(models.Model):
    """Audit trail: every status change of a submission, with its reason."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="events")
    status = models.CharField(max_length=10, choices=Submission.Status.choices)
    reason = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["submission_id", "at", "id"]


class Score(models.Model):
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="scores")
    metric = models.CharField(max_length=80)
    split = models.CharField(max_length=10, choices=Case.Split.choices)
    value = models.FloatField(null=True, blank=True)  # null: not available (n/a)
    provisional = models.BooleanField(default=False)
    truth_version = models.ForeignKey(TruthVersion, on_delete=models.PROTECT, related_name="scores")
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["submission_id", "split", "metric", "id"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "split", "metric"], name="score_unique"),
        ]


class RoundScore(models.Model):
    """Round kinds: a submission's metrics against one truth version. Never overwritten: history."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="round_scores")
    truth_version = models.ForeignKey(TruthVersion, on_delete=models.CASCADE, related_name="round_scores")
    metrics = models.JSONField(default=dict)
    provisional = models.BooleanField(default=False)
    as_of = models.DateField(null=True, blank=True)
    computed_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["submission_id", "truth_version_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "truth_version"], name="round_score_unique"),
        ]


class RoundTruthFreeScores(models.Model):
    """Round kinds: the metrics no truth changes (``RoundKind.truth_free_metrics``; signals: the
    pairwise MCWNM and APCWNM) of a round's counted submissions, computed once when it closes and
    read by every truth version's scoring instead of computing them again.

    ``data``: float64 bytes, (counted submissions in id order) x ``metrics``; ``key``: the SHA-256
    of those submissions' ids, so values computed from another set are never used. ``metrics`` may
    name columns besides the metrics (signals: ``mcwnm_partner_1``, ...: each submission's nearest
    partners, positions in the same order, which MCWNM's board interval resamples over).
    """

    round = models.OneToOneField(Round, on_delete=models.CASCADE, related_name="truth_free_scores",
                                 primary_key=True)
    key = models.CharField(max_length=64)
    metrics = models.JSONField(default=list)
    data = models.BinaryField()
    computed_at = models.DateTimeField(default=timezone.now)


class CaseResult(models.Model):
    """One row of a submission's per-case debug table."""

    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="case_results")
    case = models.ForeignKey(Case, on_delete=models.CASCADE, related_name="+")
    split = models.CharField(max_length=10, choices=Case.Split.choices)
    data = models.JSONField(default=dict)

    class Meta:
        ordering = ["submission_id", "case_id", "id"]
        constraints = [
            models.UniqueConstraint(fields=["submission", "case"], name="case_result_unique"),
        ]


class BoardOrder(models.Model):
    """The order key of a board row; the rank is derived when the board is read.

    Rows sort by (order_missing, order_value, order_at, tie id): a missing value
    last, then the ranking metric (negated when higher is better), then the
    earlier time. Rank = position in that order, so one entrant's row changes
    without touching anyone else's.
    """

    order_missing = models.BooleanField(default=False)
    order_value = models.FloatField(default=0.0)
    order_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)
    # The 95% bootstrap interval of the ranking metric, written when the row is
    # (services/leaderboards.py), null where the kind gives no interval. The ranks the row
    # could hold within the board's intervals (``rank_range``) depend on every row's, so,
    # like the rank, they are derived when the board is read (``selectors.board_page``).
    interval_low = models.FloatField(null=True, blank=True)
    interval_high = models.FloatField(null=True, blank=True)

    class Meta:
        abstract = True

    @property
    def interval(self) -> list[float] | None:
        if self.interval_low is None or self.interval_high is None:
            return None
        return [self.interval_low, self.interval_high]


class LeaderboardRow(BoardOrder):
    """Precomputed: one entrant's row on a round's board, per split. Pages read only these."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="leaderboard_rows")
    split = models.CharField(max_length=10, choices=Case.Split.choices)
    entrant = models.ForeignKey(Entrant, on_delete=models.CASCADE, related_name="+")
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField(null=True)
    metrics = models.JSONField(default=dict)
    submissions_count = models.PositiveIntegerField(default=0)
    provisional = models.BooleanField(default=False)
    # Round kinds: the date of the truth snapshot the values come from.
    as_of = models.DateField(null=True, blank=True)

    BOARD_ORDER = ("order_missing", "order_value", "order_at", "submission_id")

    class Meta:
        ordering = ["round_id", "split", "order_missing", "order_value", "order_at", "submission_id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "split", "entrant"], name="leaderboard_row_unique"),
        ]
        indexes = [
            # A board page: WHERE round, split ORDER BY the order key OFFSET/LIMIT, reading the
            # page's ids from this index alone (id is its last column: an index-only scan);
            # "find me": COUNT(*) of the rows ordered before one row (an index range).
            models.Index(fields=["round", "split", "order_missing", "order_value", "order_at", "submission", "id"],
                         name="leaderboard_row_order"),
        ]


class StandingRow(BoardOrder):
    """Round kinds: an entrant's standing across resolved rounds (per track), precomputed."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="standing_rows")
    track = models.CharField(max_length=40, blank=True)
    entrant = models.ForeignKey(Entrant, on_delete=models.CASCADE, related_name="+")
    score = models.FloatField(null=True)
    metrics = models.JSONField(default=dict)
    rounds = models.PositiveIntegerField(default=0)

    BOARD_ORDER = ("order_missing", "order_value", "order_at", "entrant_id")

    class Meta:
        ordering = ["benchmark_id", "track", "order_missing", "order_value", "order_at", "entrant_id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "track", "entrant"], name="standing_row_unique"),
        ]
        indexes = [
            # The standings page: WHERE benchmark, track ORDER BY the order key OFFSET/LIMIT
            # (ids read from the index alone, as for LeaderboardRow).
            models.Index(fields=["benchmark", "track", "order_missing", "order_value", "order_at", "entrant", "id"],
                         name="standing_row_order"),
        ]


class StandingsDocument(models.Model):
    """A kind's precomputed standings beyond rows (e.g. portfolio comparison sets), per track."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="standings_documents")
    track = models.CharField(max_length=40, blank=True)
    name = models.CharField(max_length=80)
    data = models.JSONField(default=dict)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["benchmark_id", "track", "name", "id"]
        constraints = [
            models.UniqueConstraint(fields=["benchmark", "track", "name"], name="standings_document_unique"),
        ]


class DailyQuota(models.Model):
    """Accepted submissions of a user (competing alone) or of a team on a benchmark on one UTC day.

    Incremented with a conditional UPDATE (used < limit), so concurrent posts
    from any number of server processes can never accept more than the limit;
    a team's members all update the team's one row.
    """

    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.CASCADE,
                             related_name="+")
    team = models.ForeignKey("Team", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    day = models.DateField()
    used = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-day", "id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "benchmark", "day"], name="daily_quota_unique"),
            models.UniqueConstraint(fields=["team", "benchmark", "day"], name="daily_quota_team_unique"),
            models.CheckConstraint(condition=Q(user__isnull=True) ^ Q(team__isnull=True),
                                   name="daily_quota_user_or_team"),
        ]


def _token_prefix() -> str:
    return secrets.token_hex(4)


class ApiToken(models.Model):
    """An API token. Only its SHA-256 is stored; the key is shown once at creation."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=80, blank=True)
    prefix = models.CharField(max_length=8, default=_token_prefix)
    key_hash = models.CharField(max_length=64, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.user})"


class WorkerHeartbeat(models.Model):
    """One row per process that runs tasks: proof, renewed every few seconds, that it is alive.

    Written by every pool process of every worker (the solo pool: the worker itself), busy or
    idle, from a thread of its own (``leaderboard/core/liveness.py``). In the database, so it is
    read the same way whichever broker carries the tasks.
    """

    name = models.CharField(max_length=255, unique=True)  # "<worker node name>/<pid>"
    hostname = models.CharField(max_length=255)  # the Celery node name, e.g. serve-123@host
    pid = models.PositiveIntegerField()
    started_at = models.DateTimeField(default=timezone.now)
    beat_at = models.DateTimeField(default=timezone.now)
    # When the task in hand started (null while idle), and when it last started or finished one.
    busy_since = models.DateTimeField(null=True, blank=True)
    last_task_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-beat_at", "-id"]
        indexes = [
            # worker_heartbeat_age_seconds(): the newest beat, of all workers or of one node.
            models.Index(fields=["hostname", "beat_at"], name="workerheartbeat_node_beat"),
            models.Index(fields=["beat_at"], name="workerheartbeat_beat"),
        ]

    def __str__(self) -> str:
        return self.name


class TimingBucket(models.Model):
    """One bucket of a duration histogram that /metrics shows (``leaderboard.core.services.timings``).

    Kept in the database rather than in a process: every worker, on any machine,
    adds its observations to the same rows, and any web process reads them. A row
    holds the observations of one metric and kind that fell in (the previous
    bound, ``le``]: how many, and their seconds added up.
    """

    metric = models.CharField(max_length=64)
    kind = models.CharField(max_length=40)
    le = models.CharField(max_length=16)  # the bucket's upper bound as Prometheus writes it: "2.5", "+Inf"
    count = models.BigIntegerField(default=0)
    seconds = models.FloatField(default=0.0)

    class Meta:
        ordering = ["metric", "kind", "id"]
        constraints = [
            models.UniqueConstraint(fields=["metric", "kind", "le"], name="timing_bucket_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.metric}{{kind={self.kind}, le={self.le}}} = {self.count}"
class Team(models.Model):
    """A team on one benchmark. Its entrant (named as the team) is what boards, rounds,
    standings, stakes and comparison sets show; its members share one daily limit."""

    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="teams")
    entrant = models.OneToOneField(Entrant, on_delete=models.PROTECT, related_name="team")
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["benchmark_id", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.entrant.name} on {self.benchmark.slug}"


class TeamMembership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    # The team's benchmark, repeated so that the database itself keeps a user in one team per benchmark.
    benchmark = models.ForeignKey(Benchmark, on_delete=models.CASCADE, related_name="+")
    joined_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team_id", "joined_at", "id"]
        constraints = [
            # Two invites accepted at once: one insert wins, the other is an IntegrityError (409).
            models.UniqueConstraint(fields=["user", "benchmark"], name="team_membership_one_per_benchmark"),
        ]


class TeamInvite(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "pending"
        ACCEPTED = "accepted", "accepted"
        DECLINED = "declined", "declined"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invites")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_invites")
    invited_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    created_at = models.DateTimeField(default=timezone.now)
    answered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["team", "user"], condition=Q(status="pending"),
                                    name="team_invite_one_pending"),
        ]
        indexes = [
            # "Your pending invites": an invitee's rows by status.
            models.Index(fields=["user", "status"], name="team_invite_user_status"),
        ]


class TeamEvent(models.Model):
    """A team's audit log: created, invited, joined, merged (a member brought uploads made alone),
    declined, left."""

    class Kind(models.TextChoices):
        CREATED = "created", "created"
        INVITED = "invited", "invited"
        JOINED = "joined", "joined"
        MERGED = "merged", "merged"
        DECLINED = "declined", "declined"
        LEFT = "left", "left"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="events")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                             related_name="+")
    kind = models.CharField(max_length=10, choices=Kind.choices)
    detail = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team_id", "at", "id"]


# -- notifications (the outbox, webhooks, mail) ------------------------------------------

class NotificationEvent(models.Model):
    """The outbox: one row per event, written in the transaction that causes it and fanned out
    afterwards (``services/deliveries.py``) into webhook deliveries and mails.

    ``digest`` is the SHA-256 of what the event tells (a submission's status and scores, a round's
    version): a rescore that changes nothing finds the same digest on the subject's last event and
    writes none. ``dispatched_at`` stays empty until its deliveries exist (the sweep fans out any
    row a dead worker left).
    """

    class Kind(models.TextChoices):
        SUBMISSION_SCORED = "submission.scored", "a submission is scored"
        SUBMISSION_FAILED = "submission.failed", "a submission failed"
        ROUND_OPENED = "round.opened", "a round opens"
        ROUND_CLOSED = "round.closed", "a round closes"
        ROUND_INTERIM = "round.interim", "a round's interim scores"
        ROUND_RESOLVED = "round.resolved", "a round resolves"
        BENCHMARK_REVEALED = "benchmark.revealed", "a benchmark's private leaderboard is revealed"

    uid = models.UUIDField(default=uuid.uuid4, unique=True, editable=False)
    kind = models.CharField(max_length=30, choices=Kind.choices)
    benchmark = models.ForeignKey(Benchmark, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    round = models.ForeignKey(Round, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    submission = models.ForeignKey("Submission", null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    digest = models.CharField(max_length=64, blank=True)
    data = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    dispatched_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at", "id"]
        indexes = [
            # The dispatcher and the sweep: events not fanned out yet.
            models.Index(fields=["dispatched_at", "id"], name="notif_event_undispatched"),
            # "Did this submission's last event say the same?" (a rescore that changes nothing).
            models.Index(fields=["submission", "kind", "id"], name="notif_event_submission"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} #{self.pk}"


class NotificationPreference(models.Model):
    """A user's choice to be mailed (or not) for one kind of event; no row: the default
    (``services/notifications.py``, MAIL_DEFAULTS)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="notification_prefs")
    kind = models.CharField(max_length=30, choices=NotificationEvent.Kind.choices)
    email = models.BooleanField()
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["user_id", "kind", "id"]
        constraints = [models.UniqueConstraint(fields=["user", "kind"], name="notification_pref_unique")]


def _webhook_secret() -> str:
    return secrets.token_urlsafe(32)


class Webhook(models.Model):
    """A URL of a user's that receives signed POSTs for the events it names. Disabled (with a mail
    to its owner) once it has failed for WEBHOOK_DISABLE_AFTER_SECONDS without a success."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks")
    url = models.URLField(max_length=500)
    secret = models.CharField(max_length=200, default=_webhook_secret)
    events = models.JSONField(default=list)
    is_active = models.BooleanField(default=True)
    failing_since = models.DateTimeField(null=True, blank=True)
    disabled_at = models.DateTimeField(null=True, blank=True)
    disabled_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["user_id", "created_at", "id"]

    def __str__(self) -> str:
        return f"{self.url} ({self.user})"


class WebhookDelivery(models.Model):
    """One event for one webhook: unique, so a retried task or a second fan-out never sends twice.
    Attempts are recorded in WebhookAttempt; ``next_attempt_at`` is when the next is due."""

    class State(models.TextChoices):
        PENDING = "pending", "pending"
        DELIVERED = "delivered", "delivered"
        FAILED = "failed", "failed (no attempts left)"

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    event = models.ForeignKey(NotificationEvent, on_delete=models.CASCADE, related_name="+")
    state = models.CharField(max_length=10, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveSmallIntegerField(default=0)
    # No attempt past this one (WEBHOOK_MAX_ATTEMPTS; a redelivery grants as many again).
    attempt_limit = models.PositiveSmallIntegerField(default=8)
    next_attempt_at = models.DateTimeField(default=timezone.now)
    claim = models.CharField(max_length=32, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    delivered_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["webhook", "event"], name="webhook_delivery_unique")]
        indexes = [
            # The sweep: pending deliveries due now.
            models.Index(fields=["state", "next_attempt_at", "id"], name="webhook_delivery_due"),
        ]


class WebhookAttempt(models.Model):
    """One POST of a delivery: the answer's status (null when none came) or the error, and when."""

    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_rows")
    attempt = models.PositiveSmallIntegerField()
    status_code = models.PositiveSmallIntegerField(null=True, blank=True)
    ok = models.BooleanField(default=False)
    error = models.TextField(blank=True)
    at = models.DateTimeField(default=timezone.now)
    duration_ms = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-at", "-id"]
        constraints = [models.UniqueConstraint(fields=["delivery", "attempt"], name="webhook_attempt_unique")]


class MailDelivery(models.Model):
    """One event mailed to one user: unique, so a retried task never mails twice."""

    event = models.ForeignKey(NotificationEvent, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    claim = models.CharField(max_length=32, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    sent_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    attempts = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["event", "user"], name="mail_delivery_unique")]
        indexes = [
            # The sweep: mails not sent yet.
            models.Index(fields=["sent_at", "id"], name="mail_delivery_unsent"),
        ]
