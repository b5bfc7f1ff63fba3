"""The upload and submit forms: the API's own services and validation, errors shown next to the field.

Both forms post through HTMX, which sends the CSRF header, and get back the form itself: empty with a
note on success, or with each ``{code, message}`` beside the field it concerns.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse
from pydantic import ValidationError

from zootriage.app.api.deps import SessionDep, SettingsDep
from zootriage.app.db.models import Project
from zootriage.app.schemas.jobs import JobRequest
from zootriage.app.services import checkpoints as checkpoint_service
from zootriage.app.services import jobs as job_service
from zootriage.app.services import projects as project_service
from zootriage.app.services.errors import ServiceError
from zootriage.app.ui.session import check_write, page_caller
from zootriage.app.ui.templating import render
from zootriage.core.errors import ZooError

router = APIRouter(prefix="/ui")

# Where a validation error's location points in the form: the first path element that names a field.
_FIELD_OF = {"model": "model", "dataset": "dataset", "sampling": "per_class", "protocol": "n_t"}


class _FormError(Exception):
    """A field the form itself refuses before the request is validated, shown beside that field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field, self.message = field, message


def _model(form: dict[str, str]) -> dict[str, Any]:
    """The model fields as ``core.zoo.refs``' reference of the chosen source: a torchvision
    architecture is ``arch`` with its ``weights`` enum member (empty: ``DEFAULT``), a timm model its
    ``name`` (a pretrained tag goes in it, ``resnet50.a1_in1k``), an upload its ``path``."""
    source = form.get("model_source", "checkpoint")
    name, weights = form.get("model_name", "").strip(), form.get("weights", "").strip() or None
    if source == "torchvision":
        return {"source": source, "arch": name, "weights": weights}
    if source == "timm":
        if weights is not None:
            raise _FormError("model", "invalid_request: weights: a timm model takes its pretrained tag "
                                      "in its name (name.tag), not in the weights field")
        return {"source": source, "name": name}
    return {"source": source, "path": form.get("checkpoint", "").strip()}


def _job_body(form: dict[str, str]) -> dict[str, Any]:
    """The form's flat fields as the API's nested job request (numbers stay strings for pydantic); no
    split is the dataset's own (``builtin:digits`` has only ``all``)."""
    return {
        "model": _model(form),
        "dataset": {"source": "builtin", "name": form.get("dataset", "")},
        "sampling": {"per_class": form.get("per_class") or None, "split": form.get("split") or None},
        "protocol": {"n_t": form.get("n_t") or None, "seed": form.get("seed") or 0},
    }


def _field_errors(exc: ValidationError) -> dict[str, str]:
    errors: dict[str, str] = {}
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        field = loc[-1] if loc and loc[-1] in {"per_class", "n_t", "seed", "split"} else None
        field = field or (_FIELD_OF.get(loc[0], "form") if loc else "form")
        errors.setdefault(field, f"invalid_request: {'.'.join(loc)}: {err.get('msg', 'invalid')}")
    return errors


def _drop_empty(body: dict[str, Any]) -> dict[str, Any]:
    """An empty field means the default, as an absent JSON field does."""
    return {k: (_drop_empty(v) if isinstance(v, dict) else v) for k, v in body.items() if v is not None}


def _project(request: Request, session: SessionDep, settings: SettingsDep, name: str | None) -> Project:
    """The job's project, as ``POST /v1/jobs?project=`` takes it: one the caller's key may use (none
    named: the default project, which a key limited to others may not use)."""
    try:
        return project_service.project_for(session, page_caller(request, session, settings), name)
    except ServiceError as exc:
        raise _FormError("project", f"{exc.code}: {exc.message}") from None


@router.post("/jobs", response_class=HTMLResponse)
async def submit_form(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    form = {k: str(v) for k, v in (await request.form()).items()}
    errors: dict[str, str] = {}
    note = None
    try:
        check_write(request, session, settings)
        body = JobRequest.model_validate(_drop_empty(_job_body(form)))
        # the project as ``POST /v1/jobs?project=`` takes it: one the caller's key may use
        project = _project(request, session, settings, form.get("project") or None)
        submitted = job_service.submit(session, settings, body, None, project.id)
        if submitted.run is not None:
            note = f"already computed: run {submitted.run.id}"
        else:
            assert submitted.job is not None
            note = f"queued job {submitted.job.id}"
    except ValidationError as exc:
        errors = _field_errors(exc)
    except _FormError as exc:
        errors = {exc.field: exc.message}
    except (ServiceError, ZooError) as exc:
        errors = {"form": f"{exc.code}: {exc.message}"}
    # 200 even with errors: HTMX swaps only successful answers, and the form with its errors is the answer.
    context = {"form": form if errors else {}, "errors": errors, "note": note}
    return render(request, "submit_form.html", context)


@router.post("/checkpoints", response_class=HTMLResponse)
async def upload_form(request: Request, session: SessionDep, settings: SettingsDep) -> HTMLResponse:
    """The service ``POST /v1/checkpoints`` calls (streamed, bounded, validated), so the two cannot
    drift apart."""
    errors: dict[str, str] = {}
    stored = None
    try:
        check_write(request, session, settings)
        headers = request.headers
        accepted = await checkpoint_service.upload(
            session, settings, headers.get("content-type"), headers.get("content-length"), request.stream()
        )
        stored = accepted.checkpoint
    except (ServiceError, ZooError) as exc:
        errors = {"file": f"{exc.code}: {exc.message}"}
    return render(request, "upload_form.html", {"errors": errors, "checkpoint": stored})
