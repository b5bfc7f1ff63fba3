"""Commands that talk to a running zootriage service over HTTP: ``submit``, ``status``, ``recommend``,
``rank`` and ``gate`` (``history``, ``show``, ``gates`` and ``cancel`` are in ``app.cli.browse``).

They import httpx, typer, rich and pydantic only: references are parsed and checked by ``core.zoo.refs``
and ``core.data.refs``, which need no torch (a test keeps it so), and a local checkpoint is uploaded
as bytes.

The server and key come from ``--url``/``--api-key`` or ``ZOOTRIAGE_URL``/``ZOOTRIAGE_API_KEY``. Triage
commands wait: while the service answers 202 they follow its jobs with a progress bar, then ask again.
Exit codes are for CI: 0 success (a gate that passed), 1 a gate that failed, 2 a usage or service
error, printed as one line (never a traceback), 3 an inconclusive gate (no rule failed, but one could
not decide beyond the noise of the GLUE repeats: rerun with more ``--repeats`` or a looser rule).
"""

from __future__ import annotations

import json
import math
import re
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, NoReturn
from urllib.parse import quote

import httpx
import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table

from zootriage.app.cli.scoring_options import (
    NT,
    Classes,
    Dataset,
    PerClass,
    PointsPerClass,
    Repeats,
    Scoring,
    Seed,
    Split,
)
from zootriage.app.cli.terminal_text import TerminalConsole, escape

PASSED, FAILED, ERROR, INCONCLUSIVE = 0, 1, 2, 3
TERMINAL = {"succeeded", "failed", "cancelled"}
GATE_RESULT = {
    "passed": "[green]pass[/green]", "failed": "[red]FAIL[/red]", "inconclusive": "[yellow]?[/yellow]"
}
MODEL_HELP = (
    "tv:ARCH.WEIGHTS, timm:NAME[.TAG], tv:ARCH@FILE, timm:NAME@FILE, ckpt:FILE.pt2 (local files are uploaded)"
)

err = TerminalConsole(stderr=True)  # every string through terminal_safe (app.cli.terminal_text)
out = TerminalConsole()

Url = Annotated[str, typer.Option("--url", envvar="ZOOTRIAGE_URL", help="service URL")]
ApiKey = Annotated[str | None, typer.Option("--api-key", envvar="ZOOTRIAGE_API_KEY", help="write key")]
TriageRule = Annotated[
    str | None,
    typer.Option(
        "--rule",
        help="what 'better' means: geometry, id_accuracy, logme or a marker name "
        "(default: the server's, chosen by its pre-registered back-test)",
    ),
]
REQUEST_TIMEOUT_S = 120.0  # one request's longest wait for the service (a command's --timeout may be less)


def _seconds(value: float) -> float:
    if not math.isfinite(value) or value <= 0:
        raise typer.BadParameter(f"{value} is not a number of seconds above 0")
    return value


Timeout = Annotated[
    float, typer.Option(help="seconds to wait for the answer (each request too)", callback=_seconds)
]
AsJson = Annotated[bool, typer.Option("--json", help="print the answer as JSON")]
RunName = Annotated[str | None, typer.Option("--name", help="a name for the run")]
RunTags = Annotated[list[str] | None, typer.Option("--tag", help="key=value for the run, repeatable")]
ProjectOpt = Annotated[
    str | None,
    typer.Option(
        "--project", envvar="ZOOTRIAGE_PROJECT", help="the project to work in (default: the default project)"
    ),
]
DEFAULT_URL = "http://127.0.0.1:8000"


class ServiceError(Exception):
    """The service refused the request or could not be reached: exit 2 with this message."""


def _fail(message: str) -> NoReturn:
    err.print(f"[red]error[/red] {escape(message)}")
    raise typer.Exit(ERROR)


@contextmanager
def _errors_exit() -> Iterator[None]:
    """Every expected failure becomes one line on stderr and exit status 2."""
    from zootriage.core.errors import ZooError

    try:
        yield
    except ServiceError as exc:
        _fail(str(exc))
    except ZooError as exc:
        _fail(f"{exc.code}: {exc.message}")
    except (OSError, ValueError) as exc:
        _fail(str(exc))


