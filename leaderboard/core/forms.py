from typing import cast

from django import forms
from django.core import validators


class SubmitForm(forms.Form):
    file = forms.FileField(help_text="The submission file.")
    entrant = forms.ChoiceField(required=False)
    # A round benchmark with several rounds open (a weekly and a monthly portfolio round): the round's
    # number, as the API's ``round`` field. Checked by the upload service, which words a refusal.
    round = forms.CharField(required=False, max_length=20)
    note = forms.CharField(required=False, label="Note (only you see it)", widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, entrants=(), note_max_chars: int, **kwargs):
        """``note_max_chars``: the model's cap (``models.NOTE_MAX_CHARS``), which this layer may not import."""
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["entrant"]).choices = [(e.pk, e.name) for e in entrants]
        note = cast(forms.CharField, self.fields["note"])
        note.max_length = note_max_chars
        note.validators.append(validators.MaxLengthValidator(note_max_chars))
        note.widget.attrs["maxlength"] = str(note_max_chars)
        note.help_text = (f"What this upload is, in your words, at most {note_max_chars:,} characters: shown on "
                          "your pages and in the API to you alone.")


class TokenForm(forms.Form):
    name = forms.CharField(max_length=80, required=False, help_text="A label, e.g. the machine that uses it.")


class EntrantForm(forms.Form):
    name = forms.CharField(max_length=80)
    description = forms.CharField(max_length=300, required=False)


class TeamForm(forms.Form):
    name = forms.CharField(max_length=80, label="Team name", help_text="Shown on the boards as the team's entrant.")


class InviteForm(forms.Form):
    username = forms.CharField(max_length=150, label="Username to invite")


class AccountDeleteForm(forms.Form):
    password = forms.CharField(widget=forms.PasswordInput, label="Your password",
                               help_text="To be sure it is you.")

    def __init__(self, *args, user=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.user = user

    def clean_password(self):
        password = self.cleaned_data["password"]
        if self.user is None or not self.user.check_password(password):
            raise forms.ValidationError("That is not your password.")
        return password
