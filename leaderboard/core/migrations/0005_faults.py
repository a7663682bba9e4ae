"""Outbox and heartbeat fields on submissions; entrant names unique ignoring case."""

import django.db.models.functions.text
from django.conf import settings
from django.db import migrations, models


def mark_existing_enqueued(apps, schema_editor):
    # Rows already waiting were handed to the broker by the code before this
    # migration; without this the sweep would publish them a second time.
    Submission = apps.get_model("core", "Submission")
    Submission.objects.filter(status__in=["queued", "scoring"]).update(enqueued_at=models.F("status_changed_at"))


class Migration(migrations.Migration):

    dependencies = [
        ('core', '0004_idempotency'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name='submission',
            name='enqueued_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='submission',
            name='heartbeat_at',
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.RunPython(mark_existing_enqueued, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name='entrant',
            constraint=models.UniqueConstraint(django.db.models.functions.text.Lower('name'), name='entrant_name_unique_ci'),
        ),
    ]
