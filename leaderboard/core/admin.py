"""Organiser tools: every model, plus reveal, rescore and truth upload.

State changes go through the services, as the commands and the staff API do: a
submission's status only moves by rescoring (``submissions_requeue``), a round
opens with ``round_open`` (command or staff API, which validate its universe),
closes, reopens and resolves by the actions here (``round_set_status`` /
``round_close``) and moves its deadline through ``round_set_deadline``. Records the
services derive (scores, boards, events, quotas, truth versions, stakes) are shown,
never edited by hand.
"""
from __future__ import annotations

from typing import cast

from django import forms
from django.contrib import admin, messages
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import path, reverse
from django.utils.html import format_html

from scoring.errors import ValidationFailed
from scoring.kinds import get_kind

from leaderboard.core import models as m
from leaderboard.core.services.answers import SubmissionRejected
from leaderboard.core.services.benchmarks import (
    CONFIG_CHANGED,
    benchmark_rescore,
    benchmark_reveal,
    config_cases_refusal,
    config_change_refusal,
    config_changes_scores,
    truth_load,
)
from leaderboard.core.services.deid import cases_deidentify, deid_backend
from leaderboard.core.services.entrants import entrant_flag
from leaderboard.core.services.round_engine import round_close, round_truth_load, stakes_load
from leaderboard.core.services.rounds import (
    leaderboard_round,
    round_deadline_refusal,
    round_set_deadline,
    round_set_status,
)
from leaderboard.core.services.submissions import submissions_requeue


class TruthUploadForm(forms.Form):
    file = forms.FileField(help_text="The kind's cases file (e.g. cases.csv) with the truth columns.")
    note = forms.CharField(max_length=300, required=False, help_text="Why the truth changed (kept with the version).")
    round = forms.ModelChoiceField(queryset=m.Round.objects.none())

    def __init__(self, *args, benchmark=None, **kwargs):
        super().__init__(*args, **kwargs)
        rounds = cast(forms.ModelChoiceField, self.fields["round"])
        rounds.queryset = m.Round.objects.filter(benchmark=benchmark).order_by("-number")
        rounds.initial = rounds.queryset.first()


class RoundForm(forms.ModelForm):
    """A round in the admin: a static round's deadline cannot move once it has passed."""

    class Meta:
        model = m.Round
        fields = "__all__"  # noqa: DJ007 -- the admin passes the fields it shows (read-only ones left out)
        help_texts = {"closes_at": "When submissions stop (UTC). A static competition's round closes by itself "
                                   "at this time; once passed (or closed), it cannot move."}

    def clean_closes_at(self):
        closes_at = self.cleaned_data.get("closes_at")
        if self.instance.pk is not None:
            stored = m.Round.objects.select_related("benchmark").get(pk=self.instance.pk)
            # The page shows the deadline to the second; sent back as shown, it is not moved
            # (closing stamps it with the moment it closed, microseconds included).
            if closes_at is not None and stored.closes_at is not None \
                    and closes_at == stored.closes_at.replace(microsecond=0):
                return stored.closes_at
            refusal = round_deadline_refusal(stored, closes_at)
            if refusal is not None:
                raise forms.ValidationError(refusal)
        return closes_at


