"""Output and input serializers of the API. Shapes only: no business rules here."""
from __future__ import annotations

from rest_framework import serializers


class ErrorItemSerializer(serializers.Serializer):
    row = serializers.IntegerField(allow_null=True)
    column = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class ErrorsSerializer(serializers.Serializer):
    detail = serializers.CharField()
    errors = ErrorItemSerializer(many=True)  # type: ignore[assignment]  # a field: DRF's metaclass takes it off the class


class RoundSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    title = serializers.CharField()
    status = serializers.CharField()
    opens_at = serializers.DateTimeField()
    closes_at = serializers.DateTimeField(allow_null=True)
    resolves_at = serializers.DateTimeField(allow_null=True)


class MetricSerializer(serializers.Serializer):
    name = serializers.CharField()
    label = serializers.CharField()  # type: ignore[assignment]  # a field: DRF's metaclass takes it off the class
    higher_is_better = serializers.BooleanField()


class BenchmarkListSerializer(serializers.Serializer):
    slug = serializers.SlugField()
    title = serializers.CharField()
    kind = serializers.CharField()
    url = serializers.CharField()
    daily_limit = serializers.IntegerField()


class BenchmarkListItemSerializer(BenchmarkListSerializer):
    current_round = RoundSerializer(allow_null=True, help_text="the newest round open with cases, or null")
    open_round = serializers.IntegerField(allow_null=True, help_text="the number of the round that takes "
                                                                     "submissions now (open, before its deadline), "
                                                                     "or null")


class BenchmarkDetailSerializer(BenchmarkListSerializer):
    description = serializers.CharField()
    credit = serializers.CharField(help_text="Where the data comes from and its licence (markdown, one line); "
                                             "empty when the bundle names none.")
    config = serializers.DictField()
    ranking_metric = serializers.CharField()
    metrics = MetricSerializer(many=True)
    current_round = RoundSerializer(allow_null=True)
    accepting_submissions = serializers.BooleanField()
    closes_at = serializers.DateTimeField(allow_null=True, help_text="The deadline of a static benchmark, if any.")
    closed_reason = serializers.CharField(allow_null=True, help_text="Why no submission is accepted now (when closed).")
    private_revealed = serializers.BooleanField()
    commitment = serializers.CharField(allow_null=True, help_text=(
        "a static benchmark, once closed: SHA-256 (hex) of the sorted lines entrant,audit_hash of every "
        "upload taken while it was open (not late, whatever its scoring status); null otherwise"))
    audit_url = serializers.CharField(allow_null=True, help_text=(
        "a static benchmark, once closed: the list the commitment covers (entrant, audit_hash, received_at)"))
    record_url = serializers.CharField(allow_null=True, help_text=(
        "a static benchmark, once revealed: its record (a zip lb verify-round rescores); null otherwise"))
    remaining_today = serializers.IntegerField(allow_null=True)
    format = serializers.CharField(help_text="Markdown describing the submission file.")


class LeaderboardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    entrant = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    metrics = serializers.DictField()
    submissions = serializers.IntegerField()
    submission_id = serializers.IntegerField()
    audit_hash = serializers.CharField()
    provisional = serializers.BooleanField()
    interval = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True,
                                     help_text="[low, high]: 95% bootstrap interval of score, resampling the split's cases; null when the kind "
                                               "gives none")
    rank_range = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2, allow_null=True,
                                       help_text="[best, worst]: the ranks this row could hold within the board's "
                                                 "intervals")
    updated_at = serializers.DateTimeField()


class LeaderboardSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    split = serializers.CharField()
    ranking_metric = serializers.CharField()
    count = serializers.IntegerField(help_text="rows on the whole board")
    next = serializers.URLField(allow_null=True, help_text="the next page, or null on the last")
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    rows = LeaderboardRowSerializer(many=True)


class StandingsRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField()
    entrant = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    metrics = serializers.DictField()
    rounds = serializers.IntegerField(help_text="resolved rounds the entrant took part in (within the window)")
    interval = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True,
                                     help_text="[low, high]: 95% bootstrap interval of score, resampling the entrant's rounds; null when the kind "
                                               "gives none")
    rank_range = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2, allow_null=True,
                                       help_text="[best, worst]: the ranks this row could hold within the board's "
                                                 "intervals")
    updated_at = serializers.DateTimeField()


