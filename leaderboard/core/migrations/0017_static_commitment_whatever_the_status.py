import hashlib

from django.db import migrations


def _commitment(pairs) -> str:
    lines = sorted(f"{name},{digest}" for name, digest in pairs)
    return hashlib.sha256("".join(line + "\n" for line in lines).encode()).hexdigest()


def recommit(apps, schema_editor):
    """A static benchmark's commitment now covers every upload taken while it was open (not late),
    whatever its scoring status: it used to leave out failed ones, so one that failed after the close
    (still queued then, or rescored when the cases changed) moved the list away from the commitment
    and its record no longer verified. A closed static round whose commitment is the old rule's over
    the uploads as they are now gets the new rule's (the same list, failed ones added); any other keeps
    its commitment as published."""
    Round = apps.get_model("core", "Round")
    Submission = apps.get_model("core", "Submission")
    for round_ in Round.objects.filter(is_permanent=True).exclude(status="open").exclude(commitment="").iterator():
        taken = Submission.objects.filter(round=round_, late=False)
        old = _commitment(taken.exclude(status="failed").values_list("entrant__name", "audit_hash"))
        new = _commitment(taken.values_list("entrant__name", "audit_hash"))
        if round_.commitment == old and new != old:
            round_.commitment = new
            round_.save(update_fields=["commitment"])


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0016_late_submissions"),
    ]

    operations = [
        migrations.RunPython(recommit, migrations.RunPython.noop),
    ]