class BenchmarkForm(forms.ModelForm):
    """A benchmark in the admin: its kind is fixed, its config is checked by its kind, and a round
    benchmark's keys that decide scores are fixed once a round has truth (as ``load_benchmark`` refuses)."""

    class Meta:
        model = m.Benchmark
        fields = "__all__"  # noqa: DJ007 -- the admin passes the fields it shows

    def clean(self):
        cleaned = super().clean() or {}
        if "config" not in cleaned:
            return cleaned
        stored = m.Benchmark.objects.get(pk=self.instance.pk) if self.instance.pk is not None else None
        if stored is not None and cleaned.get("kind") not in (None, stored.kind):
            # As a bundle: its rounds, cases and scores are the old kind's (the pages could not read them).
            self.add_error("kind", f"benchmark {stored.slug!r} is of kind {stored.kind!r}; a benchmark cannot "
                                   "change its kind (load a new benchmark with another slug)")
            return cleaned
        try:
            kind = stored.kind_impl if stored is not None else get_kind(cleaned.get("kind") or "")
        except ValueError as exc:
            self.add_error("kind", str(exc))
            return cleaned
        try:
            config = kind.validate_config(cleaned["config"] or {})
        except ValidationFailed as exc:
            self.add_error("config", [e.message for e in exc.errors])
            return cleaned
        if stored is not None:
            refusal = config_change_refusal(stored, config, file=None) or config_cases_refusal(stored, config)
            if refusal:
                self.add_error("config", [f"{e.column}: {e.message}" if e.column else e.message for e in refusal])
                return cleaned
        cleaned["config"] = config
        return cleaned


class RoundStakesForm(forms.Form):
    stakes = forms.FileField(help_text="CSV entrant,stake (entrant names, stakes >= 0); signals rounds only.")


class RoundTruthForm(forms.Form):
    truth = forms.FileField(help_text="The kind's truth file (signals: id,target).")
    interim = forms.BooleanField(required=False, help_text="A dated snapshot whose scores are provisional.")
    as_of = forms.DateField(required=False, help_text="YYYY-MM-DD: the date an interim snapshot describes.")


class ShownNotEdited:
    """A model admin (or inline) that lists and shows its records and never adds or edits one:
    a service writes them."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


class RoundInline(ShownNotEdited, admin.TabularInline):
    """The benchmark's rounds, each linking to its own page; none is added or deleted here."""

    model = m.Round
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ("number", "title", "status", "is_permanent", "universe_size", "opens_at", "closes_at", "resolves_at")
    readonly_fields = fields