def http_client(url: str, api_key: str | None, timeout: float = REQUEST_TIMEOUT_S) -> httpx.Client:
    """An HTTP client for the service at ``url`` (``--url``/``ZOOTRIAGE_URL``) with the key, each request
    waiting at most ``timeout`` seconds (and never more than ``REQUEST_TIMEOUT_S``); a URL that does not
    parse (``http://host:abc``) is a ``ServiceError``."""
    headers = {"X-API-Key": api_key} if api_key else {}
    try:
        return httpx.Client(
            base_url=url.rstrip("/"), headers=headers, timeout=min(timeout, REQUEST_TIMEOUT_S)
        )
    except httpx.InvalidURL as exc:
        raise ServiceError(f"--url {url!r} is not a URL ({exc})") from None


def unreachable(http: httpx.Client, exc: Exception) -> ServiceError:
    """A request that failed before any answer: the transport's error, or a URL that cannot be sent
    (``httpx.InvalidURL``, which is no ``httpx.HTTPError``: a path over 64 KiB, a bad host)."""
    if isinstance(exc, httpx.InvalidURL):
        return ServiceError(f"cannot send the request to {http.base_url}: {exc}")
    return ServiceError(f"cannot reach the service at {http.base_url}: {exc}")


class Client:
    """A thin HTTP client: every non-2xx answer raises ``ServiceError`` with the service's code."""

    def __init__(self, url: str, api_key: str | None, timeout: float = REQUEST_TIMEOUT_S) -> None:
        self.http = http_client(url, api_key, timeout)

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self.http.request(method, path, **kwargs)
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise unreachable(self.http, exc) from None
        if response.status_code >= 400:
            try:
                body = response.json()
                detail = f"{body['code']}: {body['message']}"
            except (ValueError, KeyError, TypeError):
                detail = response.text[:300]
            raise ServiceError(f"{method} {path} answered {response.status_code} ({detail})")
        return response

    def upload(self, path: Path, library: str | None, architecture: str | None) -> str:
        """Upload a local weights file as bytes alone; the service names it by content, so uploading
        it again is free whatever name it was first uploaded under. What a job says about it
        (preprocessing, label space, name, tags) goes on the job, not on the upload."""
        given = {"library": library, "architecture": architecture}
        fields = {k: v for k, v in given.items() if v}
        with path.open("rb") as handle:
            answer = self.call("POST", "/v1/checkpoints", files={"file": (path.name, handle)}, data=fields)
        return str(answer.json()["model_path"])


UPLOAD_ID = re.compile(r"^ckpt:([0-9a-f]{8,64})$")  # an upload id, or a unique prefix of it


