"""Python client for the leaderboard server's HTTP API (and the ``lb`` command line).

    from leaderboard_client import Client
    client = Client("http://127.0.0.1:8000", "TOKEN")   # or LEADERBOARD_URL / LEADERBOARD_TOKEN
    receipt = client.submit("my-benchmark", "predictions.csv")
    print(client.wait(receipt.id).scores)
"""
__version__ = "0.1.0"

from leaderboard_client.client import Client
from leaderboard_client.errors import (
    ApiError,
    AuthenticationFailed,
    Conflict,
    DailyLimitReached,
    ErrorItem,
    InvalidRequest,
    LeaderboardError,
    NetworkError,
    NoOpenRound,
    NotFound,
    OutdatedClientWarning,
    PayloadTooLarge,
    PermissionDenied,
    RateLimited,
    ServerError,
    WaitTimeout,
)
from leaderboard_client.models import (
    AuditEntry,
    Benchmark,
    BenchmarkSummary,
    ComparisonRow,
    ComparisonSet,
    EntrantHistory,
    History,
    HistoryPoint,
    Invite,
    LeaderboardPage,
    LeaderboardRow,
    Me,
    Metric,
    Round,
    Submission,
    SubmissionPage,
    SubmissionReceipt,
    Team,
    TeamEvent,
    TruthVersion,
    VerifyResult,
)

__all__ = [
    "ApiError", "AuditEntry", "AuthenticationFailed", "Benchmark", "BenchmarkSummary", "Client", "ComparisonRow",
    "ComparisonSet", "Conflict", "DailyLimitReached", "EntrantHistory", "ErrorItem", "History", "HistoryPoint",
    "InvalidRequest", "Invite", "LeaderboardError", "LeaderboardPage", "LeaderboardRow", "Me", "Metric",
    "NetworkError", "NoOpenRound", "NotFound", "OutdatedClientWarning", "PayloadTooLarge", "PermissionDenied",
    "RateLimited", "Round", "ServerError", "Submission", "SubmissionPage", "SubmissionReceipt", "Team", "TeamEvent", "TruthVersion", "VerifyResult", "WaitTimeout", "__version__",
]