@admin.register(m.Benchmark)
class BenchmarkAdmin(admin.ModelAdmin):
    form = BenchmarkForm
    list_display = ("title", "slug", "kind", "daily_limit", "is_published", "private_revealed_at", "truth_link",
                    "fairplay_link")

    def save_model(self, request, obj, form, change):
        """Saved as edited; a static benchmark whose config changed is rescored, as a bundle's would be
        (a round benchmark's scoring keys cannot change once a round has truth: ``BenchmarkForm``)."""
        super().save_model(request, obj, form, change)
        if not change or "config" not in form.changed_data or obj.kind_impl.is_round_kind:
            return
        if config_changes_scores(obj.kind_impl, form.initial.get("config") or {}, obj.config):
            n = benchmark_rescore(benchmark=obj, reason=CONFIG_CHANGED)
            self.message_user(request, f"The config changed: {n} submission(s) queued for rescoring.")
        else:
            self.message_user(request, "The config changed in keys that decide no score: nothing to rescore.")
    list_filter = ("kind", "is_published")
    search_fields = ("slug", "title")
    prepopulated_fields = {"slug": ("title",)}
    inlines = [RoundInline]
    actions = ["reveal_private", "hide_private", "rescore", "deidentify"]

    @admin.display(description="truth")
    def truth_link(self, obj):
        return format_html('<a href="{}">upload truth</a>', reverse("admin:core_benchmark_truth", args=[obj.pk]))

    @admin.display(description="fair play")
    def fairplay_link(self, obj):
        return format_html('<a href="{}">fair-play report</a>', reverse("fairplay", args=[obj.slug]))

    @admin.action(description="Reveal the private leaderboard (only once submissions are closed)")
    def reveal_private(self, request, queryset):
        for b in queryset:
            try:
                benchmark_reveal(benchmark=b)
            except SubmissionRejected as exc:
                self.message_user(request, f"{b}: not revealed: {exc.errors[0].message}", messages.ERROR)
            else:
                self.message_user(request, f"{b}: revealed; ranking now uses the private split.")

    @admin.action(description="Hide the private leaderboard again")
    def hide_private(self, request, queryset):
        for b in queryset:
            benchmark_reveal(benchmark=b, reveal=False)
        self.message_user(request, "Private leaderboard hidden.")

    @admin.action(description="Rescore every submission")
    def rescore(self, request, queryset):
        n = sum(benchmark_rescore(benchmark=b) for b in queryset)
        self.message_user(request, f"{n} submission(s) queued for rescoring.")

    @admin.action(description="De-identify case texts (regex, model when configured, regex)")
    def deidentify(self, request, queryset):
        backend = deid_backend()
        for b in queryset:
            if not b.kind_impl.deidentify_text:
                self.message_user(request, f"{b}: kind {b.kind} has no texts to de-identify.", messages.WARNING)
                continue
            report = cases_deidentify(round_=leaderboard_round(b), backend=backend)
            self.message_user(request, f"{b}: {report.cases} cases de-identified, {report.with_model} with the model "
                                       f"stage, {report.regex_only} regex only"
                                       + ("" if backend else " (no model backend configured: DEID_LLM_URL)."))

    def get_urls(self):
        return [path("<int:pk>/truth/", self.admin_site.admin_view(self.truth_view), name="core_benchmark_truth"),
                *super().get_urls()]

    def truth_view(self, request, pk):
        benchmark = get_object_or_404(m.Benchmark, pk=pk)
        form = TruthUploadForm(request.POST or None, request.FILES or None, benchmark=benchmark)
        errors = []
        if request.method == "POST" and form.is_valid():
            upload = form.cleaned_data["file"]
            kind = benchmark.kind_impl
            name = upload.name if upload.name in kind.bundle_files else kind.bundle_files[0]
            try:
                bundle = kind.parse_bundle({name: upload.read()}, benchmark.config)
            except ValidationFailed as exc:
                errors = exc.errors
            else:
                version, changed, requeued = truth_load(
                    round_=form.cleaned_data["round"], cases=bundle.cases, truth=bundle.truth, user=request.user,
                    note=form.cleaned_data["note"] or f"uploaded {upload.name} in the admin")
                if changed:
                    self.message_user(request, f"Truth version {version} stored; {requeued} submission(s) queued "
                                               f"for rescoring.")
                else:
                    self.message_user(request, f"The truth is unchanged (still version {version}).", messages.WARNING)
                return redirect("admin:core_benchmark_change", benchmark.pk)
        return render(request, "admin/core/truth_upload.html", {
            **self.admin_site.each_context(request), "benchmark": benchmark, "form": form, "errors": errors,
            "title": f"Upload truth for {benchmark}", "opts": self.model._meta,
        })


