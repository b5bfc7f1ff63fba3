"""Checkpoint uploads: streamed, hashed, size-limited and validated before they are accepted."""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from fastapi.concurrency import run_in_threadpool
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from app.api.deps import SessionDep, SettingsDep, WriteAccess
from app.api.errors import ApiError, responses
from app.db.models import Checkpoint
from app.references import CANONICAL_SUFFIX, FORMATS, stored_path
from app.schemas.checkpoints import CheckpointOut
from app.services.checkpoints import check_fields, described, display_name, suffix_of, validate
from app.services.uploads import receive_file

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


def _stored(session: Session, sha256: str) -> Checkpoint | None:
    return session.get(Checkpoint, sha256)


def _again(existing: Checkpoint, upload: Checkpoint, response: Response) -> CheckpointOut:
    """The stored record when the re-upload says the same about it (200), else 409 naming it."""
    fields = ("library", "architecture", "filename", "name", "tags", "preprocess", "label_space")
    if all(getattr(existing, f) == getattr(upload, f) for f in fields):
        response.status_code = 200
        return _out(existing)
    stored = ", ".join(f"{f}={getattr(existing, f)!r}" for f in fields)
    raise ApiError(
        409, "checkpoint_exists",
        f"these bytes are already checkpoint {existing.sha256} with {stored}; use that id (the stored "
        "record keeps its fields)",
    )


def _out(row: Checkpoint) -> CheckpointOut:
    return CheckpointOut(
        id=row.sha256,
        model_path=row.sha256 + CANONICAL_SUFFIX[row.format],
        size_bytes=row.size_bytes,
        format=row.format,
        library=row.library,
        architecture=row.architecture,
        filename=row.filename,
        name=row.name,
        tags=row.tags,
        preprocess=row.preprocess,
        label_space=row.label_space,
        created_at=row.created_at,
    )


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

    The id is the content hash. Uploading the same bytes again with the same file name and fields
    answers 200 with the stored record; with other ones, 409 ``checkpoint_exists`` naming the stored
    record's fields, because the record (and so every job naming the id) keeps the first ones.
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
        suffix = suffix_of(received.filename)
        library = received.fields.get("library") or None
        architecture = received.fields.get("architecture") or None
        check_fields(library, architecture, suffix)
        given = described(received.fields)
        saved = await run_in_threadpool(validate, received, suffix)
        row = Checkpoint(
            sha256=received.sha256,
            size_bytes=received.size,
            format=FORMATS[suffix],
            library=library,
            architecture=saved.architecture or architecture,
            filename=display_name(received, suffix),
            name=given.name or saved.name,
            tags=given.tags,
            preprocess=given.preprocess,
            label_space=given.label_space,
        )
        existing = await run_in_threadpool(_stored, session, received.sha256)
        if existing is not None:
            return _again(existing, row, response)
        received.path.replace(stored_path(folder, received.sha256, CANONICAL_SUFFIX[FORMATS[suffix]]))
        session.add(row)
        try:
            await run_in_threadpool(session.commit)
        except IntegrityError:  # the same bytes uploaded concurrently: theirs won, same content
            await run_in_threadpool(session.rollback)
            winner = await run_in_threadpool(_stored, session, received.sha256)
            assert winner is not None, "an upload that lost a race is found under the winner's id"
            return _again(winner, row, response)
        return _out(row)
    finally:
        received.path.unlink(missing_ok=True)
