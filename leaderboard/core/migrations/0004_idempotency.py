"""Submissions remember the client's Idempotency-Key, unique per user."""
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0003_integrity"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="idempotency_key",
            field=models.CharField(blank=True, max_length=128, null=True),
        ),
        migrations.AddField(
            model_name="submission",
            name="idempotency_fingerprint",
            field=models.CharField(blank=True, max_length=64),
        ),
        migrations.AddConstraint(
            model_name="submission",
            constraint=models.UniqueConstraint(
                condition=models.Q(("idempotency_key__isnull", False)),
                fields=("user", "idempotency_key"),
                name="submission_idempotency_key_unique",
            ),
        ),
    ]