@admin.register(m.Round)
class RoundAdmin(admin.ModelAdmin):
    """Rounds open with ``round_open`` (command or staff API), which validates the universe, or
    with ``load_benchmark`` (a static competition's round): none is added here. The status moves
    by the actions; the deadline through ``round_set_deadline``."""

    list_display = ("__str__", "benchmark", "number", "track", "status", "universe_size", "opens_at", "closes_at",
                    "resolves_at", "files_link")
    form = RoundForm
    list_filter = ("status", "benchmark")
    # The commitment is computed at close and published for anyone to check the round: never typed in.
    readonly_fields = ("benchmark", "number", "status", "is_permanent", "track", "status_changed_at", "data",
                       "commitment", "universe_file", "universe_name", "universe_sha256", "universe_size")
    exclude = ("universe",)  # shown as universe_file: uploads are not served under MEDIA_URL
    actions = ["close_rounds", "reopen_rounds", "resolve_rounds"]

    @admin.display(description="universe")
    def universe_file(self, obj):
        """The universe as the API serves it (the file as uploaded less any truth)."""
        if not obj.universe:
            return "–"
        return format_html('<a href="{}">{}</a>', reverse("api-round-universe", args=[obj.benchmark.slug, obj.number]),
                           obj.universe_name or "universe.csv")

    def has_add_permission(self, request):
        return False

    def save_model(self, request, obj, form, change):
        """The plain fields as edited; a new deadline through ``round_set_deadline`` (under the
        round's lock, refused for a closed competition: the form said why already)."""
        plain = [f for f in form.changed_data if f != "closes_at"]
        if plain:
            obj.save(update_fields=plain)
        if "closes_at" in form.changed_data:
            try:
                round_set_deadline(round_=obj, closes_at=form.cleaned_data["closes_at"])
            except SubmissionRejected as exc:
                self.message_user(request, f"{obj}: deadline not moved: {exc.errors[0].message}", messages.ERROR)

    def _move(self, request, queryset, status):
        for round_ in queryset:
            try:
                if status == m.Round.Status.CLOSED:
                    round_close(round_=round_)
                else:
                    round_set_status(round_=round_, status=status)
            except SubmissionRejected as exc:
                self.message_user(request, f"{round_}: {exc.errors[0].message}", messages.ERROR)
            else:
                self.message_user(request, f"{round_} is now {status}.")

    @admin.display(description="stakes and truth")
    def files_link(self, obj):
        if not obj.universe_size:
            return ""
        return format_html('<a href="{}">load stakes or truth</a>', reverse("admin:core_round_files", args=[obj.pk]))

    def get_urls(self):
        return [path("<int:pk>/files/", self.admin_site.admin_view(self.files_view), name="core_round_files"),
                *super().get_urls()]

    def files_view(self, request, pk):
        """Stakes and truth versions of a round kind's round, through the same services as the commands."""
        round_ = get_object_or_404(m.Round.objects.select_related("benchmark"), pk=pk)
        post = request.POST if request.method == "POST" else None
        files = request.FILES if request.method == "POST" else None
        action = request.POST.get("action", "")
        stakes_form = RoundStakesForm(post if action == "Load stakes" else None, files if action == "Load stakes" else None)
        truth_form = RoundTruthForm(post if action == "Load truth" else None, files if action == "Load truth" else None)
        errors = []
        try:
            if action == "Load stakes" and stakes_form.is_valid():
                upload = stakes_form.cleaned_data["stakes"]
                n = stakes_load(round_=round_, data=upload.read(), filename=upload.name)
                self.message_user(request, f"{round_}: {n} stakes stored.")
                return redirect("admin:core_round_changelist")
            if action == "Load truth" and truth_form.is_valid():
                upload = truth_form.cleaned_data["truth"]
                interim = truth_form.cleaned_data["interim"]
                version = round_truth_load(round_=round_, data=upload.read(), filename=upload.name, final=not interim,
                                           as_of=truth_form.cleaned_data["as_of"], user=request.user)
                self.message_user(request, f"{round_}: truth version {version.version} stored; the round is being "
                                           "scored.")
                return redirect("admin:core_round_changelist")
        except SubmissionRejected as exc:
            errors = exc.errors
        return render(request, "admin/core/round_files.html", {
            **self.admin_site.each_context(request), "round": round_, "stakes_form": stakes_form,
            "truth_form": truth_form, "errors": errors, "title": f"Stakes and truth of {round_}",
            "opts": self.model._meta,
        })

    @admin.action(description="Close: stop accepting submissions; freeze the counted ones")
    def close_rounds(self, request, queryset):
        self._move(request, queryset, m.Round.Status.CLOSED)

    @admin.action(description="Reopen")
    def reopen_rounds(self, request, queryset):
        self._move(request, queryset, m.Round.Status.OPEN)

    @admin.action(description="Resolve: final truth is in")
    def resolve_rounds(self, request, queryset):
        self._move(request, queryset, m.Round.Status.RESOLVED)