def _preprocess(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ServiceError(f"--preprocess is not JSON ({exc})") from None


def model_json(
    client: Client, text: str, preprocess: str | None = None, label_space: str | None = None
) -> dict[str, Any]:
    """A model reference string as the API's JSON; a checkpoint naming a local file is uploaded first.
    ``preprocess`` (JSON) and ``label_space`` go into a checkpoint's reference, whether it names a
    local file or an upload id (``ckpt:<id>`` or ``ckpt:<id>.pt2``), so they are part of the job's
    request and of its run's key. ``run:ID`` names a stored run and ``alias:NAME`` the run an alias of
    the gate's project points to (gates only)."""
    from zootriage.core.zoo.refs import CheckpointRef, parse_model_ref, validate_model_ref

    given = {"preprocess": _preprocess(preprocess), "label_space": label_space}
    options = {k: v for k, v in given.items() if v is not None}
    if text.startswith("run:"):
        if options:
            raise ServiceError("--preprocess and --label-space do not apply to a stored run (run:ID)")
        return {"source": "run", "id": text.removeprefix("run:")}
    if text.startswith("alias:"):
        if options:
            raise ServiceError("--preprocess and --label-space do not apply to an alias (alias:NAME)")
        return {"source": "alias", "name": text.removeprefix("alias:")}
    bare = UPLOAD_ID.match(text)
    if bare and not Path(bare.group(1)).is_file():
        text += ".pt2"  # an upload's id as the service prints it: under ckpt: only a program stands alone
    ref = parse_model_ref(text)
    if options and not isinstance(ref, CheckpointRef):
        raise ServiceError(
            "--preprocess and --label-space apply to a checkpoint (ckpt:, tv:ARCH@FILE, timm:NAME@FILE): "
            "a library model uses its weights' own"
        )
    if isinstance(ref, CheckpointRef) and Path(ref.path).is_file():
        stored = client.upload(Path(ref.path), ref.library, ref.architecture)
        ref = ref.model_copy(update={"path": stored})
    if options:
        ref = validate_model_ref({**ref.model_dump(mode="json"), **options})
    return ref.model_dump(mode="json", exclude_none=True)


def segment(typed: str, what: str) -> str:
    """Text the user typed (an id, a project's or an alias's name, an architecture) as one URL path
    segment: escaped, so that no text can reach another route (``x/../prod``, ``?``, ``#``); ``what``
    names it in the error for a segment that would name no resource (empty, ``.``, ``..``)."""
    text = typed.strip()
    if text in ("", ".", ".."):
        raise ServiceError(f"{typed!r} is not {what}")
    return quote(text, safe="")


def id_path(typed: str) -> str:
    """An id as the user typed it (the full id or a prefix: the service resolves it), as one path
    segment (``segment``)."""
    return segment(typed, "an id")


def tag_map(tags: list[str] | None) -> dict[str, str]:
    """``--tag key=value`` options as the API's tags (the service checks the grammar)."""
    pairs = [text.partition("=") for text in tags or []]
    bad = [key for key, sep, _ in pairs if not sep]
    if bad:
        raise ServiceError(f"--tag {bad[0]!r}: expected key=value")
    return {key: value for key, _, value in pairs}


def _warn(label: str, warnings: list[str]) -> None:
    for warning in warnings:
        err.print(f"[yellow]warning[/yellow] {escape(label)}: {escape(warning)}")


class JobBars:
    """One live bar per job: stage, done/total, elapsed time (on stderr, so stdout stays parseable)."""

    def __init__(self) -> None:
        self.bars = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=err,
            transient=False,
        )
        self.tasks: dict[str, TaskID] = {}

    def show(self, job: dict[str, Any]) -> None:
        progress = job["progress"]
        # a bar's description is markup that no console's render_str sees: escape it here
        label = escape(f"{job['id'][:8]} {job['status']:<9} {progress['stage'] or '':<10}")
        total = max(progress["total"], 1)
        done = total if job["status"] == "succeeded" else progress["done"]
        if job["id"] not in self.tasks:
            self.tasks[job["id"]] = self.bars.add_task(label, total=total)
        self.bars.update(self.tasks[job["id"]], description=label, completed=done, total=total)


def follow(client: Client, job_ids: list[str], deadline: float, poll: float = 0.5) -> list[dict[str, Any]]:
    """Poll jobs until all finish; a failed or cancelled job is a service error naming its cause."""
    bars = JobBars()
    with bars.bars:
        while True:
            jobs = [client.call("GET", f"/v1/jobs/{job_id}").json() for job_id in job_ids]
            for job in jobs:
                bars.show(job)
            if all(job["status"] in TERMINAL for job in jobs):
                break
            if time.monotonic() > deadline:
                raise ServiceError(f"jobs {', '.join(job_ids)} did not finish in time")
            time.sleep(poll)
    for job in jobs:
        if job["status"] != "succeeded":
            cause = job["error"] or {"code": job["status"], "message": "the job was cancelled"}
            raise ServiceError(f"job {job['id']} {job['status']}: {cause['code']}: {cause['message']}")
    return jobs


def answered(client: Client, ask: Callable[[], httpx.Response], timeout: float) -> dict[str, Any]:
    """Ask, follow the jobs of a 202, ask again, until the service answers with the result."""
    deadline = time.monotonic() + timeout
    while True:
        response = ask()
        if response.status_code != 202:
            return dict(response.json())
        follow(client, [job["id"] for job in response.json()["jobs"]], deadline)


def project_params(project: str | None) -> dict[str, str]:
    """``?project=`` when a project is named (the server's default project otherwise)."""
    return {"project": project} if project else {}


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _print_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, indent=2) + "\n")