class StandingsSerializer(serializers.Serializer):
    """A round benchmark's leaderboard: the standings across its resolved rounds."""

    benchmark = serializers.CharField()
    track = serializers.CharField()
    ranking_metric = serializers.CharField()
    count = serializers.IntegerField(help_text="rows on the whole board")
    next = serializers.URLField(allow_null=True, help_text="the next page, or null on the last")
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    rows = StandingsRowSerializer(many=True)


class PagingQuerySerializer(serializers.Serializer):
    page = serializers.IntegerField(min_value=1, max_value=1_000_000, required=False,
                                    help_text="page number, 1 to 1,000,000")
    page_size = serializers.IntegerField(min_value=1, max_value=1000, required=False,
                                         help_text="rows per page, 1 to 1,000 (default 100)")


class _SubmissionTargetSerializer(serializers.Serializer):
    entrant = serializers.CharField(required=False, help_text="Name or id of one of your entrants.")
    round = serializers.IntegerField(required=False, help_text="Round benchmarks: the open round to submit to "
                                                               "(needed only when several are open).")
    allocations = serializers.ListField(child=serializers.DictField(), required=False, help_text=(
        'portfolio (JSON body): [{"option", "percent"}], percents >= 0 summing to 100 within 0.01, cash included'))
    confidence = serializers.FloatField(required=False, min_value=0, max_value=1, help_text="portfolio: 0 to 1")
    rationale = serializers.CharField(required=False, help_text="portfolio: plain text, length capped")
    repeat = serializers.BooleanField(required=False, help_text="portfolio: a consistency run, never counted")
    note = serializers.CharField(required=False, max_length=1000,
                                 help_text="Your words about this upload, at most 1,000 characters; shown to you "
                                           "alone (the submission's `note`).")


class SubmissionFileSerializer(_SubmissionTargetSerializer):
    file = serializers.FileField(help_text="The submission file, in the benchmark's format (its `format`).")


class SubmissionJsonSerializer(_SubmissionTargetSerializer):
    predictions = serializers.ListField(child=serializers.DictField(), min_length=1,
                                        help_text="The predictions as JSON rows, in the benchmark's format.")


class VerifyFileSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="A submission file; only its dev cases are scored.")


class VerifyJsonSerializer(serializers.Serializer):
    predictions = serializers.ListField(child=serializers.DictField(), min_length=1,
                                        help_text="Prediction rows; only the dev cases are scored.")


class SubmissionAcceptedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    url = serializers.CharField()
    audit_hash = serializers.CharField()
    remaining_today = serializers.IntegerField()


class StandingSerializer(serializers.Serializer):
    split = serializers.CharField()
    listed = serializers.BooleanField(help_text="Whether this submission is the one its entrant's row shows.")
    reason = serializers.CharField(allow_null=True, help_text="Why not, when it is not.")


class SubmissionSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    benchmark = serializers.CharField()
    entrant = serializers.CharField()
    uploaded_by = serializers.CharField(help_text="The account that uploaded it (a team's members all see the team's).")
    status = serializers.CharField()
    status_reason = serializers.CharField()
    scores = serializers.DictField(help_text="split -> metric -> value")
    errors = serializers.ListField()  # type: ignore[assignment]  # a field: DRF's metaclass takes it off the class
    audit_hash = serializers.CharField()
    original_name = serializers.CharField()
    size = serializers.IntegerField()
    is_selected = serializers.BooleanField()
    note = serializers.CharField(allow_null=True, help_text="The uploader's note (empty when none was given); "
                                                           "null for anyone but the account that uploaded it.")
    late = serializers.BooleanField(help_text="received after the deadline of a benchmark that takes late submissions: scored, never ranked")
    provisional = serializers.BooleanField()
    truth_version = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    scored_at = serializers.DateTimeField(allow_null=True)
    leaderboard = StandingSerializer(many=True, required=False,
                                     help_text="One submission's answer only: per leaderboard split shown, "
                                               "listed or why not.")
    url = serializers.CharField(help_text="This submission in the API (the upload's answer names the same URL).")
    page_url = serializers.CharField(help_text="This submission's page in the browser.")


class SubmissionPageSerializer(serializers.Serializer):
    """The caller's submissions to a benchmark, one page: paged as the boards are."""

    benchmark = serializers.CharField()
    count = serializers.IntegerField(help_text="submissions on all pages")
    next = serializers.URLField(allow_null=True, help_text="the next page, or null on the last")
    previous = serializers.URLField(allow_null=True, help_text="the previous page, or null on the first")
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    rows = SubmissionSerializer(many=True)