@admin.register(m.Case)
class CaseAdmin(admin.ModelAdmin):
    list_display = ("external_id", "round", "split", "redaction", "position")
    list_filter = ("split", "round__benchmark")
    search_fields = ("external_id",)
    list_select_related = ("round__benchmark",)
    readonly_fields = ("original_text", "redacted_text", "deid_log")
    actions = ["deidentify"]

    class Media:
        # Wrapped texts by class: the Content-Security-Policy allows no inline style.
        css = {"all": ("core/admin.css",)}

    @admin.display(description="redaction")
    def redaction(self, obj):
        return obj.public.get("redaction", "")

    @admin.display(description="original text (staff only)")
    def original_text(self, obj):
        return format_html('<pre class="wrapped">{}</pre>', obj.private.get("original_text", ""))

    @admin.display(description="what participants see")
    def redacted_text(self, obj):
        return format_html('<pre class="wrapped">{}</pre>', obj.public.get("text", ""))

    @admin.display(description="de-identification log")
    def deid_log(self, obj):
        deid = obj.private.get("deid") or {}
        lines = list(deid.get("log", []))
        lines += [f"[{r.get('stage')}] {r.get('original')!r} -> {r.get('token') or '(removed)'}"
                  for r in deid.get("replacements", [])]
        return format_html('<pre class="wrapped">{}</pre>', "\n".join(lines))

    @admin.action(description="De-identify the selected cases again")
    def deidentify(self, request, queryset):
        backend = deid_backend()
        by_round: dict[m.Round, list[str]] = {}
        for case in queryset.select_related("round"):
            by_round.setdefault(case.round, []).append(case.external_id)
        done = sum(cases_deidentify(round_=r, backend=backend, case_ids=ids).cases for r, ids in by_round.items())
        self.message_user(request, f"{done} case(s) de-identified"
                                   + ("" if backend else " with the regex stages only (no model backend configured)."))


@admin.register(m.TruthVersion)
class TruthVersionAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("round", "version", "is_final", "created_at", "created_by", "note")
    list_filter = ("is_final",)
    readonly_fields = ("sha256",)


@admin.register(m.TruthValue)
class TruthValueAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("truth_version", "case", "values")
    list_select_related = ("truth_version__round__benchmark", "case")
    raw_id_fields = ("truth_version", "case")


@admin.register(m.Entrant)
class EntrantAdmin(admin.ModelAdmin):
    list_display = ("name", "owner", "is_benchmark_model", "created_at")
    search_fields = ("name", "owner__username")
    list_filter = ("is_benchmark_model",)
    readonly_fields = ("is_benchmark_model",)
    actions = ["flag_benchmark_model", "unflag_benchmark_model"]

    def _flag(self, request, queryset, on: bool):
        for entrant in queryset:
            entrant_flag(name=entrant.name, benchmark_model=on)
        self.message_user(request, f"{queryset.count()} entrant(s) {'now' if on else 'no longer'} benchmark models.")

    @admin.action(description="Mark as benchmark models (they count in the benchmark meta model)")
    def flag_benchmark_model(self, request, queryset):
        self._flag(request, queryset, True)

    @admin.action(description="Unmark as benchmark models")
    def unflag_benchmark_model(self, request, queryset):
        self._flag(request, queryset, False)


@admin.register(m.Stake)
class StakeAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("entrant", "round", "amount")


class EventInline(ShownNotEdited, admin.TabularInline):
    model = m.SubmissionEvent
    extra = 0
    readonly_fields = ("status", "reason", "at")
    can_delete = False


