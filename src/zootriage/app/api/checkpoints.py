"""Checkpoint uploads: streamed, hashed, size-limited and validated before they are accepted; listed
newest first, and found by their id or a unique prefix of it."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response

from zootriage.app.api.cursor import Cursor, PageLimit, decode_cursor, encode_cursor
from zootriage.app.api.deps import CallerDep, SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import responses
from zootriage.app.api.ids import UploadId
from zootriage.app.db.paging import CREATED
from zootriage.app.schemas.checkpoints import CheckpointOut, CheckpointPage
from zootriage.app.services import checkpoints as checkpoint_service
from zootriage.app.services import projects as project_service

router = APIRouter(prefix="/v1/checkpoints", tags=["checkpoints"])

_UPLOAD_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "library": {"type": "string", "enum": ["torchvision", "timm"]},
                        "architecture": {
                            "type": "string",
                            "maxLength": 128,
                            "description": "a state_dict's library architecture (with library); for a "
                            ".pt2, a free description its zootriage.json overrides",
                        },
                        "name": {"type": "string", "maxLength": 128, "description": "printable text"},
                        "tags": {
                            "type": "string",
                            "description": "key=value,key=value (at most 16; keys a-z0-9_.-, values "
                            "A-Za-z0-9_.:/+@-)",
                            "example": "team=vision,stage=candidate",
                        },
                        "preprocess": {
                            "type": "string",
                            "description": "JSON of core.zoo.preprocess.Preprocess; overrides the "
                            "file's zootriage.json",
                            "example": '{"channels": 1, "crop": [28, 28], "resize": null, '
                            '"mean": [0.1307], "std": [0.3081]}',
                        },
                        "label_space": {
                            "type": "string",
                            "description": "what the logits index (imagenet-1k, digits, ...); overrides "
                            "the file's",
                        },
                    },
                }
            }
        },
    }
}


@router.post(
    "",
    status_code=201,
    response_model=CheckpointOut,
    openapi_extra=_UPLOAD_BODY,
    responses=responses(401, 409, 413, 415, 422, 507),
)
async def upload_checkpoint(
    request: Request, response: Response, session: SessionDep, settings: SettingsDep, _: WriteAccess
) -> CheckpointOut:
    """Accept a weights file: a ``.pt2`` torch.export program, or a state_dict (``.safetensors``,
    ``.pt``/``.pth``/``.bin``) for ``library`` + ``architecture`` when they are given. Only the
    static allow-list check runs here; loading happens in a job, in the worker's isolated child.

    The client's file name is kept (``filename``); ``name`` and ``tags`` label the checkpoint, and
    every job on it that gives none of its own, in the history and in rankings and gates.

    **Onboarding a torch.export program.** A program holds its graph and weights but not how images
    are prepared for it or what its logits mean. Save them beside it as the extra file
    ``zootriage.json`` (``zootriage export`` does this)::

        torch.export.save(program, "net.pt2", extra_files={"zootriage.json": json.dumps({
            "preprocess": {"channels": 1, "crop": [28, 28], "resize": None,
                           "mean": [0.1307], "std": [0.3081]},
            "label_space": "digits", "architecture": "MNISTNet", "name": "mnist v3"})})

    ``preprocess`` has the fields of ``core.zoo.preprocess.Preprocess`` (channels, crop, resize,
    interpolation, mean, std, antialias). The form fields ``preprocess`` (the same JSON) and
    ``label_space`` override the file's. With neither, pixels are only scaled to [0, 1] at the
    program's input size and every run on it carries a warning saying so.

    The id is the content hash. Uploading the same bytes again answers 200 with the stored record,
    whatever file name, name or tags it gives: those label jobs and runs, so give them on the job
    (``name``, ``tags``; ``PATCH /v1/runs/{id}`` relabels a run). Only a ``preprocess`` or
    ``label_space`` other than the stored one is refused (409 ``checkpoint_exists``): jobs on the id
    that give none inherit the stored ones, so give yours on the job's model instead.
    """
    headers = request.headers
    accepted = await checkpoint_service.upload(
        session, settings, headers.get("content-type"), headers.get("content-length"), request.stream()
    )
    if not accepted.created:
        response.status_code = 200
    return accepted.checkpoint


def upload_key_of(text: str) -> str:
    """An upload's id in a page token: its 64 lower-case hex digits (a ``ValueError`` otherwise)."""
    if len(text) != 64 or text.strip("0123456789abcdef"):
        raise ValueError("not an upload id")
    return text


@router.get("", response_model=CheckpointPage, responses=responses(403, 422))
def get_checkpoints(
    session: SessionDep,
    settings: SettingsDep,
    caller: CallerDep,
    limit: PageLimit = 50,
    cursor: Cursor = None,
) -> CheckpointPage:
    """Uploads, newest first (403 for a key limited to projects: uploads belong to none)."""
    project_service.check_uploads_visible(caller)
    after = decode_cursor(cursor, CREATED, True, upload_key_of) if cursor else None
    items, next_key = checkpoint_service.checkpoint_page(session, min(limit, settings.page_size_max), after)
    return CheckpointPage(
        items=items, next_cursor=encode_cursor(next_key, CREATED, True) if next_key else None
    )


@router.get("/{upload_id}", response_model=CheckpointOut, responses=responses(403, 404, 409, 422))
def get_checkpoint(upload_id: UploadId, session: SessionDep, caller: CallerDep) -> CheckpointOut:
    """One upload, by its id or a unique prefix of it."""
    project_service.check_uploads_visible(caller)
    return checkpoint_service.find_checkpoint(session, upload_id)