# --- commands ------------------------------------------------------------------------------------------


def submit(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    dataset: Dataset,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    classes: Classes = None,
    per_class: PerClass = None,
    split: Split = None,
    seed: Seed = None,
    n_t: NT = None,
    points_per_class: PointsPerClass = None,
    repeats: Repeats = None,
    name: RunName = None,
    tag: RunTags = None,
    preprocess: Annotated[
        str | None, typer.Option(help="Preprocess JSON for an uploaded .pt2 (overrides its own)")
    ] = None,
    label_space: Annotated[str | None, typer.Option(help="label space of an uploaded file")] = None,
    project: ProjectOpt = None,
    as_json: AsJson = False,
) -> None:
    """Queue a scoring job; prints the job id (or the run id when it was already computed)."""
    with _errors_exit():
        client = Client(url, api_key)
        scoring = Scoring(dataset, classes, per_class, split, seed, n_t, points_per_class, repeats)
        # Everything goes on the job: preprocessing and label space into its model (they change the
        # numbers, so its run), the name and tags onto its run.
        tags = tag_map(tag)
        body = {
            "model": model_json(client, model, preprocess, label_space),
            **scoring.body(),
            "name": name,
            "tags": tags,
        }
        answer = client.call("POST", "/v1/jobs", json=body, params=project_params(project))
        if answer.status_code == 200 and (name is not None or tags):
            answer = relabel(client, answer.json(), name, tags)
        if as_json:  # the run (200, already computed) or the queued job (202)
            _print_json(answer.json())
        elif answer.status_code == 200:
            run = answer.json()
            out.print(f"already computed: run {run['id']} ({escape(run['label'])})")
            _warn(run["label"], run["warnings"])
        else:
            out.print(f"queued: job {answer.json()['id']}")


def relabel(client: Client, run: dict[str, Any], name: str | None, tags: dict[str, str]) -> httpx.Response:
    """The stored run that answered a request, with the name and tags this request gives it (a name
    replaces its name, tags are set key by key): labels belong to the run, whoever computed it."""
    patch: dict[str, Any] = {"tags": tags, **({"name": name} if name is not None else {})}
    return client.call("PATCH", f"/v1/runs/{run['id']}", json=patch)


def status(
    job_id: Annotated[str, typer.Argument(help="job id, or its first 8 or more hex digits")],
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    watch: Annotated[bool, typer.Option("--watch/--no-watch", help="follow until it finishes")] = True,
    timeout: Timeout = 3600,
    as_json: AsJson = False,
) -> None:
    """Show a job's status, following its progress live until it finishes."""
    with _errors_exit():
        client = Client(url, api_key, timeout)
        if watch:
            job = follow(client, [id_path(job_id)], time.monotonic() + timeout)[0]
        else:
            job = client.call("GET", f"/v1/jobs/{id_path(job_id)}").json()
        if as_json:
            _print_json(job)
            return
        named = f" ({escape(job['name'])})" if job["name"] else ""
        ran = f", run {job['run_id']}" if job["run_id"] else ""
        out.print(f"job {job['id']}{named}: {job['status']}{ran}")
        if job["run_id"]:
            run = client.call("GET", f"/v1/runs/{job['run_id']}").json()
            tags = " ".join(f"{k}={v}" for k, v in run["tags"].items())
            tagged = f" \\[{escape(tags)}]" if tags else ""
            out.print(f"run {escape(run['label'])}: {escape(run['architecture'] or '-')}{tagged}")
            _warn(run["label"], run["warnings"])