@admin.register(m.Submission)
class SubmissionAdmin(ShownNotEdited, admin.ModelAdmin):
    """Submissions arrive by upload (``submission_create``) and change status only in
    ``submission_set_status``: shown here, rescored by the action, never edited."""

    list_display = ("id", "benchmark", "entrant", "user", "status", "received_at", "scored_at", "is_selected")
    list_filter = ("status", "benchmark")
    search_fields = ("entrant__name", "user__username", "audit_hash", "original_name")
    list_select_related = ("benchmark", "entrant", "user")
    readonly_fields = ("audit_hash", "size", "received_at", "started_at", "scored_at", "status_changed_at")
    exclude = ("note",)  # the uploader's own words: never shown to anyone else, staff included
    inlines = [EventInline]
    actions = ["rescore"]

    def has_delete_permission(self, request, obj=None):
        """Never deleted by hand: a closed round's published commitment lists every upload taken while it
        was open, its record and boards are built from them, and its entrant's row would go without
        another taking its place. (A participant who leaves is anonymised, their uploads kept.)"""
        return False

    @admin.action(description="Rescore the selected submissions")
    def rescore(self, request, queryset):
        n = submissions_requeue(queryset, reason="rescoring requested by an organiser")
        self.message_user(request, f"{n} submission(s) queued for rescoring.")


@admin.register(m.Score)
class ScoreAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("submission", "split", "metric", "value", "provisional", "truth_version")
    list_filter = ("split", "provisional", "metric")
    raw_id_fields = ("submission", "truth_version")


@admin.register(m.CaseResult)
class CaseResultAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("submission", "case", "split")
    raw_id_fields = ("submission", "case")


@admin.register(m.RoundScore)
class RoundScoreAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("submission", "truth_version", "provisional", "as_of", "computed_at")
    list_filter = ("provisional",)
    raw_id_fields = ("submission", "truth_version")


@admin.register(m.StandingRow)
class StandingRowAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("benchmark", "track", "entrant", "score", "rounds", "updated_at")
    list_filter = ("benchmark", "track")
    list_select_related = ("benchmark", "entrant")


@admin.register(m.LeaderboardRow)
class LeaderboardRowAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("round", "split", "entrant", "score", "submissions_count", "provisional", "updated_at")
    list_filter = ("split", "round__benchmark")
    list_select_related = ("round__benchmark", "entrant")


@admin.register(m.DailyQuota)
class DailyQuotaAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("user", "team", "benchmark", "day", "used")
    list_filter = ("day",)


class TeamMembershipInline(ShownNotEdited, admin.TabularInline):
    model = m.TeamMembership
    extra = 0
    can_delete = False
    fields = ("user", "joined_at")
    readonly_fields = fields


class TeamInviteInline(ShownNotEdited, admin.TabularInline):
    model = m.TeamInvite
    extra = 0
    can_delete = False
    fields = ("user", "invited_by", "status", "created_at", "answered_at")
    readonly_fields = fields


class TeamEventInline(ShownNotEdited, admin.TabularInline):
    model = m.TeamEvent
    extra = 0
    can_delete = False
    fields = ("at", "kind", "user", "detail")
    readonly_fields = fields


@admin.register(m.Team)
class TeamAdmin(ShownNotEdited, admin.ModelAdmin):
    """Teams with their members, invites and audit log; participants form them (pages, API, client)."""

    list_display = ("entrant", "benchmark", "member_count", "created_by", "created_at")
    list_filter = ("benchmark",)
    search_fields = ("entrant__name", "memberships__user__username")
    inlines = [TeamMembershipInline, TeamInviteInline, TeamEventInline]

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("entrant", "benchmark", "created_by").annotate(
            members=Count("memberships"))

    @admin.display(description="members", ordering="members")
    def member_count(self, obj):
        return obj.members


@admin.register(m.TeamEvent)
class TeamEventAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("at", "team", "kind", "user", "detail")
    list_filter = ("kind",)
    search_fields = ("team__entrant__name", "user__username")


@admin.register(m.ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("prefix", "user", "name", "created_at", "last_used_at")
    readonly_fields = ("key_hash", "prefix")


@admin.register(m.SubmissionEvent)
class SubmissionEventAdmin(ShownNotEdited, admin.ModelAdmin):
    list_display = ("submission", "status", "at", "reason")
    list_filter = ("status",)
