from typing import cast

from django import forms
from django.contrib.auth.forms import UserCreationForm
from django.contrib.auth.models import User


class SignupForm(UserCreationForm):
    email = forms.EmailField(required=False, max_length=254, help_text="Optional.")

    class Meta:
        model = User
        fields = ("username", "email")


class SubmitForm(forms.Form):
    file = forms.FileField(help_text="The submission file.")
    entrant = forms.ChoiceField(required=False)

    def __init__(self, *args, entrants=(), **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["entrant"]).choices = [(e.pk, e.name) for e in entrants]


class TokenForm(forms.Form):
    name = forms.CharField(max_length=80, required=False, help_text="A label, e.g. the machine that uses it.")


class EntrantForm(forms.Form):
    name = forms.CharField(max_length=80)
    description = forms.CharField(max_length=300, required=False)