def recommend(
    arch: Annotated[str, typer.Argument(help="torchvision architecture with v1/v2 weights")],
    dataset: Dataset,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    classes: Classes = None,
    per_class: PerClass = None,
    split: Split = None,
    seed: Seed = None,
    n_t: NT = None,
    points_per_class: PointsPerClass = None,
    repeats: Repeats = None,
    rule: TriageRule = None,
    project: ProjectOpt = None,
    timeout: Timeout = 3600,
    as_json: AsJson = False,
) -> None:
    """v1, v2 or undecided for ARCH by the rule (default: the server's, chosen by its back-test) beyond
    the noise, beside the ImageNet-accuracy pick and the back-test evidence for the rule."""
    with _errors_exit():
        client = Client(url, api_key, timeout)
        scoring = Scoring(dataset, classes, per_class, split, seed, n_t, points_per_class, repeats)
        query = {**scoring.query(), **({"rule": rule} if rule else {}), **project_params(project)}
        path = segment(arch, "an architecture")
        # POST queues the runs the verdict still needs (202 with their jobs), then answers it.
        answer = answered(
            client, lambda: client.call("POST", f"/v1/recommendations/{path}", params=query), timeout
        )
        if as_json:
            _print_json(answer)
            return
        table = Table("weights", "ImageNet acc@1", "dimension", "utilization", "id_accuracy")
        for side in ("v1", "v2"):
            weights = answer[side]
            markers = {name: stat["value"] for name, stat in weights["markers"].items()}
            table.add_row(
                weights["weights"],
                _fmt(weights["imagenet_acc1"]),
                *(_fmt(markers.get(n)) for n in ("dimension", "utilization", "id_accuracy")),
            )
        out.print(table)
        for side in ("v1", "v2"):
            _warn(answer[side]["label"], answer[side]["warnings"])
        out.print(f"verdict: [bold]{answer['verdict']}[/bold] ({escape(answer['reason'])})")
        out.print(
            f"ImageNet accuracy picks {answer['id_accuracy_pick']}; "
            f"picks agree: {_fmt(answer['picks_agree'])}"
        )
        _print_rule(answer["rule"])
        _print_advice(answer.get("advice"))


def _print_advice(advice: dict[str, Any] | None) -> None:
    """Every candidate rule's answer with its evidence, then the answer given and the rule followed
    (absent from servers older than the advice)."""
    if not advice:
        return
    table = Table("rule", "answer", "win rate", "95% interval", "pairs", "evidence")
    for a in advice["rules"]:
        ci = a["win_rate_ci"]
        table.add_row(
            escape(a["rule"]) + (" (followed)" if a["rule"] == advice["followed_rule"] else ""),
            escape(a["answer"]),
            f"{a['win_rate']:.0%}" if a["win_rate"] is not None else "no evidence",
            f"{ci[0]:.0%}–{ci[1]:.0%}" if ci else "-",
            _fmt(a["pairs"]),
            "validated" if a["validated"] else "exploratory",
        )
    out.print(table)
    out.print(f"answer: [bold]{escape(advice['summary'])}[/bold]")
    out.print(f"why: {escape(advice['why'])}")


def _print_rule(rule: dict[str, Any]) -> None:
    """The rule's evidence, and why it is the default when the request named none."""
    out.print(f"evidence: {escape(rule['evidence'])}")
    if rule.get("default_reason"):
        out.print(f"rule {escape(rule['name'])} is the server's default: {escape(rule['default_reason'])}")


def rank(
    candidates: Annotated[list[str], typer.Argument(help=MODEL_HELP)],
    dataset: Dataset,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    classes: Classes = None,
    per_class: PerClass = None,
    split: Split = None,
    seed: Seed = None,
    n_t: NT = None,
    points_per_class: PointsPerClass = None,
    repeats: Repeats = None,
    rule: TriageRule = None,
    project: ProjectOpt = None,
    timeout: Timeout = 3600,
    as_json: AsJson = False,
) -> None:
    """Rank candidate weights by the rule (default: the server's) beyond the noise, beside the ID-accuracy
    and LogME orders and the back-test evidence for the rule."""
    with _errors_exit():
        client = Client(url, api_key, timeout)
        scoring = Scoring(dataset, classes, per_class, split, seed, n_t, points_per_class, repeats)
        named = {"rule": rule} if rule else {}
        body = {"candidates": [model_json(client, c) for c in candidates], **scoring.body(), **named}
        where = project_params(project)
        ask = lambda: client.call("POST", "/v1/rankings", json=body, params=where)  # noqa: E731
        answer = answered(client, ask, timeout)
        if as_json:
            _print_json(answer)
            return
        table = Table("rank", "candidate", "dimension", "utilization", "acc rank", "LogME rank", "flag")
        for entry in answer["entries"]:
            markers = {name: stat["value"] for name, stat in entry["markers"].items()}
            flags = [
                name
                for name, on in (
                    ("≠acc", entry["disagrees_with_id_accuracy"]),
                    ("≠LogME", entry["disagrees_with_logme"]),
                )
                if on
            ]
            table.add_row(
                _fmt(entry["rank"]),
                escape(entry["label"]),
                _fmt(markers.get("dimension")),
                _fmt(markers.get("utilization")),
                _fmt(entry["id_accuracy_rank"]),
                _fmt(entry["logme_rank"]),
                " ".join(flags),
            )
        out.print(table)
        for entry in answer["entries"]:
            _warn(entry["label"], entry["warnings"])
        out.print(
            f"{escape(answer['rule']['name'])} picks {escape(_fmt(answer['pick']))} "
            f"({escape(answer['reason'])}); ID accuracy picks "
            f"{escape(_fmt(answer['id_accuracy_pick']))}; LogME picks {escape(_fmt(answer['logme_pick']))}"
        )
        _print_rule(answer["rule"])
        _print_advice(answer.get("advice"))


