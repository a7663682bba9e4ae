from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("core", "0012_teams_and_verified_accounts"),
    ]

    operations = [
        migrations.AddField(
            model_name="submission",
            name="note",
            field=models.CharField(blank=True, default="", max_length=1000),
        ),
    ]