class VerifySerializer(serializers.Serializer):
    metrics = serializers.DictField(help_text="cases_evaluated, exact_match_accuracy, directional_accuracy, "
                                              "close_accuracy, avg_confidence, mae (when scores were given)")
    results = serializers.ListField(child=serializers.DictField(), help_text="one row per dev case predicted")
    direction_confusion_matrix = serializers.DictField(help_text="rows = actual direction, columns = predicted")


class TruthVersionSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    interim = serializers.BooleanField()
    as_of = serializers.DateField(allow_null=True)
    scored = serializers.BooleanField()
    scoring_failed = serializers.BooleanField(
        required=False, help_text="scoring this version was given up after SCORING_MAX_ATTEMPTS attempts")


class AuditSerializer(serializers.Serializer):
    entrant = serializers.CharField()
    audit_hash = serializers.CharField()
    received_at = serializers.DateTimeField()


class CommittedListSerializer(serializers.Serializer):
    round = serializers.IntegerField()
    commitment = serializers.CharField()
    audit = AuditSerializer(many=True, help_text="every submission the commitment covers, by entrant and hash")


class RoundListItemSerializer(serializers.Serializer):
    number = serializers.IntegerField()
    status = serializers.CharField()
    track = serializers.CharField()
    opens_at = serializers.DateTimeField()
    closes_at = serializers.DateTimeField(allow_null=True)
    submissions = serializers.IntegerField()
    universe_size = serializers.IntegerField()
    url = serializers.CharField()


class RoundDetailSerializer(RoundListItemSerializer):
    universe_name = serializers.CharField()
    universe_sha256 = serializers.CharField()
    universe_url = serializers.CharField()
    truth_versions = TruthVersionSerializer(many=True)
    audit = AuditSerializer(many=True, allow_null=True, help_text="after close: the frozen submissions")
    commitment = serializers.CharField(allow_null=True, help_text=(
        "after close (published before any truth): SHA-256 (hex) of the sorted lines entrant,audit_hash of "
        "every counted submission, each ending in a newline; null while open"))
    record_url = serializers.CharField(allow_null=True, help_text=(
        "once resolved: the round's record, a zip lb verify-round rescores; null before"))
    notes = serializers.ListField(child=serializers.CharField())
    details = serializers.DictField(allow_null=True, help_text=(
        "what the kind shows beyond the board, or null. portfolio: options (option, start_price, index, cash); "
        "after close portfolios (entrant, audit_hash, received_at, confidence, rationale, rationale_summary, "
        "holdings [{option, percent}]) and consistency (entrant, runs, top_holding, same_top_share, mean_overlap)"))


class RoundOpenSerializer(serializers.Serializer):
    universe = serializers.FileField()
    closes_at = serializers.DateTimeField(required=False)
    track = serializers.CharField(required=False)


class RoundTruthSerializer(serializers.Serializer):
    file = serializers.FileField()
    interim = serializers.BooleanField(required=False, default=False)
    as_of = serializers.DateField(required=False)


class FileSerializer(serializers.Serializer):
    file = serializers.FileField()


class RoundBoardRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True, help_text="null while provisional for kinds that withhold "
                                                               "rank until the final truth (portfolio)")
    entrant = serializers.CharField()
    score = serializers.FloatField(allow_null=True)
    metrics = serializers.DictField()
    provisional = serializers.BooleanField()
    as_of = serializers.DateField(allow_null=True)
    audit_hash = serializers.CharField()
    interval = serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=2, allow_null=True,
                                     help_text="[low, high]: 95% bootstrap interval of score, resampling the round's ids; null when the kind "
                                               "gives none")
    rank_range = serializers.ListField(child=serializers.IntegerField(), min_length=2, max_length=2, allow_null=True,
                                       help_text="[best, worst]: the ranks this row could hold within the board's "
                                                 "intervals")
    updated_at = serializers.DateTimeField()


class RoundBoardSerializer(serializers.Serializer):
    round = serializers.IntegerField()
    ranking_metric = serializers.CharField()
    count = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    rows = RoundBoardRowSerializer(many=True)


class HistoryPointSerializer(serializers.Serializer):
    version = serializers.IntegerField()
    as_of = serializers.DateField(allow_null=True)
    interim = serializers.BooleanField()
    metrics = serializers.DictField()


