"""Kind ``properties``: predict measured properties of antibodies (developability).

A benchmark is a fixed set of sequences, each with a published cross-validation
fold, optional public input columns (config ``inputs``, e.g. the heavy and light
chain sequences) and a split: ``dev`` sequences come with their measured values
(the training set participants download; never ranked), ``public`` ones rank the
public leaderboard and ``private`` ones rank after the reveal (which of the two
a test sequence is stays hidden). A submission is a CSV with exactly the columns
``sequence_id``, one per configured property and ``fold``: one row per test
sequence, and optionally rows for dev sequences (scored on the dev split, never
ranked). Per split, each property gets a Spearman correlation and, when marked
for it, a top-fraction recall; the ranking metric is
``score = w_spearman * mean Spearman + w_recall * mean recall``.

Upload validation is written for hostile input (see ``parse_submission``): the
cheap whole-file checks come first, the header is judged before any row, no
line longer than a valid row could be is ever split into fields, and checking
stops once the error list is full, so the work is bounded by the number of
cases and the error cap, not by what the file holds.
"""
from scoring.kinds.properties.kind import PropertiesKind

__all__ = ["PropertiesKind"]
