"""Checkpoint uploads: streamed, hashed, size-limited and validated before they are accepted."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool

from zootriage.app.api.deps import SessionDep, SettingsDep, WriteAccess
from zootriage.app.api.errors import ApiError, responses
from zootriage.app.schemas.checkpoints import CheckpointOut
from zootriage.app.services import checkpoints as checkpoint_service
from zootriage.app.services.uploads import receive_file
from zootriage.app.storage import upload_store

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
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > settings.upload_limit_bytes + 64 * 1024:
        raise ApiError(
            413, "payload_too_large", f"checkpoints are limited to {settings.upload_limit_bytes} bytes"
        )
    folder = settings.effective_upload_dir
    received = await receive_file(
        request.headers.get("content-type"), request.stream(), folder, settings.upload_limit_bytes
    )
    try:
        store = upload_store(settings)
        accepted = await run_in_threadpool(checkpoint_service.accept, session, store, received)
    finally:
        received.path.unlink(missing_ok=True)
    if not accepted.created:
        response.status_code = 200
    return accepted.checkpoint