class HistoryEntrantSerializer(serializers.Serializer):
    entrant = serializers.CharField()
    points = HistoryPointSerializer(many=True)


class HistorySerializer(serializers.Serializer):
    round = serializers.IntegerField()
    entrants = HistoryEntrantSerializer(many=True)


class ComparisonSetRowSerializer(serializers.Serializer):
    rank = serializers.IntegerField(allow_null=True, help_text="position within the set; null for a row without a "
                                                                "score (unranked, listed after the ranked rows)")
    entrant = serializers.CharField()
    score = serializers.FloatField(allow_null=True, help_text="min(100, 100 x return_sum / oracle_sum) "
                                                              "(CapitalBench's rule on the sums); null under a "
                                                              "zero oracle sum with a loss, or with no shared round")
    return_sum = serializers.FloatField(help_text="the entrant's returns over the set's rounds, added (not compounded)")
    interval = serializers.ListField(child=serializers.FloatField(), allow_null=True, required=False,
                                     help_text="[low, high]: 95% bootstrap interval of score, resampling the set's rounds")
    rank_range = serializers.ListField(child=serializers.IntegerField(), allow_null=True, required=False,
                                       help_text="[best, worst]: the ranks within the set this row could hold")
    oracle_sum = serializers.FloatField(help_text="the oracle returns of the set's rounds, added")


class ComparisonSetSerializer(serializers.Serializer):
    members = serializers.ListField(child=serializers.CharField(), help_text="in joining order")
    joined = serializers.ListField(child=serializers.CharField(), help_text="the entrants whose first round started "
                                                                            "this set")
    rounds = serializers.ListField(child=serializers.IntegerField(), help_text="the rounds every member completed")
    oracle_sum = serializers.FloatField()
    count = serializers.IntegerField(help_text="rows of this set (all pages)")
    rows = ComparisonSetRowSerializer(many=True)


class HistoryRowSerializer(serializers.Serializer):
    entrant = serializers.CharField()
    rounds = serializers.ListField(child=serializers.IntegerField())
    score = serializers.FloatField(allow_null=True)
    return_sum = serializers.FloatField()
    oracle_sum = serializers.FloatField()


class ComparisonSetsSerializer(serializers.Serializer):
    benchmark = serializers.CharField()
    track = serializers.CharField()
    updated_at = serializers.DateTimeField(allow_null=True)
    page = serializers.IntegerField()
    page_size = serializers.IntegerField()
    next = serializers.URLField(allow_null=True)
    sets = ComparisonSetSerializer(many=True)
    history = HistoryRowSerializer(many=True, help_text="all-available history: context, not the ranking")


class TeamEventSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["created", "invited", "joined", "merged", "declined", "left"])
    user = serializers.CharField(allow_null=True)
    detail = serializers.CharField()
    at = serializers.DateTimeField()


class PendingInviteSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField()
    created_at = serializers.DateTimeField()


class TeamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField(help_text="The team's entrant on the boards.")
    benchmark = serializers.SlugField()
    members = serializers.ListField(child=serializers.CharField(), help_text="Usernames, in joining order.")
    created_at = serializers.DateTimeField()
    invites = PendingInviteSerializer(many=True, required=False, help_text="Pending invites (members only).")
    events = TeamEventSerializer(many=True, required=False, help_text="The team's audit log (members only).")


class TeamCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=80)


class InviteCreateSerializer(serializers.Serializer):
    username = serializers.CharField(max_length=150)


class InviteCreatedSerializer(serializers.Serializer):
    id = serializers.IntegerField()


class InviteSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    team = serializers.CharField()
    team_id = serializers.IntegerField()
    benchmark = serializers.SlugField()
    invited_by = serializers.CharField(allow_null=True)
    created_at = serializers.DateTimeField()


class InviteDeclinedSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.ChoiceField(choices=["declined"])


class MeTeamSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    benchmark = serializers.SlugField()


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    is_staff = serializers.BooleanField()
    can_upload = serializers.BooleanField(help_text="False until the account's email address is verified")
    upload_refusal = serializers.CharField(allow_null=True, help_text="why not, when it may not upload")
    entrants = serializers.ListField(child=serializers.CharField(), help_text="the account's own entrants")
    teams = MeTeamSerializer(many=True, help_text="the teams it is in, one per benchmark at most")