def gate(
    candidate: Annotated[str, typer.Option(help=MODEL_HELP)],
    baseline: Annotated[
        str,
        typer.Option(help=f"{MODEL_HELP}, run:ID of a stored run, or alias:NAME of the project's alias"),
    ],
    rule: Annotated[list[str], typer.Option(help="'metric: kind threshold', repeatable")],
    dataset: Dataset,
    url: Url = DEFAULT_URL,
    api_key: ApiKey = None,
    classes: Classes = None,
    per_class: PerClass = None,
    split: Split = None,
    seed: Seed = None,
    n_t: NT = None,
    points_per_class: PointsPerClass = None,
    repeats: Repeats = None,
    project: ProjectOpt = None,
    timeout: Timeout = 3600,
    as_json: AsJson = False,
) -> None:
    """Gate a candidate against a baseline: exit 0 when every rule passes, 1 when one fails, 3 when none
    fails but one is inconclusive (the noise is larger than a rule's margin), 2 on error. A stored run
    (run:ID) lends the gate its own sampling and protocol: options given must agree with them."""
    with _errors_exit():
        client = Client(url, api_key, timeout)
        # Only the options given: a stored run's own sampling and protocol stand where they are left out.
        scoring = Scoring(dataset, classes, per_class, split, seed, n_t, points_per_class, repeats)
        body = {
            "candidate": model_json(client, candidate),
            "baseline": model_json(client, baseline),
            "rules": rule,
            **scoring.body(),
        }
        where = project_params(project)
        answer = answered(client, lambda: client.call("POST", "/v1/gates", json=body, params=where), timeout)
    if as_json:
        _print_json(answer)
    else:
        table = Table("rule", "candidate", "baseline", "change", "result")
        for r in answer["rules"]:
            table.add_row(
                escape(r["rule"]),
                _fmt(r["candidate"]),
                _fmt(r["baseline"]),
                _fmt(r["change"]),
                GATE_RESULT[r["status"]],
            )
        out.print(table)
        sides = f"{escape(_fmt(answer['candidate_label']))} against {escape(_fmt(answer['baseline_label']))}"
        verdict = f"{answer['status'].upper()} ({escape(answer['noise_test'])})"
        out.print(f"gate {answer['id']}: {sides}: {verdict}")
        if answer.get("baseline_alias"):
            out.print(
                f"baseline: alias {escape(answer['baseline_alias'])} of project {escape(answer['project'])} "
                f"→ run {answer['baseline_run_id']}"
            )
        for line in dict.fromkeys(r["evidence"] for r in answer["rules"] if r.get("evidence")):
            out.print(f"evidence: {escape(line)}")
    for r in answer["rules"]:
        if r["status"] != "passed":
            err.print(f"[red]{r['status']}[/red] {escape(r['rule'])}: {escape(r['reason'])}")
    codes = {"passed": PASSED, "failed": FAILED, "inconclusive": INCONCLUSIVE}
    raise typer.Exit(codes[answer["status"]])


def register(app: typer.Typer) -> None:
    for command in (submit, status, recommend, rank, gate):
        app.command()(command)
